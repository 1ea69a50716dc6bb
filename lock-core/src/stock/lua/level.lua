-- Returns the level (after returning expired reservations).
return level()
