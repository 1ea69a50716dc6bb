-- Releases a lock by force, for an operator, in one step: the lease ends, the key's fencing
-- token is raised past the holder's, an audit record is appended, the holder's client is told
-- (a revocation on its wake channel), and the next waiter is woken. (next_lock_fence and
-- wake_next are prepended.) On a Redis Cluster the holder hears its wake channel of this key
-- only while it waits on the key, so the caller also tells it on its revocation channel (the
-- client id is the holder record's first field).
-- KEYS[1] lock ("<owner>:<fence>|<client id>|<granted ms>|<label>")   KEYS[2] fencing counter
-- KEYS[3] waiter queue   KEYS[4] audit stream (shared by every primitive of the key)
-- ARGV[1] owner token to release, or '' for whoever holds   ARGV[2] wake route
-- ARGV[3] fence counter retention ms   ARGV[4] audit retention ms   ARGV[5] operator
-- ARGV[6] reason   ARGV[7] the full key (for the record)
-- Returns {0, 'free'} or {0, 'not-owner'} when refused (nothing changed), else
-- {1, owner, old fence, new fence, holder record ("<client id>|<ms>|<label>", or '' from a
-- version without it), server ms}.
local current = redis.call('GET', KEYS[1])
if not current then
  return {0, 'free'}
end
local owner = string.sub(current, 1, 32)
if ARGV[1] ~= '' and owner ~= ARGV[1] then
  return {0, 'not-owner'}
end
local old_fence, holder = string.match(current, '^%x+:(%d+)|?(.*)$')
if not old_fence then
  -- Not a lock's value (another program's key): nothing holds this lock.
  return {0, 'free'}
end
redis.call('DEL', KEYS[1])
local fence = string.format('%d', next_lock_fence(KEYS[2], ARGV[3]))
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local label = string.match(holder, '^[^|]*|[^|]*|(.*)$') or ''
local retention = tonumber(ARGV[4])
redis.call('XADD', KEYS[4], 'MINID', '~', string.format('%d', ms - retention), '*',
  'key', ARGV[7], 'primitive', 'lock', 'kind', 'lock', 'operator', ARGV[5], 'reason', ARGV[6],
  'owner', owner, 'label', label, 'old', old_fence, 'new', fence, 'at', string.format('%d', ms))
if redis.call('PTTL', KEYS[4]) < retention then
  redis.call('PEXPIRE', KEYS[4], retention)
end
do
  local client = string.match(holder, '^([^|]*)|')
  if client and client ~= '' then
    publish_wake(ARGV[2], client, KEYS[1],
      '!revoke\n' .. owner .. '\n' .. ARGV[5] .. '\n' .. ARGV[6] .. '\n' .. KEYS[1])
  end
end
wake_next(KEYS[1], KEYS[3], ARGV[2])
return {1, owner, old_fence, fence, holder, ms}
