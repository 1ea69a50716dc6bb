-- Carries one SKU over from the layout before key prefixes (`stock:{#ns:sku}`, with
-- `:deductions`, `:reservations` and `:expiry`): its level, and its live reservations (their
-- records and expiry times), so their units can still be confirmed, cancelled or run out. The
-- old records of deductions and of settled or refused reservations are dropped: a retry of
-- such an order is a new order after the move.
-- KEYS[1..4] the new level, records, timeline, expiry; KEYS[5..8] the old level, deductions,
-- reservations, expiry.
-- Returns 1 when the SKU was carried over; 0 when it had no level (a SKU never restocked: its
-- old records are dropped); 2 when nothing of it is left in the old layout (carried already);
-- -1 when the new level exists already (nothing is changed).
if redis.call('EXISTS', KEYS[5]) == 0 then
  if redis.call('UNLINK', KEYS[6], KEYS[7], KEYS[8]) > 0 then
    return 0
  end
  return 2
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return -1
end
redis.call('RENAME', KEYS[5], KEYS[1])
local live = redis.call('ZRANGE', KEYS[8], 0, -1, 'WITHSCORES')
for i = 1, #live, 2 do
  local order, expires = live[i], live[i + 1]
  local record = redis.call('HGET', KEYS[7], order)
  if record and string.sub(record, 1, 1) == 'L' then
    redis.call('HSET', KEYS[2], 'r|' .. order, record)
    redis.call('ZADD', KEYS[4], expires, order)
  end
end
redis.call('UNLINK', KEYS[6], KEYS[7], KEYS[8])
return 1
