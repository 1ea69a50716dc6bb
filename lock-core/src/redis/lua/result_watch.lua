-- Registers a process as waiting for the next value of a key, and returns the entry there now.
-- KEYS[1] entry   KEYS[2] watchers (set of client ids)
-- ARGV[1] client id   ARGV[2] how long to keep the registration, ms
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return redis.call('GET', KEYS[1])
