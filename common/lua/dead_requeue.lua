-- dead_requeue: give dead jobs of a topic a fresh start, due now.
-- KEYS[1] jobs  KEYS[2] dead zset of topic  KEYS[3] delayed  KEYS[4] errors
-- KEYS[5] timer wake list  KEYS[6] stats of the day
-- ARGV[1] now ms  ARGV[2] topic  ARGV[3] job key, or '' for a batch of all
-- ARGV[4] batch limit (when ARGV[3] is '')
-- Attempts restart at 0. Returns the number of jobs requeued.
local keys
if ARGV[3] ~= '' then
  keys = {ARGV[3]}
else
  keys = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[4]) - 1)
end
local moved = 0
for _, key in ipairs(keys) do
  local record = redis.call('HGET', KEYS[1], key)
  if record and string.sub(record, 1, 1) == 'x' and redis.call('ZREM', KEYS[2], key) == 1 then
    local created, body = string.match(record, '^.|%d+|%d+|(%d+)|(.*)$')
    redis.call('HSET', KEYS[1], key, 'd|0|' .. ARGV[1] .. '|' .. created .. '|' .. body)
    redis.call('ZADD', KEYS[3], ARGV[1], key)
    redis.call('HDEL', KEYS[4], key)
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('LPUSH', KEYS[5], ARGV[1])
  redis.call('LTRIM', KEYS[5], 0, 15)
  redis.call('HINCRBY', KEYS[6], ARGV[2] .. ':requeued', moved)
  redis.call('EXPIRE', KEYS[6], 3456000)
end
return moved
