-- fail: a delivery attempt failed; schedule the next one or dead-letter it.
-- KEYS[1] jobs  KEYS[2] working  KEYS[3] delayed  KEYS[4] dead zset of topic
-- KEYS[5] errors  KEYS[6] stats of the day  KEYS[7] timer wake list
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] the attempt that failed
-- ARGV[4] now ms  ARGV[5] delay before the next attempt, ms
-- ARGV[6] max attempts  ARGV[7] error text
-- Only the holder of the current lease may fail a job: a stale consumer (its
-- lease expired and the job went to another) changes nothing.
-- Returns 1 rescheduled, 2 dead-lettered, 0 stale or gone.
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then
  return 0
end
local state, attempts, due, created, body = string.match(record, '^(.)|(%d+)|(%d+)|(%d+)|(.*)$')
if state ~= 'w' or attempts ~= ARGV[3] then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[4] .. '|' .. ARGV[7])
redis.call('EXPIRE', KEYS[6], 3456000)
if tonumber(attempts) >= tonumber(ARGV[6]) then
  redis.call('HSET', KEYS[1], ARGV[1], 'x|' .. attempts .. '|' .. due .. '|' .. created .. '|' .. body)
  redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
  redis.call('HINCRBY', KEYS[6], ARGV[2] .. ':dead', 1)
  return 2
end
local next_due = string.format('%.0f', tonumber(ARGV[4]) + tonumber(ARGV[5]))
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if first[2] == nil or tonumber(first[2]) > tonumber(next_due) then
  redis.call('LPUSH', KEYS[7], next_due)
  redis.call('LTRIM', KEYS[7], 0, 15)
end
redis.call('HSET', KEYS[1], ARGV[1], 'y|' .. attempts .. '|' .. next_due .. '|' .. created .. '|' .. body)
redis.call('ZADD', KEYS[3], next_due, ARGV[1])
redis.call('HINCRBY', KEYS[6], ARGV[2] .. ':failed', 1)
return 1
