-- Grants a fair lock's turn, a read or write share, or semaphore permits; or queues the caller.
-- (primitive_lib.lua is prepended: see it for KEYS and ARGV[1..4].)
-- ARGV[5] owner token   ARGV[6] lease ms   ARGV[7] queue entry, or '' to not queue
-- ARGV[8] kind: F, R, W or P   ARGV[9] permits asked (1 for the others)
-- ARGV[10] semaphore size to set when none is   ARGV[11] downgrading writer's token, or ''
-- ARGV[12] queue entry lifetime ms (refreshed by each re-check)
-- ARGV[13] an election candidate's participant id, or '': kept with the grant in KEYS[6] as
--          "<owner> <participant id>" for the leader to be read by (primitive_leader.lua)
-- ARGV[14] "<client id>|<label>": who holds, kept in KEYS[7] for the operator's view
-- Returns {1, fence} when granted, {0, ms until the first lease runs out (0: none held)} when
-- waiting, {-1, size} when more permits are asked than the semaphore has.
-- The grant rule per kind is the memory backend's (`state.rs`, `verdict`).
local owner, ms, entry, kind = ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8]
local count = tonumber(ARGV[9])
local expired = prune()

local function leave_queue()
  if entry ~= '' then
    remove_entry(entry)
  end
end

-- A retry of a grant whose reply was lost, or a fair lock handed over to this waiter: the
-- same lease again, now for the whole lease.
local own = live_fence(owner)
if own then
  extend(owner, ms)
  leave_queue()
  return {1, tonumber(own)}
end

local size = 0
if kind == 'P' then
  redis.call('SET', KEYS[6], ARGV[10], 'NX')
  redis.call('PEXPIRE', KEYS[6], ARGV[4])
  size = tonumber(redis.call('GET', KEYS[6]))
  if count > size then
    leave_queue()
    return {-1, size}
  end
end

local holders, held, writer = 0, 0, false
local records = redis.call('HGETALL', KEYS[2])
for i = 1, #records, 2 do
  local _, k, c = string.match(records[i + 1], '^(%d+) (%u) (%d+)$')
  holders = holders + 1
  held = held + (tonumber(c) or 0)
  if (k == 'W' or k == 'F') and records[i] ~= ARGV[11] then
    writer = true
  end
end

local rank = false
if entry ~= '' then
  rank = redis.call('ZRANK', KEYS[4], entry)
end
local ahead
if rank then
  ahead = rank > 0
else
  ahead = redis.call('ZCARD', KEYS[4]) > 0
end

local grant
if kind == 'F' or kind == 'W' then
  grant = holders == 0 and not ahead
elseif kind == 'R' then
  -- A writer downgrading holds the lock: the queue waits for it, not it for the queue.
  grant = not writer and (ARGV[11] ~= '' or not ahead)
else
  grant = held + count <= size and not ahead
end

if grant then
  local fence = next_fence()
  hold(owner, kind, count, ms, fence, ARGV[14])
  if ARGV[13] ~= '' then
    redis.call('SET', KEYS[6], owner .. ' ' .. ARGV[13], 'PX', ARGV[4])
  end
  leader_changed()
  leave_queue()
  if rank and (kind == 'R' or kind == 'P') then
    -- Readers and permits behind us may fit too: the next one looks.
    wake_head()
  end
  return {1, fence}
end

if entry ~= '' then
  local lifetime = tonumber(ARGV[12])
  if not rank then
    -- The arrival sequence is the server's: one more than the last entry's.
    local last = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
    local seq = 1
    if #last > 0 then
      seq = tonumber(last[2]) + 1
    end
    redis.call('ZADD', KEYS[4], int(seq), entry)
  end
  redis.call('ZADD', KEYS[5], int(NOW + lifetime), entry)
  if redis.call('PTTL', KEYS[4]) < lifetime then
    redis.call('PEXPIRE', KEYS[4], lifetime)
    redis.call('PEXPIRE', KEYS[5], lifetime)
  end
end

-- Nobody holds it (a handed-over claim or a lease ran out) or a lease just ran out, and the
-- first waiter is someone else: move the queue on, so it never stalls on a waiter that left.
local first = head()
if first and first ~= entry and (expired > 0 or holders == 0) then
  wake_head()
end

local soonest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local retry = 0
if #soonest > 0 then
  retry = math.max(tonumber(soonest[2]) - NOW, 1)
end
return {0, retry}
