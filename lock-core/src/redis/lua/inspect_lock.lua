-- Reads a lock for the operator's view, in one consistent snapshot; changes nothing.
-- KEYS[1] lock   KEYS[2] waiter queue   KEYS[3] holder record (acquire.lua's KEYS[4])
-- ARGV[1] the most waiters to list
-- Returns {lock value or nil, its pttl, holder record or nil, {waiter id, arrival ms, ...},
-- waiters in all, the server's time in ms}.
local value = redis.call('GET', KEYS[1])
local pttl = redis.call('PTTL', KEYS[1])
local holder = redis.call('GET', KEYS[3])
local waiters = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')
local now = redis.call('TIME')
return {value or false, pttl, holder or false, waiters, redis.call('ZCARD', KEYS[2]),
  tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)}
