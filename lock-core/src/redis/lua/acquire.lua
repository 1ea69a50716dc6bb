-- Grants a lease, or queues the caller as a waiter.
-- KEYS[1] lock hash {owner, fence}   KEYS[2] fencing counter   KEYS[3] waiter queue (zset)
-- ARGV[1] owner token   ARGV[2] lease ms   ARGV[3] waiter id or ''   ARGV[4] queue lifetime ms
-- Returns {1, fence} when granted, {0, pttl of the current lease} when busy.
local current = redis.call('HMGET', KEYS[1], 'owner', 'fence')
if current[1] == ARGV[1] then
  -- A retry of a grant whose reply was lost: the same lease again, nothing counted twice.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] ~= '' then
    redis.call('ZREM', KEYS[3], ARGV[3])
  end
  return {1, tonumber(current[2])}
end
if current[1] == false then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    -- Seed a new (or lost, after a restart without persistence) counter with the server's
    -- time in microseconds, so fencing tokens keep increasing across such a restart.
    local now = redis.call('TIME')
    redis.call('SET', KEYS[2], now[1] .. string.format('%06d', tonumber(now[2])))
  end
  local fence = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', string.format('%d', fence))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if ARGV[3] ~= '' then
    redis.call('ZREM', KEYS[3], ARGV[3])
  end
  return {1, fence}
end
if ARGV[3] ~= '' then
  local now = redis.call('TIME')
  local score = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  redis.call('ZADD', KEYS[3], 'NX', score, ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
return {0, redis.call('PTTL', KEYS[1])}
