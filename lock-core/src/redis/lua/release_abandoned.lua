-- Releases whatever lease an abandoned acquisition won under its owner token (whatever its
-- fence), then wakes one waiter. (wake_next is prepended from wake_next.lua.)
-- KEYS[1] lock   KEYS[2] waiter queue
-- ARGV[1] owner token (32 hex digits)   ARGV[2] wake channel route (publish_wake.lua)
-- Returns 1 when a lease under this token was released, 0 when there was none.
local current = redis.call('GET', KEYS[1])
if not current or string.sub(current, 1, 33) ~= ARGV[1] .. ':' then
  return 0
end
redis.call('DEL', KEYS[1])
wake_next(KEYS[1], KEYS[2], ARGV[2])
return 1
