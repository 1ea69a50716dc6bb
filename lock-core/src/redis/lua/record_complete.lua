-- Ends an idempotency claim in one step: writes its record (the completed response, or the
-- mark of a claim given up) as the result store's put.lua does (`put`, prepended with
-- wake_next), then releases the claim's lease if it is still this claim's and wakes one waiter,
-- as release.lua does.
-- KEYS[1] record   KEYS[2] the record's watchers   KEYS[3] lock   KEYS[4] the lock's waiter queue
-- ARGV[1]..ARGV[6] put.lua's   ARGV[7] the lease, "<owner>:<fence>" (the value's part before
-- its holder record, from '|' on, as release.lua compares it)   ARGV[8] wake channel route
-- (publish_wake.lua)
-- Returns {stored, released}: 1 when the record was written, 1 when the lease was released.
local stored = put()
local released = 0
local current = redis.call('GET', KEYS[3])
if current and (current == ARGV[7]
    or string.sub(current, 1, #ARGV[7] + 1) == ARGV[7] .. '|') then
  redis.call('DEL', KEYS[3])
  wake_next(KEYS[3], KEYS[4], ARGV[8])
  released = 1
end
return {stored, released}
