-- Confirms (`action` 'confirm') or cancels ('cancel') `order`'s live reservation. Returns the
-- state letter the reservation had before ('L' when this call settled it), or 'U' (unknown).
local function settle(order, action)
  local field = 'r|' .. order
  local record = redis.call('HGET', KEYS[2], field)
  if not record then
    return 'U'
  end
  local state = string.sub(record, 1, 1)
  if state ~= 'L' then
    return state
  end
  local quantity = tonumber(string.match(record, '^L|(%d+)|'))
  redis.call('HINCRBY', KEYS[1], 'reserved', -quantity)
  if action == 'confirm' then
    redis.call('HINCRBY', KEYS[1], 'sold', quantity)
    remember(field, 'C' .. string.sub(record, 2), true)
  else
    redis.call('HINCRBY', KEYS[1], 'available', quantity)
    remember(field, 'X' .. string.sub(record, 2), true)
  end
  redis.call('ZREM', KEYS[4], order)
  return 'L'
end
