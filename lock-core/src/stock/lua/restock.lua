-- ARGV[1] quantity. Returns the level. A stocked SKU's records are kept for good.
redis.call('PERSIST', KEYS[2])
redis.call('PERSIST', KEYS[3])
redis.call('HINCRBY', KEYS[1], 'available', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'received', ARGV[1])
return level()
