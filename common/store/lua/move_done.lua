-- move_done: ends the move of a job marked by move_mark.lua on its source.
-- ARGV[2] 'done': the target holds it now, the source's copy goes and the
-- shard's moved counter grows; 'undo': the target could not take it (it
-- holds another job of that id), so it is delayed or dead here again.
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] errors  KEYS[4] counts
-- KEYS[5] moving  KEYS[6] moved counter  KEYS[7] timer wake list
-- ARGV[1] job key  ARGV[3] dead key prefix
-- Returns 1 done, 2 undone, 0 not marked (deleted during the move).
local key = ARGV[1]
local marked = redis.call('HGET', KEYS[5], key)
if not marked then return 0 end
redis.call('HDEL', KEYS[5], key)
local record, from = record_get(key)
local j = parse_record(record)
if not j then return 0 end
local topic = topic_of(key)
if ARGV[2] == 'undo' then
  if j.state == 'x' then
    redis.call('ZADD', ARGV[3] .. topic, string.match(marked, '|(.*)$'), key)
  else
    wake_timer_if_first(kDueIndex, KEYS[7], j.due)
    due_add(bucket_of(key), key, j.due)
  end
  return 2
end
record_del(key, from)
if j.rest == '' then redis.call('HDEL', KEYS[2], key) end
redis.call('HDEL', KEYS[3], key)
count(KEYS[4], topic, j.state, -1)
redis.call('INCR', KEYS[6])
return 1
