-- Reads an election's leader. (primitive_lib.lua is prepended; KEYS[6] holds
-- "<owner> <participant id>" of the latest grant, see primitive_acquire.lua.)
-- Returns {fence, participant id, ms until its lease runs out} of the live holder, or {} when
-- nobody leads. A holder whose id is not the one kept is answered with an empty id.
if prune() > 0 then
  wake_head()
end
local live = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. int(NOW), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local holder = live[1]
if not holder then
  return {}
end
local fence = live_fence(holder)
if not fence then
  return {}
end
local owner, participant = string.match(redis.call('GET', KEYS[6]) or '', '^(%S+) (.*)$')
if owner ~= holder then
  participant = ''
end
return {fence, participant, int(tonumber(live[2]) - NOW)}
