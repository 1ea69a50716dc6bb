-- Releases a lease if, and only if, it is still held by this owner and grant, then wakes one
-- waiter. (wake_next is prepended from wake_next.lua.)
-- KEYS[1] lock   KEYS[2] waiter queue
-- ARGV[1] "<owner>:<fence>" (the value's part before its holder record, from '|' on; a value
--         of a version without the record is that part alone)   ARGV[2] wake channel route
-- Returns 1 when released, 0 when the lock was not this owner's.
local current = redis.call('GET', KEYS[1])
if not current or (current ~= ARGV[1]
    and string.sub(current, 1, #ARGV[1] + 1) ~= ARGV[1] .. '|') then
  return 0
end
redis.call('DEL', KEYS[1])
wake_next(KEYS[1], KEYS[2], ARGV[2])
return 1
