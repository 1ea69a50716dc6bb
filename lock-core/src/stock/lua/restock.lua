-- Adds `quantity` units. Returns the level. The SKU's records now expire by the retention (a
-- SKU never restocked keeps them UNKNOWN_SKU_RETENTION_MS at most).
local function restock(quantity)
  redis.call('HINCRBY', KEYS[1], 'available', quantity)
  redis.call('HINCRBY', KEYS[1], 'received', quantity)
  wrote = true
  return level()
end
