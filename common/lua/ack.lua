-- ack: a delivery succeeded, so the job is done and removed.
-- KEYS[1] jobs  KEYS[2] working  KEYS[3] delayed  KEYS[4] ready list of topic
-- KEYS[5] dead zset of topic  KEYS[6] errors  KEYS[7] stats of the day
-- ARGV[1] job key  ARGV[2] topic
-- A job whose lease expired and that was requeued is removed too: it has been
-- delivered, and delivering it again would only be a duplicate.
-- Returns 1 when removed, 0 when it was already gone (deleted or acked).
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then
  return 0
end
local state = string.sub(record, 1, 1)
if state == 'w' then
  redis.call('ZREM', KEYS[2], ARGV[1])
elseif state == 'd' or state == 'y' then
  redis.call('ZREM', KEYS[3], ARGV[1])
elseif state == 'r' then
  redis.call('LREM', KEYS[4], 1, ARGV[1])
elseif state == 'x' then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
redis.call('HINCRBY', KEYS[7], ARGV[2] .. ':delivered', 1)
redis.call('EXPIRE', KEYS[7], 3456000)
return 1
