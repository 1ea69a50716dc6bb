-- Publishes a wake-up to `client` about the lock (or primitive, or latch) whose key is `key`,
-- and returns how many subscribers received it (0: the client is gone). `route` is the wake
-- channel argument the backend sends: 'P<prefix>' on one server, where every client has one
-- channel (PUBLISH <prefix><client>); 'S<prefix>' on a Redis Cluster, where the channel is the
-- client's for this key's hash tag (SPUBLISH <prefix><client>:{tag}): it lives in the key's own
-- slot, on the node that runs the script, and the count is that node's subscribers, which
-- the client made itself one of (SSUBSCRIBE) before it queued.
local function publish_wake(route, client, key, message)
  local prefix = string.sub(route, 2)
  if string.sub(route, 1, 1) == 'S' then
    local tag = string.match(key, '{[^}]*}') or ''
    return redis.call('SPUBLISH', prefix .. client .. ':' .. tag, message)
  end
  return redis.call('PUBLISH', prefix .. client, message)
end
