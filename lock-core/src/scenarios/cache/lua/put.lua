-- Stores an entry unless the one there has the same or a larger fencing token, then pushes it
-- to every waiting process. FENCE_FIRST / FENCE_LAST (1-based, the fence's place in an encoded
-- entry) are set by the script's first line.
-- KEYS[1] entry   KEYS[2] watchers
-- ARGV[1] fence, as encoded   ARGV[2] entry   ARGV[3] keep ms   ARGV[4] push channel prefix
-- ARGV[5] the key, for the receivers
-- Returns 1 when stored, 0 when a newer (or the same) computation's entry is there.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, FENCE_FIRST, FENCE_LAST) >= ARGV[1] then
  return 0
end
-- A keep of 0 is a pass (a value that must not be shared): pushed, never stored.
if ARGV[3] ~= '0' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
local message = string.len(ARGV[5]) .. ' ' .. ARGV[5] .. ARGV[2]
for _, client in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('PUBLISH', ARGV[4] .. client, message)
end
redis.call('DEL', KEYS[2])
return 1
