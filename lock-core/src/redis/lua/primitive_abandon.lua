-- Cleans up after an acquisition that ended without a grant reaching its caller: removes its
-- queue entry and releases a lease held under its owner token (whatever its fence: a fair lock
-- may have been handed over after the waiter left), then wakes the first waiter if the queue
-- may have been waiting for this one. (primitive_lib.lua is prepended.)
-- ARGV[5] owner token   ARGV[6] its queue entry, or '' to look for the owner's entries
-- Returns 1 when anything was found, 0 otherwise.
prune()
local owner, found, moved = ARGV[5], 0, false
local first = head()
local entries
if ARGV[6] ~= '' then
  entries = {ARGV[6]}
else
  entries = {}
  local needle = '|' .. owner .. '|'
  for _, entry in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    if string.find(entry, needle, 1, true) then
      table.insert(entries, entry)
    end
  end
end
for _, entry in ipairs(entries) do
  if redis.call('ZREM', KEYS[4], entry) == 1 then
    found = 1
    moved = moved or entry == first
  end
  redis.call('ZREM', KEYS[5], entry)
end
if redis.call('HEXISTS', KEYS[2], owner) == 1 then
  release_holder(owner)
  leader_changed()
  found = 1
  moved = true
end
if moved then
  wake_head()
end
return found
