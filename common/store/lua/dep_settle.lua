-- dep_settle: the releaser handed an event of the dependency outbox to the
-- waiters it names (dep_release.lua on their shards).
-- KEYS[1] the outbox zset ({dq}:depout)
-- ARGV[1] event number  ARGV[2] the awaited job's key  ARGV[3] 'done', or the
-- ms after which the event is handed out again (some waiter was not found:
-- its add may still be on its way)  ARGV[4..] the waiters handled: they
-- leave the job's waiter set
-- 'done' removes the event; a waiter that registers after it finds the
-- job's ended record (dep_register.lua). Running it twice changes nothing.
-- Returns the waiters left for the job.
for n = 4, #ARGV do redis.call('SREM', kWaitersPrefix .. ARGV[2], ARGV[n]) end
if ARGV[3] == 'done' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', kDepEvents, ARGV[1])
else
  redis.call('ZADD', KEYS[1], ms_text(redis_now() + tonumber(ARGV[3])), ARGV[1])
end
return redis.call('SCARD', kWaitersPrefix .. ARGV[2])
