-- Raises a lock's fencing counter on one RedLock node to at least ARGV[1] (a token's counter
-- part that a quorum of nodes must have reached before the token is handed out), and keeps it
-- at least ARGV[2] ms from now. Never lowers a counter or shortens its life.
-- KEYS[1] fencing counter   ARGV[1] counter   ARGV[2] retention ms
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
