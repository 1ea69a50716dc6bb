-- Shared by the scripts of the fair lock, the read-write lock and the semaphore (prepended to
-- each). They all take the same KEYS and first four ARGV:
-- KEYS[1] holders (zset: owner token by lease expiry, server ms)
-- KEYS[2] leases (hash: owner token -> "<fence> <kind> <count>"; kind F, R, W or P)
-- KEYS[3] fencing counter   KEYS[4] queue (zset: entry by arrival sequence)
-- KEYS[5] queue deadlines (zset: entry by the server ms at which it is dropped unless its
--         waiter re-checks first)   KEYS[6] semaphore size
-- KEYS[7] holders' labels (hash: owner token -> "<client id>|<label>", for the operator's view)
-- ARGV[1] family: 'fair', 'rw' or 'sem'   ARGV[2] wake channel route (publish_wake.lua, prepended)
-- ARGV[3] claim window ms (fair handoff)   ARGV[4] fence counter and size retention ms
-- Queue entries are "<waiter id>|<owner token>|<lease ms>"; waiter ids "<client id>:<seq>".

-- The server's time, read once per call: in microseconds (fencing tokens) and milliseconds.
local CLOCK = redis.call('TIME')
local NOW_US = tonumber(CLOCK[1]) * 1000000 + tonumber(CLOCK[2])
local NOW = math.floor(NOW_US / 1000)

local function int(n)
  return string.format('%d', n)
end

-- The holders' keys live at least as long as their longest lease (until server ms `at`).
local function extend_keys(at)
  if redis.call('PTTL', KEYS[1]) < at - NOW then
    redis.call('PEXPIREAT', KEYS[1], int(at))
    redis.call('PEXPIREAT', KEYS[2], int(at))
    redis.call('PEXPIREAT', KEYS[7], int(at))
  end
end

-- The next fencing token, as lock_fence.lua's: larger than the counter and at least the server's
-- time in microseconds, so a replica promoted after missing grants (its counter older) still
-- hands out larger tokens.
local function next_fence()
  local fence = redis.call('INCR', KEYS[3])
  if fence < NOW_US then
    fence = NOW_US
    redis.call('SET', KEYS[3], int(fence), 'PX', ARGV[4])
  else
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
  end
  return fence
end

-- `who` is "<client id>|<label>" (or '' when unknown), kept for the operator's view.
local function hold(owner, kind, count, ms, fence, who)
  redis.call('ZADD', KEYS[1], int(NOW + ms), owner)
  redis.call('HSET', KEYS[2], owner, int(fence) .. ' ' .. kind .. ' ' .. int(count))
  if who ~= '' then
    redis.call('HSET', KEYS[7], owner, who)
  end
  extend_keys(NOW + ms)
end

-- "<client id>|<label>" of a waiter id "<client id>:<label, ':' as %3A>:<seq>" (or
-- "<client id>:<seq>", no label).
local function who_of(id)
  local client, label = string.match(id, '^([^:]*):(.*):%d+$')
  if not client then
    client = string.match(id, '^([^:]*):') or ''
    label = ''
  end
  return client .. '|' .. string.gsub(label, '%%3A', ':')
end

-- An election's observers (see primitive_leader.lua) hear of each grant and release of its
-- leadership on their channel; a lease running out they time themselves.
local function leader_changed()
  if ARGV[1] == 'leader' then
    redis.call('PUBLISH', string.sub(ARGV[2], 2) .. 'leader:' .. KEYS[1], '1')
  end
end

-- Sets a holder's lease to `ms` from now.
local function extend(owner, ms)
  redis.call('ZADD', KEYS[1], int(NOW + ms), owner)
  extend_keys(NOW + ms)
end

-- The holders' zset and leases' hash hold the same owners (every change writes both), so the
-- last holder's removal leaves both empty, and Redis deletes an empty key itself.
local function release_holder(owner)
  redis.call('ZREM', KEYS[1], owner)
  redis.call('HDEL', KEYS[2], owner)
  redis.call('HDEL', KEYS[7], owner)
end

-- Drops leases that ran out and entries of waiters that stopped re-checking; returns how many
-- leases ran out.
local function prune()
  local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', NOW)
  for _, owner in ipairs(gone) do
    release_holder(owner)
  end
  local stale = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', NOW)
  for _, entry in ipairs(stale) do
    redis.call('ZREM', KEYS[4], entry)
    redis.call('ZREM', KEYS[5], entry)
  end
  return #gone
end

-- The fence of `owner`'s live lease, or nil when it holds none (or it ran out).
local function live_fence(owner)
  local expiry = redis.call('ZSCORE', KEYS[1], owner)
  if not expiry or tonumber(expiry) <= NOW then
    return nil
  end
  local record = redis.call('HGET', KEYS[2], owner)
  return record and string.match(record, '^(%d+)')
end

local function parse(entry)
  local id, owner, ms = string.match(entry, '^([^|]*)|([^|]*)|(%d+)$')
  return id, owner, tonumber(ms)
end

local function remove_entry(entry)
  redis.call('ZREM', KEYS[4], entry)
  redis.call('ZREM', KEYS[5], entry)
end

local function head()
  return redis.call('ZRANGE', KEYS[4], 0, 0)[1]
end

-- Wakes the first waiter that is still there. The fair lock hands itself over: it is set to
-- the waiter's owner token for the claim window (at most the waiter's lease) with a fresh
-- fence, and the message carries both ("f<fence> <claim ms>"), so the waiter wakes up
-- holding it and trusts it for no longer than the store keeps it. The other kinds only
-- nudge the waiter to re-check; it stays first in the queue until it is granted. A waiter
-- whose process is gone (PUBLISH reaches nobody) is dropped and the next one tried.
local function wake_head()
  while true do
    local entry = head()
    if not entry then
      return
    end
    local id, owner, ms = parse(entry)
    local client = id and string.match(id, '^([^:]+):')
    if ARGV[1] == 'fair' then
      if redis.call('ZCARD', KEYS[1]) > 0 then
        return
      end
      if client and owner and ms then
        local fence = next_fence()
        local claim = math.min(tonumber(ARGV[3]), ms)
        local message = id .. '\n' .. KEYS[1] .. '\nf' .. int(fence) .. ' ' .. int(claim)
        if publish_wake(ARGV[2], client, KEYS[1], message) > 0 then
          remove_entry(entry)
          hold(owner, 'F', 1, claim, fence, who_of(id))
          return
        end
      end
    elseif client and publish_wake(ARGV[2], client, KEYS[1], id .. '\n' .. KEYS[1] .. '\nw') > 0 then
      return
    end
    remove_entry(entry)
  end
end
