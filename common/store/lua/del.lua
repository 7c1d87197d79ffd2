-- del: remove a job wherever it is (delayed, retrying, ready, working, dead).
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] working
-- KEYS[5] ready list of topic  KEYS[6] dead zset of topic  KEYS[7] errors
-- KEYS[8] stats of the day  KEYS[9] counts  KEYS[10] moving
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] the topic's end memory (remember_end)
-- A delete is remembered only for the topic's history (GET answers
-- "deleted"), never for its dedup window: it is the producer's own act, and
-- a delete then an add of the same body is how a job is moved to another time.
-- A deleted job that some job waits for is an ended job to its waiters
-- (dep_ended: they die or are released as their topic's
-- on_dependency_dead says); a deleted waiting job leaves its waiting sets.
-- Returns {1, state} when deleted, {0, ''} when there was no such job.
local key, topic = ARGV[1], ARGV[2]
local bucket = bucket_of(key)
local record, from = record_get(key, bucket)
local j = parse_record(record)
if not j then
  return {0, ''}
end
unlink_job(key, j, KEYS[5], KEYS[4], KEYS[6], from, bucket)
local names = {d = 'delayed', r = 'ready', w = 'working', y = 'retrying', x = 'dead', b = 'waiting'}
local now = redis_now()
if (ARGV[3] or '0') ~= '0' then
  remember_end(key, 'd', j, body_of(j, key, KEYS[2]), ARGV[3], now,
               'deleted while ' .. (names[j.state] or j.state))
end
-- Its waiters learn it was deleted: a dead letter's waiters heard of its
-- death already.
if j.state ~= 'x' then dep_ended(key, 'd', 'deleted while ' .. (names[j.state] or j.state), now) end
record_del(key, from, bucket)
if j.rest == '' then redis.call('HDEL', KEYS[2], key) end  -- the body is apart
redis.call('HDEL', KEYS[7], key)
count(KEYS[9], topic, j.state, -1)
stat(KEYS[8], topic, 'deleted', 1, now)
-- A job being moved to its home (move_mark.lua): its mark is flagged, so
-- the mover drops the copy it wrote on the target, or is about to write.
local marked = redis.call('HGET', KEYS[10], key)
if marked then
  redis.call('HSET', KEYS[10], key, string.match(marked, '^([^|]*|[^|]*|[^|]*|)') .. 'deleted')
end
return {1, j.state}
