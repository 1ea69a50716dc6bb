-- Reads a fair lock, read-write lock, semaphore or election for the operator's view, in one
-- consistent snapshot; changes nothing (leases that ran out are skipped, not pruned).
-- KEYS as primitive_lib.lua's: KEYS[1] holders, KEYS[2] leases, KEYS[4] queue, KEYS[6] size,
-- KEYS[7] holders' labels
-- ARGV[1] the most waiters to list
-- Returns {{owner, lease expiry ms, "<fence> <kind> <count>", "<client>|<label>" or '', ...},
-- {queue entry, ...},
-- entries in all, size or nil, the server's time in ms}.
-- A key of another type (another program's) reads as nothing.
-- `read` is read_lenient.lua's, prepended (scripts.rs).
local now = redis.call('TIME')
local ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local live = read('ZRANGEBYSCORE', KEYS[1], '(' .. string.format('%d', ms), '+inf',
  'WITHSCORES') or {}
local holders = {}
for i = 1, #live, 2 do
  table.insert(holders, live[i])
  table.insert(holders, live[i + 1])
  table.insert(holders, read('HGET', KEYS[2], live[i]) or '')
  table.insert(holders, read('HGET', KEYS[7], live[i]) or '')
end
local queue = read('ZRANGE', KEYS[4], 0, tonumber(ARGV[1]) - 1) or {}
return {holders, queue, read('ZCARD', KEYS[4]) or 0, read('GET', KEYS[6]) or false, ms}
