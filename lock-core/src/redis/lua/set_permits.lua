-- Sets a semaphore's size, kept as long as its fencing counter, and lets the first waiter look
-- again (a larger size may let it in). (primitive_lib.lua is prepended.)
-- ARGV[5] permits
-- Returns 1.
redis.call('SET', KEYS[6], ARGV[5], 'PX', ARGV[4])
prune()
wake_head()
return 1
