-- read(command, key, ...): the command's reply, or nil when the key is of another type (the
-- operator's scripts read what another program, or another store of this prefix, may own).
local function read(command, key, ...)
  local reply = redis.pcall(command, key, ...)
  if type(reply) == 'table' and reply.err then
    return nil
  end
  return reply
end
