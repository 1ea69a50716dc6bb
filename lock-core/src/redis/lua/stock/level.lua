-- Returns the level (after returning expired reservations).
local function read()
  return level()
end
