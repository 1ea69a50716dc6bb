-- Reads a lock for the operator's view, in one consistent snapshot; changes nothing.
-- KEYS[1] lock (its value "<owner>:<fence>|<holder record>")   KEYS[2] waiter queue
-- ARGV[1] the most waiters to list
-- Returns {lock value or nil, its pttl, {waiter id, arrival ms, ...},
-- waiters in all, the server's time in ms}. A key of another type (another program's, or
-- another store's of this prefix) reads as nothing.
-- `read` is read_lenient.lua's, prepended (scripts.rs).
local value = read('GET', KEYS[1])
local pttl = value and redis.call('PTTL', KEYS[1]) or -2
local waiters = read('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1, 'WITHSCORES') or {}
local now = redis.call('TIME')
return {value or false, pttl, waiters, read('ZCARD', KEYS[2]) or 0,
  tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)}
