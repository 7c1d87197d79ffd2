-- dead_callback_settle: the outcome of sending one dead-letter callback.
-- KEYS[1] the outbox zset ({dq}:deadcb)
-- ARGV[1] entry number  ARGV[2] 'done' (a 2xx took it, or it is given up)
-- or 'retry'  ARGV[3] the holder's claim  ARGV[4] retry: wait before the next
-- send, ms  ARGV[5] retry: the error
-- 'done' removes the entry whoever holds it now (it went out). 'retry' counts
-- the failed send and makes it due after the wait, only while the claim is
-- still ARGV[3]'s (a checker whose lease ran out changes nothing).
-- Returns 1 settled, 0 gone or held by another.
local entry = kDeadCallbacks .. ':' .. ARGV[1]
if ARGV[2] == 'done' then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return redis.call('DEL', entry)
end
if redis.call('HGET', entry, 'claim') ~= ARGV[3] then return 0 end
redis.call('HINCRBY', entry, 'tries', 1)
redis.call('HSET', entry, 'last_send_error', ARGV[5], 'claim', '')
redis.call('ZADD', KEYS[1], ms_text(redis_now() + tonumber(ARGV[4])), ARGV[1])
return 1
