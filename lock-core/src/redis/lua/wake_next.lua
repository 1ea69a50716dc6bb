-- Wakes exactly one live waiter of a lock: pops waiters in arrival order and publishes to
-- each one's client channel until a publish reaches a subscriber. Waiters whose process is
-- gone (PUBLISH counts 0 receivers) are skipped, so a crashed waiter cannot swallow a wake-up.
-- Waiter ids are "<client id>:<sequence>"; client ids contain no ':'. `route` is the wake
-- channel argument (see publish_wake.lua, prepended).
local function wake_next(lock_key, waiters_key, route)
  while true do
    local popped = redis.call('ZPOPMIN', waiters_key)
    if #popped == 0 then
      return
    end
    local id = popped[1]
    local client = string.match(id, '^([^:]+):')
    if client and publish_wake(route, client, lock_key, id .. '\n' .. lock_key) > 0 then
      return
    end
  end
end
