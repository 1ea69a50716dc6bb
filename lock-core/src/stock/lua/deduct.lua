-- ARGV[1] quantity   ARGV[2] order id
-- Returns {duplicate (0/1), record}; the record is the order's first outcome and quantity
-- (the caller refuses a duplicate asking for another quantity).
local first = redis.call('HGET', KEYS[2], ARGV[2])
if first then
  return {1, first}
end
local quantity = tonumber(ARGV[1])
local have = available()
local record
if have >= quantity then
  redis.call('HINCRBY', KEYS[1], 'available', -quantity)
  redis.call('HINCRBY', KEYS[1], 'sold', quantity)
  record = 'D|' .. int(quantity) .. '|' .. int(have - quantity)
else
  record = 'O|' .. int(quantity) .. '|' .. int(have)
end
remember(KEYS[2], ARGV[2], record)
return {0, record}
