-- Confirms a lease is still held by this owner and grant; with a lease length, also renews it.
-- KEYS[1] lock
-- ARGV[1] "<owner>:<fence>" (the value's part before its holder record, as release.lua's)
-- ARGV[2] lease ms, or '0' to only check
-- Returns 1 when held by this owner, 0 otherwise.
local current = redis.call('GET', KEYS[1])
if not current or (current ~= ARGV[1]
    and string.sub(current, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|') then
  return 0
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
