-- Keeps a lock's fencing counter at least ARGV[1] ms from now; never shortens it. A counter
-- that is gone stays gone: the next grant re-seeds it from the server's clock.
-- KEYS[1] fencing counter   ARGV[1] ms
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
