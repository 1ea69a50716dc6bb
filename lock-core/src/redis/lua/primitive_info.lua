-- Reads a fair lock, read-write lock or semaphore. (primitive_lib.lua is prepended.)
-- Returns {waiters queued, semaphore size or -1 when none is set, permits held}.
if prune() > 0 then
  wake_head()
end
local held = 0
for _, record in ipairs(redis.call('HVALS', KEYS[2])) do
  held = held + (tonumber(string.match(record, ' (%d+)$')) or 0)
end
local size = tonumber(redis.call('GET', KEYS[6]) or '-1') or -1
return {redis.call('ZCARD', KEYS[4]), size, held}
