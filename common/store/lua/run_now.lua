-- run_now: a delayed or retrying job becomes due at Redis's now, its
-- attempts kept (asynq's and BullMQ's "run now", Cloud Tasks' RunTask).
-- A job waiting for its dependencies (b) stops waiting for them, due now
-- ({1, 'b', now}).
-- KEYS[1] records prefix  KEYS[2] due index  KEYS[3] timer wake list
-- ARGV[1] job key
-- Returns {1, state, due} when it was moved to now; {2, state, due} when it
-- is due already (ready, working, or delayed with its due time passed);
-- {3, 'x', due} for a dead letter (nothing changed: requeue it);
-- {4, state, due} while it is being moved to its home shard (move_mark.lua
-- took it out of its due zset and the mover copies its record: a change
-- now could make it due on two shards);
-- {0, '', 0} when there is no such job here.
local key = ARGV[1]
local bucket = bucket_of(key)
local record, from = record_get(key, bucket)
local j = parse_record(record)
if not j then
  return {0, '', 0}
end
if j.state == 'x' then
  return {3, 'x', tonumber(j.due)}
end
if redis.call('HEXISTS', kTag .. ':moving', key) == 1 then
  return {4, j.state, tonumber(j.due)}
end
local now = redis_now()
if j.state == 'b' then
  -- Waiting for its dependencies: it stops waiting, due now. Its
  -- registrations on their shards are left; the releaser finds it no
  -- longer waiting and drops them.
  waiting_remove(key)
  j.state, j.due = 'd', ms_text(now)
  wake_timer_if_first(KEYS[2], KEYS[3], j.due)
  record_set(key, record_text(j), from, bucket)
  due_add(bucket, key, j.due)
  count(kTag .. ':counts', topic_of(key), 'b', -1)
  count(kTag .. ':counts', topic_of(key), 'd', 1)
  return {1, 'b', now}
end
if (j.state ~= 'd' and j.state ~= 'y') or tonumber(j.due) <= now then
  return {2, j.state, tonumber(j.due)}
end
local due = ms_text(now)
unlink_job(key, j, nil, nil, nil, from, bucket)  -- out of its due zset (or store v2's)
wake_timer_if_first(KEYS[2], KEYS[3], due)  -- before lowering: compares with the old first
j.due = due
record_set(key, record_text(j), from, bucket)
due_add(bucket, key, due)
return {1, j.state, now}
