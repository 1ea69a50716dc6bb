-- Counts a latch down by one; at zero deletes it and pushes a wake-up to every waiter.
-- KEYS[1] latch count   KEYS[2] waiters (zset of waiter ids "<client id>:<seq>")
-- ARGV[1] wake channel route (see publish_wake.lua, prepended)
-- Returns the count left (0 when it opened, or was not running).
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('DECR', KEYS[1])
if left > 0 then
  return left
end
redis.call('DEL', KEYS[1])
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local client = string.match(id, '^([^:]+):')
  if client then
    publish_wake(ARGV[1], client, KEYS[1], id .. '\n' .. KEYS[1] .. '\nl')
  end
end
redis.call('DEL', KEYS[2])
return 0
