-- The next fencing token of a lock (prepended to acquire.lua and record_claim.lua): larger than
-- the counter `counter` and at least the server's time in microseconds; the counter keeps it,
-- at least `retention` ms after this grant.
--
-- The clock is what keeps tokens increasing when the counter does not know the last grants:
-- a counter lost in a restart without persistence, or a replica promoted after missing them
-- (asynchronous replication), whose counter is older. Each grant takes well over a
-- microsecond of the server's time, so the counter never runs ahead of the clock by more than
-- the grants of one microsecond, and the first grant on any server whose clock is past the
-- last grant's time (a failover takes seconds; clocks kept by NTP agree to milliseconds) is
-- larger than every token given before.
local function next_lock_fence(counter, retention)
  local fence = redis.call('INCR', counter)
  local now = redis.call('TIME')
  local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
  if fence < clock then
    fence = clock
    redis.call('SET', counter, string.format('%d', fence), 'KEEPTTL')
  end
  if redis.call('PTTL', counter) < tonumber(retention) then
    -- The counter lives on for a while after the last grant, then goes; a grant never
    -- shortens what an earlier one (or keep_fence) asked for.
    redis.call('PEXPIRE', counter, retention)
  end
  return fence
end
