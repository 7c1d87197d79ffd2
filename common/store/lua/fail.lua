-- fail: a delivery attempt failed; schedule the next one or dead-letter it.
-- KEYS[1] records prefix  KEYS[2] working  KEYS[3] due index  KEYS[4] dead zset of topic
-- KEYS[5] errors  KEYS[6] stats of the day  KEYS[7] timer wake list  KEYS[8] counts
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] incarnation  ARGV[4] reserve id
-- ARGV[5] delay before the next attempt, ms  ARGV[6] max attempts  ARGV[7] error
-- ARGV[8] '0': the attempt does not count (the receiver's circuit breaker
-- stopped its calls: the job waits for it, attempts as before; never dead)
-- Only the holder of the current lease may fail a job: a stale consumer (its
-- lease expired and the job went to another, or it was deleted and re-added)
-- changes nothing.
-- Returns 1 rescheduled, 2 dead-lettered, 0 stale or gone.
local key, topic = ARGV[1], ARGV[2]
local record, from = record_get(key)
local j = parse_record(record)
if not j or j.state ~= 'w' or j.inc ~= ARGV[3] or j.lease ~= ARGV[4] then
  return 0
end
local now = redis_now()
redis.call('ZREM', KEYS[2], key)
redis.call('HSET', KEYS[5], key, ms_text(now) .. '|' .. ARGV[7])
j.lease = ''
j.max = ''
count(KEYS[8], topic, 'w', -1)
stat(KEYS[6], topic, 'failed', 1, now)
if ARGV[8] == '0' then
  j.attempts = math.max(0, j.attempts - 1)
elseif j.attempts >= tonumber(ARGV[6]) then
  j.state = 'x'
  record_set(key, record_text(j), from)
  redis.call('ZADD', KEYS[4], now, key)
  count(KEYS[8], topic, 'x', 1)
  stat(KEYS[6], topic, 'dead', 1, now)
  return 2
end
local next_due = ms_text(now + tonumber(ARGV[5]))
wake_timer_if_first(KEYS[3], KEYS[7], next_due)
j.state = 'y'
j.due = next_due
local bucket = bucket_of(key)
record_set(key, record_text(j), from, bucket)  -- into its bucket
due_add(bucket, key, next_due)
count(KEYS[8], topic, 'y', 1)
return 1
