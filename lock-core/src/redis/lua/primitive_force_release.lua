-- Releases one holder of a fair lock, read-write lock, semaphore or election by force, for an
-- operator, in one step: its lease ends, the primitive's fencing token is raised past it, an
-- audit record is appended, and the queue moves on. Other holders are not touched.
-- (primitive_lib.lua is prepended.)
-- KEYS[8] audit stream (shared by every primitive of the key)
-- ARGV[5] owner token to release, or '' for the only holder   ARGV[6] audit retention ms
-- ARGV[7] operator   ARGV[8] reason   ARGV[9] the full key   ARGV[10] the primitive's name
-- Returns {0, 'free'}, {0, 'not-owner'} or {0, 'several', holders} when refused (nothing
-- changed), else {1, owner, old fence, new fence, kind letter, permits, server ms, label,
-- holder's client id ('' when not kept)}. The holder's client is told on its wake channel (a
-- revocation naming the leases hash); on a Redis Cluster, where it hears that channel only
-- while it waits on the key, the caller also tells it on its revocation channel.
prune()
local live = redis.call('ZRANGE', KEYS[1], 0, -1)
if #live == 0 then
  wake_head()
  return {0, 'free'}
end
local owner = ARGV[5]
if owner == '' then
  if #live > 1 then
    return {0, 'several', #live}
  end
  owner = live[1]
elseif not redis.call('ZSCORE', KEYS[1], owner) then
  return {0, 'not-owner'}
end
local record = redis.call('HGET', KEYS[2], owner) or ''
local old_fence, kind, count = string.match(record, '^(%d+) (%a) (%d+)')
local who = redis.call('HGET', KEYS[7], owner) or ''
local client, label = string.match(who, '^([^|]*)|(.*)$')
release_holder(owner)
local fence = int(next_fence())
local retention = tonumber(ARGV[6])
redis.call('XADD', KEYS[8], 'MINID', '~', int(NOW - retention), '*',
  'key', ARGV[9], 'primitive', ARGV[10], 'kind', kind or '', 'operator', ARGV[7],
  'reason', ARGV[8], 'owner', owner, 'label', label or '', 'old', old_fence or '0', 'new', fence,
  'at', int(NOW), 'permits', count or '0')
if redis.call('PTTL', KEYS[8]) < retention then
  redis.call('PEXPIRE', KEYS[8], retention)
end
if client and client ~= '' then
  publish_wake(ARGV[2], client, KEYS[1],
    '!revoke\n' .. owner .. '\n' .. ARGV[7] .. '\n' .. ARGV[8] .. '\n' .. KEYS[2])
end
leader_changed()
wake_head()
return {1, owner, old_fence or '0', fence, kind or '', count or '0', NOW, label or '', client or ''}
