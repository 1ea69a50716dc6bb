-- Releases a lease of a fair lock, read-write lock or semaphore if, and only if, it is still
-- held by this owner and grant, then wakes the first waiter (a fair lock is handed over).
-- (primitive_lib.lua is prepended.)
-- ARGV[5] owner token   ARGV[6] fence
-- Returns 1 when released, 0 when it was not this owner's.
if live_fence(ARGV[5]) ~= ARGV[6] then
  -- Run out or taken: whatever held the queue up may have gone.
  prune()
  wake_head()
  return 0
end
release_holder(ARGV[5])
leader_changed()
wake_head()
return 1
