-- Adds `quantity` units once per restock id. Returns {duplicate (0/1), record, level}; the
-- record ("S|<quantity>|<received after>") keeps the first request's quantity (the caller
-- refuses a duplicate asking for another). A restocked SKU's records expire by the retention
-- (a SKU never restocked keeps them UNKNOWN_SKU_RETENTION_MS at most).
local function restock(quantity, id)
  local field = 's|' .. id
  local first = redis.call('HGET', KEYS[2], field)
  if first then
    return {1, first, level()}
  end
  redis.call('HINCRBY', KEYS[1], 'available', quantity)
  local received = redis.call('HINCRBY', KEYS[1], 'received', quantity)
  stocked = true
  local record = 'S|' .. int(quantity) .. '|' .. int(received)
  remember(field, record, true)
  return {0, record, level()}
end
