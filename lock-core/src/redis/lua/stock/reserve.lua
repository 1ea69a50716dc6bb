-- Holds `quantity` units for `order` for `ttl_ms` if available, once per order id. Returns
-- {duplicate (0/1), record}; the record keeps the quantity (the caller refuses a duplicate
-- asking for another quantity).
local function reserve(quantity, order, ttl_ms)
  local field = 'r|' .. order
  local first = redis.call('HGET', KEYS[2], field)
  if first then
    return {1, first}
  end
  local have = available()
  if have >= quantity then
    redis.call('HINCRBY', KEYS[1], 'available', -quantity)
    redis.call('HINCRBY', KEYS[1], 'reserved', quantity)
    redis.call('ZADD', KEYS[4], NOW + ttl_ms, order)
    local record = 'L|' .. int(quantity) .. '|' .. int(have - quantity)
    remember(field, record, false)
    return {0, record}
  end
  local record = 'O|' .. int(quantity) .. '|' .. int(have)
  remember(field, record, true)
  return {0, record}
end
