-- Passes a wake-up on: when a woken waiter is gone (cancelled) and the lock is free, wakes the
-- next one. (wake_next is prepended from wake_next.lua.)
-- KEYS[1] lock hash   KEYS[2] waiter queue   ARGV[1] wake channel route (publish_wake.lua)
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
wake_next(KEYS[1], KEYS[2], ARGV[1])
return 1
