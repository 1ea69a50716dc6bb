-- Registers a waiter of a latch, or says it is open.
-- KEYS[1] latch count   KEYS[2] waiters (zset of waiter ids)   ARGV[1] waiter id
-- Returns -1 when the latch is open (at zero, expired or never set), else its remaining ms.
local pttl = redis.call('PTTL', KEYS[1])
if pttl == -2 then
  return -1
end
if pttl == -1 then
  pttl = 86400000
end
local now = redis.call('TIME')
-- Scored by arrival (the server's ms), kept from the first registration: the operator's view
-- shows how long each has waited.
redis.call('ZADD', KEYS[2], 'NX', tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000),
  ARGV[1])
if redis.call('PTTL', KEYS[2]) < pttl then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
return pttl
