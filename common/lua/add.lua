-- add: store a new job unless one with the same (topic, id) is still held.
-- KEYS[1] jobs hash   KEYS[2] delayed zset   KEYS[3] stats hash of the day
-- KEYS[4] timer wake list
-- ARGV[1] job key "topic:id"  ARGV[2] due ms  ARGV[3] now ms  ARGV[4] body
-- ARGV[5] topic
-- Returns 1 when added, else the state letter of the job already held
-- (d delayed, r ready, w working, y retrying, x dead): nothing is changed then.
local existing = redis.call('HGET', KEYS[1], ARGV[1])
if existing then
  return string.sub(existing, 1, 1)
end
-- Wake a sleeping timer when this job is due before everything it knows of.
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] == nil or tonumber(first[2]) > tonumber(ARGV[2]) then
  redis.call('LPUSH', KEYS[4], ARGV[2])
  redis.call('LTRIM', KEYS[4], 0, 15)
end
redis.call('HSET', KEYS[1], ARGV[1], 'd|0|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[5] .. ':added', 1)
redis.call('EXPIRE', KEYS[3], 3456000)
return 1
