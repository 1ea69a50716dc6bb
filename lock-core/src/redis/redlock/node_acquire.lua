-- One RedLock node's part of a grant (next_lock_fence is prepended from lock_fence.lua): the
-- lock set under the owner token with a fresh fence from the node's counter, also when the
-- node still holds the key under this owner token from an earlier round of the same
-- acquisition (whose give-back did not reach it): that round's fence may be older than a
-- token handed out since, so it is never answered again.
-- KEYS[1] lock: "<owner>:<fence>" with the lease as its TTL   KEYS[2] fencing counter
-- ARGV[1] owner token (32 hex digits)   ARGV[2] lease ms   ARGV[3] fence counter retention ms
-- Returns {1, fence} when granted, {0, pttl of the other owner's lease} when busy.
local current = redis.call('GET', KEYS[1])
if current and string.sub(current, 1, 33) ~= ARGV[1] .. ':' then
  return {0, redis.call('PTTL', KEYS[1])}
end
local fence = next_lock_fence(KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. string.format('%d', fence), 'PX', ARGV[2])
return {1, fence}
