-- Shared by every stock script. All take the same keys:
-- KEYS[1] level hash {available, reserved, sold, received}
-- KEYS[2] deductions: order id -> "D|<quantity>|<remaining>" or "O|<quantity>|<available>"
--         (records written before quantities were kept: "D|<remaining>", "O|<available>")
-- KEYS[3] reservations: order id -> "<state>|<quantity>|<remaining or available>", state one of
--         L live, C confirmed, X cancelled, E expired, O refused (out of stock; quantity 0 in
--         records written before refused quantities were kept)
-- KEYS[4] expiry: live reservation order ids by expiry time (ms, server clock)
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(n)
  return string.format('%d', n)
end

-- Returns the units of reservations whose time is up (at most 100 per call; the rest on the
-- next call, so one call stays short).
local function expire_due()
  local due = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now_ms(), 'LIMIT', 0, 100)
  for _, order in ipairs(due) do
    local record = redis.call('HGET', KEYS[3], order)
    if record and string.sub(record, 1, 1) == 'L' then
      local quantity = tonumber(string.match(record, '^L|(%d+)|'))
      redis.call('HINCRBY', KEYS[1], 'reserved', -quantity)
      redis.call('HINCRBY', KEYS[1], 'available', quantity)
      redis.call('HSET', KEYS[3], order, 'E' .. string.sub(record, 2))
    end
    redis.call('ZREM', KEYS[4], order)
  end
end

-- Records an order's first outcome in `hash`. The records of a SKU that was never stocked (no
-- level hash) expire UNKNOWN_SKU_RETENTION_MS after the last one (set by the script's first
-- line), so orders naming random SKUs cannot grow Redis without bound; restock keeps them.
local function remember(hash, order, record)
  redis.call('HSET', hash, order, record)
  if redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('PEXPIRE', hash, UNKNOWN_SKU_RETENTION_MS)
  end
end

local function available()
  return tonumber(redis.call('HGET', KEYS[1], 'available') or '0')
end

local function level()
  local v = redis.call('HMGET', KEYS[1], 'available', 'reserved', 'sold', 'received')
  return {tonumber(v[1] or '0'), tonumber(v[2] or '0'), tonumber(v[3] or '0'), tonumber(v[4] or '0')}
end

expire_due()
