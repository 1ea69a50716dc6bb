-- Grants a lease, or queues the caller as a waiter. (next_lock_fence is prepended from
-- lock_fence.lua.)
-- KEYS[1] lock: "<owner>:<fence>|<client id>|<granted unix ms>|<label>" with the lease as its
--         TTL; what follows the first '|' is for the operator's view only (the lock compares
--         "<owner>:<fence>", the lease's own part)
-- KEYS[2] fencing counter   KEYS[3] waiter queue (zset: waiter id by arrival)
-- ARGV[1] owner token (32 hex digits)   ARGV[2] lease ms
-- ARGV[3] waiter id, or '' to not queue   ARGV[4] '1' if an earlier attempt queued this waiter
-- ARGV[5] queue lifetime ms   ARGV[6] fence counter retention ms
-- ARGV[7] "<client id>|<granted unix ms>|<label>", the holder's record
-- Returns {1, fence} when granted, {0, pttl of the current lease} when busy.
local current = redis.call('GET', KEYS[1])
if current then
  if string.sub(current, 1, 32) == ARGV[1] then
    -- A retry of a grant whose reply was lost: the same lease again, nothing counted twice.
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    if ARGV[4] == '1' then
      redis.call('ZREM', KEYS[3], ARGV[3])
    end
    return {1, tonumber(string.match(current, '^%x+:(%d+)'))}
  end
  if ARGV[3] ~= '' then
    local now = redis.call('TIME')
    local score = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    if ARGV[4] == '1' and not redis.call('ZSCORE', KEYS[3], ARGV[3]) then
      -- Woken (the release popped us) and beaten to the key by a newcomer: back to the
      -- front, not the back, so the next release wakes us again.
      local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
      if #first == 2 then
        score = math.min(score, tonumber(first[2]) - 1)
      end
    end
    redis.call('ZADD', KEYS[3], 'NX', score, ARGV[3])
    redis.call('PEXPIRE', KEYS[3], ARGV[5])
  end
  return {0, redis.call('PTTL', KEYS[1])}
end
local fence = next_lock_fence(KEYS[2], ARGV[6])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', fence) .. '|' .. ARGV[7],
  'PX', ARGV[2])
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[3], ARGV[3])
end
return {1, fence}
