-- fail: a delivery attempt failed; schedule the next one, defer it by the
-- receiver's Retry-After, or dead-letter it.
-- KEYS[1] records prefix  KEYS[2] working  KEYS[3] due index  KEYS[4] dead zset of topic
-- KEYS[5] errors  KEYS[6] stats of the day  KEYS[7] timer wake list  KEYS[8] counts
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] incarnation  ARGV[4] reserve id
-- ARGV[5] delay before the next attempt, ms  ARGV[6] max attempts (0: dead now,
-- the answer is one of the topic's dead_on)  ARGV[7] error
-- ARGV[8] the answer's Retry-After wait, ms (-1: none)  ARGV[9] the topic's max deferrals
-- A Retry-After answer defers the job by its wait without using the attempt
-- (attempts go back by one), while the job has honoured fewer than max
-- deferrals; after that it is an ordinary failed attempt. The count lives in
-- the job's record, so it survives any crash.
-- ARGV[10] '0': the attempt does not count (the receiver's circuit breaker
-- stopped its calls: the job waits for it, attempts as before; never dead)
-- ARGV[11] '1': the topic has a dead-letter callback; a job that dies here
-- gets its entry in the dead-letter callback outbox (dead_callback_add).
-- ARGV[12] the topic's end memory (remember_end): a job that dies or
-- expires is remembered for it, so a retried add of it answers how it ended.
-- ARGV[13] the topic's max_retry_duration_s, ms (0: no limit): a job whose
-- first attempt (the record's ninth field) began that long ago dies here,
-- whatever held it: a deferral, an uncounted attempt, an ordinary retry.
-- ARGV[14] why it was held ('' : none known), its dead-letter reason then.
-- Only the holder of the current lease may fail a job: a stale consumer (its
-- lease expired and the job went to another, or it was deleted and re-added)
-- changes nothing.
-- A job whose next attempt would come after its ttl or expire_at ends as
-- expired instead (end_unsent).
-- Returns 1 rescheduled, 2 dead-lettered, 3 deferred, 4 expired, 0 stale or gone.
local key, topic = ARGV[1], ARGV[2]
local record, from = record_get(key)
local j = parse_record(record)
if not j or j.state ~= 'w' or j.inc ~= ARGV[3] or j.lease ~= ARGV[4] then
  return 0
end
local now = redis_now()
local error_text = ARGV[7]
local delay = tonumber(ARGV[5])
local retry_after, max_deferrals = tonumber(ARGV[8] or '-1'), tonumber(ARGV[9] or '0')
local deferred = false
local uncounted = ARGV[10] == '0'
if uncounted then
  j.attempts = math.max(0, j.attempts - 1)
elseif retry_after >= 0 and tonumber(ARGV[6]) > 0 then
  if j.deferrals < max_deferrals then
    deferred = true
    j.deferrals = j.deferrals + 1
    j.attempts = j.attempts - 1
    delay = retry_after
    error_text = error_text .. ' (Retry-After: deferred ' .. ms_text(retry_after) ..
                 ' ms, deferral ' .. j.deferrals .. ' of ' .. max_deferrals ..
                 ', attempt not counted)'
  else
    error_text = error_text .. ' (Retry-After not honoured: ' .. j.deferrals .. ' of ' ..
                 max_deferrals .. ' deferrals used; an ordinary failed attempt)'
  end
end
local max_retry = tonumber(ARGV[13] or '0')
local expired = false
if max_retry > 0 and j.first ~= '' and now - tonumber(j.first) >= max_retry then
  expired = true
  if (ARGV[14] or '') ~= '' then
    error_text = ARGV[14] .. '; last: ' .. ARGV[7]
  else
    error_text = ARGV[7] .. ' (retrying for longer than max_retry_duration_s: ' ..
                 ms_text(max_retry / 1000) .. ' s since the first attempt)'
  end
end
redis.call('ZREM', KEYS[2], key)
redis.call('HSET', KEYS[5], key, ms_text(now) .. '|' .. error_text)
j.lease = ''
j.max = ''
count(KEYS[8], topic, 'w', -1)
stat(KEYS[6], topic, 'failed', 1, now)  -- a deferral is a delivery that failed too
if expired or (not deferred and not uncounted and j.attempts >= tonumber(ARGV[6])) then
  j.state = 'x'
  record_set(key, record_text(j), from)
  redis.call('ZADD', KEYS[4], now, key)
  count(KEYS[8], topic, 'x', 1)
  stat(KEYS[6], topic, 'dead', 1, now)
  if ARGV[11] == '1' then dead_callback_add(key, j, error_text, now) end
  remember_end(key, 'x', j, body_of(j, key, kTag .. ':bodies'), ARGV[12], now, error_text)
  dep_ended(key, 'x', error_text, now)
  return 2
end
local next_due = ms_text(now + delay)
if j.expires ~= '' and now + delay >= tonumber(j.expires) then
  -- Its next attempt would come after its ttl or expire_at: it ends now
  -- (counted out of working above already).
  end_unsent(key, j, from, topic, KEYS[6], nil, KEYS[5], ARGV[12],
             'expires at ' .. j.expires .. ' (ms), before its next attempt at ' .. next_due ..
             '; last: ' .. error_text, 'ttl_expired', now)
  return 4
end
wake_timer_if_first(KEYS[3], KEYS[7], next_due)
j.state = 'y'
j.due = next_due
local bucket = bucket_of(key)
record_set(key, record_text(j), from, bucket)  -- into its bucket
due_add(bucket, key, next_due)
count(KEYS[8], topic, 'y', 1)
return deferred and 3 or 1
