-- Confirms (and with a lease length, renews) whatever lease a RedLock grant holds on this node
-- under its owner token, whatever the node's fence in it: for a node whose grant landed after
-- the quorum had answered, so the grant never learned the lock's value there.
-- KEYS[1] lock
-- ARGV[1] owner token (32 hex digits)   ARGV[2] lease ms, or '0' to only check
-- Returns 1 when held under this owner token, 0 otherwise.
local current = redis.call('GET', KEYS[1])
if not current or string.sub(current, 1, 33) ~= ARGV[1] .. ':' then
  return 0
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
