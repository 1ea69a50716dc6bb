-- ARGV[1] quantity   ARGV[2] order id   ARGV[3] ttl ms
-- Returns {duplicate (0/1), record}; the record keeps the quantity (the caller refuses a
-- duplicate asking for another quantity).
local first = redis.call('HGET', KEYS[3], ARGV[2])
if first then
  return {1, first}
end
local quantity = tonumber(ARGV[1])
local have = available()
local record
if have >= quantity then
  redis.call('HINCRBY', KEYS[1], 'available', -quantity)
  redis.call('HINCRBY', KEYS[1], 'reserved', quantity)
  redis.call('ZADD', KEYS[4], now_ms() + tonumber(ARGV[3]), ARGV[2])
  record = 'L|' .. int(quantity) .. '|' .. int(have - quantity)
else
  record = 'O|' .. int(quantity) .. '|' .. int(have)
end
remember(KEYS[3], ARGV[2], record)
return {0, record}
