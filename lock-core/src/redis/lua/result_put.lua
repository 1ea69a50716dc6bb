-- Stores an entry if the rule lets it replace the one there, then pushes it to every waiting
-- process. FENCE_FIRST / FENCE_LAST (1-based, the fence's place in an encoded entry), KIND_AT
-- and FINAL_KIND are set by the script's first line.
-- KEYS[1] entry   KEYS[2] watchers
-- ARGV[1] fence, as encoded   ARGV[2] entry   ARGV[3] keep ms   ARGV[4] push channel prefix
-- ARGV[5] the key, for the receivers   ARGV[6] rule: 'older' or 'same'
-- Returns 1 when stored, 0 when the entry there is kept (final, or of a newer claim).
local current = redis.call('GET', KEYS[1])
if current then
  if string.sub(current, KIND_AT, KIND_AT) == FINAL_KIND then
    return 0
  end
  local there = string.sub(current, FENCE_FIRST, FENCE_LAST)
  if there > ARGV[1] or (there == ARGV[1] and ARGV[6] ~= 'same') then
    return 0
  end
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
