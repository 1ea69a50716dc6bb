-- Confirms a lease is still held by this owner and grant; with a lease length, also renews it.
-- KEYS[1] lock   KEYS[2] holder record (acquire.lua's KEYS[4]), kept as long as the lease
-- ARGV[1] "<owner>:<fence>"   ARGV[2] lease ms, or '0' to only check
-- Returns 1 when held by this owner, 0 otherwise.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
