-- Confirms a lease of a fair lock, read-write lock or semaphore is still held by this owner and
-- grant; with a lease length, also renews it. (primitive_lib.lua is prepended.)
-- ARGV[5] owner token   ARGV[6] fence   ARGV[7] lease ms, or '0' to only check
-- Returns 1 when held by this owner and grant, 0 otherwise.
if live_fence(ARGV[5]) ~= ARGV[6] then
  if prune() > 0 then
    wake_head()
  end
  return 0
end
if ARGV[7] ~= '0' then
  extend(ARGV[5], tonumber(ARGV[7]))
end
return 1
