-- Confirms or cancels a live reservation.
-- ARGV[1] order id   ARGV[2] 'confirm' or 'cancel'
-- Returns the state letter the reservation had before ('L' when this call settled it), or 'U'.
local record = redis.call('HGET', KEYS[3], ARGV[1])
if not record then
  return 'U'
end
local state = string.sub(record, 1, 1)
if state ~= 'L' then
  return state
end
local quantity = tonumber(string.match(record, '^L|(%d+)|'))
redis.call('HINCRBY', KEYS[1], 'reserved', -quantity)
if ARGV[2] == 'confirm' then
  redis.call('HINCRBY', KEYS[1], 'sold', quantity)
  redis.call('HSET', KEYS[3], ARGV[1], 'C' .. string.sub(record, 2))
else
  redis.call('HINCRBY', KEYS[1], 'available', quantity)
  redis.call('HSET', KEYS[3], ARGV[1], 'X' .. string.sub(record, 2))
end
redis.call('ZREM', KEYS[4], ARGV[1])
return 'L'
