-- Starts a count-down latch unless one is running.
-- KEYS[1] latch count (string, expiring)   ARGV[1] count   ARGV[2] expiry ms
-- Returns 1 when set, 0 when a latch with a count above zero exists.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
return 0
