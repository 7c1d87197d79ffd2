-- requeue_expired: put jobs whose lease ran out (their consumer died or hung)
-- back on their topic's ready list. The attempt they used still counts.
-- KEYS[1] jobs  KEYS[2] working  KEYS[3] consumer wake list  KEYS[4] stats of the day
-- ARGV[1] now ms  ARGV[2] batch limit  ARGV[3] ready key prefix
-- Returns the number of jobs requeued.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local moved = 0
for _, key in ipairs(expired) do
  redis.call('ZREM', KEYS[2], key)
  local record = redis.call('HGET', KEYS[1], key)
  if record and string.sub(record, 1, 1) == 'w' then
    local topic = string.match(key, '^([^:]+):')
    redis.call('HSET', KEYS[1], key, 'r' .. string.sub(record, 2))
    redis.call('RPUSH', ARGV[3] .. topic, key)
    redis.call('HINCRBY', KEYS[4], topic .. ':expired', 1)
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('EXPIRE', KEYS[4], 3456000)
  redis.call('LPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], 0, 255)
end
return moved
