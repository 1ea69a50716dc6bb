-- Confirms a lease is still held by this owner and grant; with a lease length, also renews it.
-- KEYS[1] lock hash
-- ARGV[1] owner token   ARGV[2] fence   ARGV[3] lease ms, or '0' to only check
-- Returns 1 when held by this owner, 0 otherwise.
local current = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if current[1] ~= ARGV[1] or tonumber(current[2]) ~= tonumber(ARGV[2]) then
  return 0
end
if ARGV[3] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
