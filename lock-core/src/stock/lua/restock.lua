-- ARGV[1] quantity. Returns the level.
redis.call('HINCRBY', KEYS[1], 'available', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'received', ARGV[1])
return level()
