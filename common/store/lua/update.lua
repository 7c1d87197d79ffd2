-- update: a pending job gets a new body and/or due time in place, in one
-- step: it never stops existing (a delete then an add leaves a gap).
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] timer wake list
-- KEYS[5] working  KEYS[6] ready list of topic  KEYS[7] errors  KEYS[8] counts
-- KEYS[9] seq  KEYS[10] moving  KEYS[11] stats of the day
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] '1' a new body is given ('0': kept)
-- ARGV[4] the new body  ARGV[5] 'keep', 'delay' (ms from Redis's now) or 'at'
-- (epoch ms; one in the past is due at Redis's now)  ARGV[6] the ms
-- ARGV[7] when it expires: 'keep' (as before; also none), 'ttl:<ms>' that
-- long after its new due time, 'at:<ms>' at that epoch ms
-- The updated job is a new version: delayed, attempts and deferrals back to
-- 0, last error cleared, created kept, and a new incarnation from {dq}:seq.
-- The incarnation is what a reserve hands to the consumer and what ack.lua,
-- fail.lua and requeue_expired.lua check: the answer of a delivery of the
-- old version (leased before this update) finds another incarnation and
-- changes nothing, so it neither removes the new version nor writes an
-- ended record for it. A record without an incarnation (older stores) gets
-- one here. 'keep' keeps the due time of a delayed or retrying job; a ready
-- or working one is due at once (its due time has passed).
-- Returns {1, previous state, due ms, incarnation} when updated;
-- {3, 'x', due, ''} for a dead letter (nothing changed: requeue it);
-- {6, 'b', due, ''} for a job waiting for its dependencies (nothing
-- changed: delete it and add it again, or run it now);
-- {4, state, due, ''} when the job is being moved to another shard (nothing
-- changed: retry); {5, state, due, expires} when it would expire at or
-- before its new due time (nothing changed); {0, '', 0, ''} when there is no
-- such job here.
-- function flags: none
local key, topic = ARGV[1], ARGV[2]
local bucket = bucket_of(key)
local record, from = record_get(key, bucket)
local j = parse_record(record)
if not j then
  return {0, '', 0, ''}
end
if j.state == 'x' then
  return {3, 'x', tonumber(j.due), ''}
end
if j.state == 'b' then
  return {6, 'b', tonumber(j.due), ''}
end
-- move_mark.lua took the job out of its due zset and the mover copies its
-- record: a change now could be lost with the copy.
if redis.call('HEXISTS', KEYS[10], key) == 1 then
  return {4, j.state, tonumber(j.due), ''}
end
local now = redis_now()
local due_ms
if ARGV[5] == 'delay' then
  due_ms = now + tonumber(ARGV[6])
elseif ARGV[5] == 'at' then
  due_ms = math.max(now, tonumber(ARGV[6]))
elseif j.state == 'd' or j.state == 'y' then
  due_ms = math.max(now, tonumber(j.due))
else
  due_ms = now
end
local due = ms_text(due_ms)
local expires = j.expires
local how, ms = string.match(ARGV[7] or 'keep', '^(%a+):(%d+)$')
if how == 'ttl' then
  expires = ms_text(due_ms + tonumber(ms))
elseif how == 'at' then
  expires = ms
end
if expires ~= '' and tonumber(expires) <= due_ms then
  return {5, j.state, due_ms, expires}
end
local previous = j.state
unlink_job(key, j, KEYS[6], KEYS[5], nil, from, bucket)
if ARGV[3] == '1' then
  if j.rest == '' then redis.call('HDEL', KEYS[2], key) end  -- the old body was apart
  local meta = 'd|0|' .. due .. '|' .. j.created .. '|' ..
               ms_text(redis.call('INCR', KEYS[9])) .. '||'
  local new, body_apart = new_record(meta, ARGV[4])
  if body_apart then redis.call('HSET', KEYS[2], key, ARGV[4]) end
  j = parse_record(new)
else
  j.inc = ms_text(redis.call('INCR', KEYS[9]))
  -- A new version starts over: max_retry_duration_s's clock (first) too.
  j.state, j.attempts, j.deferrals, j.due, j.lease, j.max, j.first = 'd', 0, 0, due, '', '', ''
end
j.expires = expires
redis.call('HDEL', KEYS[7], key)
wake_timer_if_first(KEYS[3], KEYS[4], due)  -- before lowering: compares with the old first
record_set(key, record_text(j), from, bucket)
due_add(bucket, key, due)
count(KEYS[8], topic, previous, -1)
count(KEYS[8], topic, 'd', 1)
stat(KEYS[11], topic, 'updated', 1, now)
return {1, previous, due_ms, j.inc}
