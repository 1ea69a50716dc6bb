-- Shared by every stock script, after the script's first line (which sets
-- UNKNOWN_SKU_RETENTION_MS). Each script defines its operation as a function and ends with
-- `return call(<operation>, <its arguments from ARGV[2]>)`.
--
-- Every script takes the same keys and first argument:
-- KEYS[1] level: hash {available, reserved, sold, received, forget}; never expires. `forget`
--         (ms) is when the timeline's oldest entry is next worth reading: its time, the retention
--         and a slack of a 64th of it (so records are forgotten in batches)
-- KEYS[2] records: one field per request whose first outcome a retry must find, '<kind>|<id>':
--         'd|<order>'  a deduction: "D|<quantity>|<remaining>" or "O|<quantity>|<available>"
--                      (written before quantities were kept: "D|<remaining>", "O|<available>");
--         'r|<order>'  a reservation: "<state>|<quantity>|<remaining or available>", state one
--                      of L live, C confirmed, X cancelled, E expired, O refused (out of stock;
--                      quantity 0 in records written before refused quantities were kept);
--         's|<id>'     a restock: "S|<quantity>|<received after it>"
-- KEYS[3] timeline: list of '<ms>|<field>', newest first, one entry per record from the moment
--         it is final (every record but a live reservation's): the record is forgotten once
--         ARGV[1] ms have passed since (the oldest first, at most FORGET_PER_CALL per call, within
--         a 64th of the retention more)
-- KEYS[4] expiry: the live reservations' order ids by expiry time (ms)
-- ARGV[1] the retention, ms
-- Times are the server's clock. While a reservation is live nothing of the SKU expires by
-- itself; otherwise the records and the timeline expire as a whole between the retention and
-- a sixteenth more after the last record was written (UNKNOWN_SKU_RETENTION_MS at most for a
-- SKU never restocked), so a SKU no request names any more keeps its level and nothing else.
local RETENTION_MS = tonumber(ARGV[1])
local SLACK_MS = math.floor(RETENTION_MS / 64)
local FORGET_PER_CALL = 128

-- The call's moment (set by `call`); whether it wrote a record, and whether that record is a
-- live reservation; whether the SKU has a level, and its units available when the call began.
local NOW = 0
local wrote = false
local made_live = false
local stocked = false
local units_available = 0

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(n)
  return string.format('%d', n)
end

-- Writes `record` in `field`; `final` unless it is a live reservation (whose record is kept
-- until it is settled or runs out, then the retention).
local function remember(field, record, final)
  redis.call('HSET', KEYS[2], field, record)
  if final then
    redis.call('LPUSH', KEYS[3], int(NOW) .. '|' .. field)
  else
    made_live = true
  end
  wrote = true
end

-- The units available (read by `call`, after expired reservations returned theirs).
local function available()
  return units_available
end

local function level()
  local v = redis.call('HMGET', KEYS[1], 'available', 'reserved', 'sold', 'received')
  return {tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0'), tonumber(v[4] or '0')}
end

-- Returns the units of reservations whose time is up (at most 100 per call; the rest on the
-- next call, so one call stays short).
local function expire_due()
  if redis.call('EXISTS', KEYS[4]) == 0 then
    return
  end
  local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', NOW, 'LIMIT', 0, 100)
  for _, order in ipairs(due) do
    local field = 'r|' .. order
    local record = redis.call('HGET', KEYS[2], field)
    if record and string.sub(record, 1, 1) == 'L' then
      local quantity = tonumber(string.match(record, '^L|(%d+)|'))
      redis.call('HINCRBY', KEYS[1], 'reserved', -quantity)
      redis.call('HINCRBY', KEYS[1], 'available', quantity)
      remember(field, 'E' .. string.sub(record, 2), true)
    end
    redis.call('ZREM', KEYS[4], order)
  end
end

-- Forgets the records final for the retention or longer, the oldest first, at most
-- FORGET_PER_CALL, once the level's `forget` time has come (`forget_at`: 0 without one); then
-- sets it from the oldest entry left.
local function forget_due(forget_at)
  if NOW < forget_at then
    return
  end
  local cutoff = NOW - RETENTION_MS
  local left = FORGET_PER_CALL
  local next_at = NOW
  while left > 0 do
    local want = math.min(32, left)
    local batch = redis.call('LRANGE', KEYS[3], -want, -1)
    local fields, due = {}, 0
    for i = #batch, 1, -1 do
      local at, field = string.match(batch[i], '^(%d+)|(.+)$')
      if at and tonumber(at) > cutoff then
        next_at = tonumber(at)
        break
      end
      due = due + 1
      if field then
        fields[#fields + 1] = field
      end
    end
    if #fields > 0 then
      redis.call('HDEL', KEYS[2], unpack(fields))
    end
    if due > 0 then
      redis.call('LTRIM', KEYS[3], 0, -due - 1)
    end
    left = left - due
    if due < want then
      break
    end
  end
  if stocked then
    -- With the budget spent and more due, `next_at` is now: the next call goes on.
    local forget = next_at + RETENTION_MS + SLACK_MS
    if left == 0 then
      forget = NOW
    end
    redis.call('HSET', KEYS[1], 'forget', int(forget))
  end
end

-- After a call that wrote a record: nothing expires while a reservation is live; otherwise
-- the records and the timeline expire no sooner than the retention from now (set to a
-- sixteenth more for a stocked SKU, so that most calls only read the timeline's TTL).
local function keep_records()
  if made_live then
    redis.call('PERSIST', KEYS[2])
    redis.call('PERSIST', KEYS[3])
    return
  end
  local keep, margin = RETENTION_MS, math.floor(RETENTION_MS / 16)
  if not stocked then
    keep, margin = math.min(keep, UNKNOWN_SKU_RETENTION_MS), 0
  end
  local ttl = redis.call('PTTL', KEYS[3])
  if ttl >= keep then
    return
  end
  if ttl == -1 and redis.call('ZCARD', KEYS[4]) > 0 then
    return
  end
  keep = keep + margin
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('PEXPIRE', KEYS[3], keep)
end

-- Runs `operation(...)` as one request: expired reservations returned and due records
-- forgotten first, the records' expiry kept after.
local function call(operation, ...)
  NOW = now_ms()
  wrote, made_live = false, false
  expire_due()
  local head = redis.call('HMGET', KEYS[1], 'available', 'forget')
  stocked, units_available = head[1] ~= false, tonumber(head[1] or '0')
  forget_due(tonumber(head[2] or '0'))
  local out = operation(...)
  if wrote then
    keep_records()
  end
  return out
end
