-- Shared by every stock script, after the script's first line (which sets
-- UNKNOWN_SKU_RETENTION_MS). Each script defines its operation as a function and ends with
-- `return call(<operation>, <its arguments from ARGV[2]>)`.
--
-- Every script takes the same keys and first argument:
-- KEYS[1] level: hash {available, reserved, sold, received}; never expires
-- KEYS[2] records: one field per request whose first outcome a retry must find, '<kind>|<id>':
--         'd|<order>'  a deduction: "D|<quantity>|<remaining>" or "O|<quantity>|<available>"
--                      (written before quantities were kept: "D|<remaining>", "O|<available>");
--         'r|<order>'  a reservation: "<state>|<quantity>|<remaining or available>", state one
--                      of L live, C confirmed, X cancelled, E expired, O refused (out of stock;
--                      quantity 0 in records written before refused quantities were kept);
--         's|<id>'     a restock: "S|<quantity>|<received after it>"
-- KEYS[3] timeline: list of '<ms>|<field>', newest first, one entry per record from the moment
--         it is final (every record but a live reservation's): the record is forgotten once
--         ARGV[1] ms have passed since (the oldest first, at most FORGET_PER_CALL per call)
-- KEYS[4] expiry: the live reservations' order ids by expiry time (ms)
-- ARGV[1] the retention, ms
-- Times are the server's clock. While a reservation is live nothing of the SKU expires by
-- itself; otherwise the records and the timeline expire as a whole the retention after the
-- last record was written (UNKNOWN_SKU_RETENTION_MS at most for a SKU never restocked), so a
-- SKU no request names any more keeps its level and nothing else.
local RETENTION_MS = tonumber(ARGV[1])
local FORGET_PER_CALL = 128

-- The call's moment (set by `call`), and whether it wrote a record.
local NOW = 0
local wrote = false

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
  end
  wrote = true
end

local function available()
  return tonumber(redis.call('HGET', KEYS[1], 'available') or '0')
end

local function level()
  local v = redis.call('HMGET', KEYS[1], 'available', 'reserved', 'sold', 'received')
  return {tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0'), tonumber(v[4] or '0')}
end

-- Returns the units of reservations whose time is up (at most 100 per call; the rest on the
-- next call, so one call stays short).
local function expire_due()
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
-- FORGET_PER_CALL: read from the timeline's tail 4 entries at first (a call usually finds none
-- or one due), then 32 at a time.
local function forget_due()
  local cutoff = NOW - RETENTION_MS
  local left, chunk = FORGET_PER_CALL, 4
  while left > 0 do
    local oldest = redis.call('LRANGE', KEYS[3], -math.min(chunk, left), -1)
    local fields, due = {}, 0
    for i = #oldest, 1, -1 do
      local at, field = string.match(oldest[i], '^(%d+)|(.+)$')
      if at and tonumber(at) > cutoff then
        break
      end
      due = due + 1
      if field then
        fields[#fields + 1] = field
      end
    end
    if due == 0 then
      return
    end
    if #fields > 0 then
      redis.call('HDEL', KEYS[2], unpack(fields))
    end
    redis.call('LTRIM', KEYS[3], 0, -due - 1)
    if due < #oldest then
      return
    end
    left, chunk = left - due, 32
  end
end

-- After a call that wrote a record: nothing expires while a reservation is live; otherwise
-- the records and the timeline expire the retention from now.
local function keep_records()
  if redis.call('ZCARD', KEYS[4]) > 0 then
    redis.call('PERSIST', KEYS[2])
    redis.call('PERSIST', KEYS[3])
    return
  end
  local keep = RETENTION_MS
  if redis.call('EXISTS', KEYS[1]) == 0 then
    keep = math.min(keep, UNKNOWN_SKU_RETENTION_MS)
  end
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('PEXPIRE', KEYS[3], keep)
end

-- Runs `operation(...)` as one request: expired reservations returned and due records
-- forgotten first, the records' expiry kept after.
local function call(operation, ...)
  NOW = now_ms()
  wrote = false
  expire_due()
  forget_due()
  local out = operation(...)
  if wrote then
    keep_records()
  end
  return out
end
