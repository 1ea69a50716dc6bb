-- The next fencing token of a lock (prepended to acquire.lua and record_claim.lua): the counter
-- `counter` incremented, kept at least `retention` ms after this grant.
local function next_lock_fence(counter, retention)
  local fence = redis.call('INCR', counter)
  if fence == 1 then
    -- A new counter, or one lost in a restart without persistence: continue from the server's
    -- time in microseconds. Each grant takes well over a microsecond, so a counter seeded this
    -- way never reaches the current time, and tokens keep increasing across such a restart.
    local now = redis.call('TIME')
    fence = tonumber(now[1]) * 1000000 + tonumber(now[2])
    redis.call('SET', counter, string.format('%d', fence), 'PX', retention)
  elseif redis.call('PTTL', counter) < tonumber(retention) then
    -- The counter lives on for a while after the last grant, then goes: a re-seeded one
    -- starts from the server's time, which is past every token it ever gave (see above). A
    -- grant never shortens what an earlier one (or keep_fence) asked for.
    redis.call('PEXPIRE', counter, retention)
  end
  return fence
end
