-- Takes `quantity` units for `order` if available, once per order id. Returns {duplicate
-- (0/1), record}; the record is the order's first outcome and quantity (the caller refuses a
-- duplicate asking for another quantity).
local function deduct(quantity, order)
  local field = 'd|' .. order
  local first = redis.call('HGET', KEYS[2], field)
  if first then
    return {1, first}
  end
  local have = available()
  local record
  if have >= quantity then
    redis.call('HINCRBY', KEYS[1], 'available', -quantity)
    redis.call('HINCRBY', KEYS[1], 'sold', quantity)
    record = 'D|' .. int(quantity) .. '|' .. int(have - quantity)
  else
    record = 'O|' .. int(quantity) .. '|' .. int(have)
  end
  remember(field, record, true)
  return {0, record}
end
