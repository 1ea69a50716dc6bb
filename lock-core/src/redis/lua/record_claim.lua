-- Reads an idempotency record and, unless it settles the request, takes the key's lease and
-- marks the record in flight under the new fence, in one step: a first request pays one round
-- trip for the three, and a replay pays for no lease. FENCE_FIRST / FENCE_LAST (1-based, the
-- fence's place in an encoded record), KIND_AT and FINAL_KIND are set by the script's first
-- line, as in the result store's put.lua; the fencing (next_lock_fence, prepended from
-- lock_fence.lua) and the lease are acquire.lua's.
-- KEYS[1] record   KEYS[2] the record's watchers   KEYS[3] lock   KEYS[4] fencing counter
-- ARGV[1] owner token (32 hex digits)   ARGV[2] lease ms   ARGV[3] fence counter retention ms
-- ARGV[4] the in-flight record, its fence digits to be filled in   ARGV[5] record keep ms
-- ARGV[6] push channel prefix   ARGV[7] the record's key, for the receivers
-- ARGV[8] this request's fingerprint (hex)
-- ARGV[9] "<client id>|<granted unix ms>|<label>", the holder's record (as acquire.lua's)
-- Returns {status, fence, record}:
--   {2, 0, record} the record settles the request (completed, or in flight with another
--                  fingerprint): no lease was tried;
--   {0, 0, record or nil} another request holds the lease;
--   {1, fence, nil} granted, and the record is in flight under `fence`;
--   {3, fence, record} granted, but the record there is a newer claim's: give the lease back.
local record = redis.call('GET', KEYS[1])
if record then
  local kind = string.sub(record, KIND_AT, KIND_AT)
  if kind == FINAL_KIND then
    return {2, 0, record}
  end
  if kind == 'I' then
    local fingerprint = string.sub(record, FENCE_LAST + 2, FENCE_LAST + 1 + string.len(ARGV[8]))
    if fingerprint ~= ARGV[8] then
      return {2, 0, record}
    end
  end
end
local fence
local current = redis.call('GET', KEYS[3])
if current then
  if string.sub(current, 1, 32) ~= ARGV[1] then
    return {0, 0, record}
  end
  -- A retry of a grant whose reply was lost: the same lease again, nothing counted twice.
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  fence = tonumber(string.match(current, '^%x+:(%d+)'))
else
  fence = next_lock_fence(KEYS[4], ARGV[3])
  redis.call('SET', KEYS[3], ARGV[1] .. ':' .. string.format('%d', fence) .. '|' .. ARGV[9],
    'PX', ARGV[2])
end
local digits = string.format('%0' .. (FENCE_LAST - FENCE_FIRST + 1) .. 'd', fence)
if record and string.sub(record, FENCE_FIRST, FENCE_LAST) > digits then
  return {3, fence, record}
end
local entry = string.sub(ARGV[4], 1, FENCE_FIRST - 1) .. digits .. string.sub(ARGV[4], FENCE_LAST + 1)
redis.call('SET', KEYS[1], entry, 'PX', ARGV[5])
local message = string.len(ARGV[7]) .. ' ' .. ARGV[7] .. entry
for _, client in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  redis.call('PUBLISH', ARGV[6] .. client, message)
end
redis.call('DEL', KEYS[2])
return {1, fence, false}
