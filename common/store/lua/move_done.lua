-- move_done: ends the moves of jobs marked by move_mark.lua on their source.
-- Per job 'done': the target holds it now, the source's copy goes and the
-- shard's moved counter grows; 'undo': the target could not take it (it
-- holds another job of that id), so it is delayed or dead here again;
-- 'dropped': the job was deleted during its move and the target's copy is
-- gone. A job deleted during its move keeps its mark after 'done' (the
-- target holds a copy to drop: the mover drops it, then says 'dropped'), so
-- a crash before the drop leaves the mark to redo it. A waiting job's
-- waiting entries go with its record. The jobs registered here as waiting
-- for a moved job stay registered until the mover carries them
-- (dep_carry_done.lua).
-- KEYS[1] bodies  KEYS[2] errors  KEYS[3] counts  KEYS[4] moving
-- KEYS[5] moved counter  KEYS[6] timer wake list
-- ARGV[1] dead key prefix, then pairs: job key, 'done', 'undo' or 'dropped'
-- Returns per job: 1 done, 2 undone, 3 deleted during the move, 0 not
-- marked (done before).
local out = {}
for a = 2, #ARGV, 2 do
  local key = ARGV[a]
  local marked = redis.call('HGET', KEYS[4], key)
  local verdict = 0
  if marked then
    local _, score, _, flag = string.match(marked, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    local record, from = record_get(key)
    local j = parse_record(record)
    local topic = topic_of(key)
    if flag == 'deleted' or not j then
      if ARGV[a + 1] ~= 'done' then redis.call('HDEL', KEYS[4], key) end
      verdict = 3
    else
      redis.call('HDEL', KEYS[4], key)
    end
    if verdict == 3 then
      -- ended above (or kept for the drop)
    elseif ARGV[a + 1] == 'undo' then
      if j.state == 'x' then
        redis.call('ZADD', tagged(ARGV[1]) .. topic, score, key)
      elseif j.state == 'b' then
        -- its waiting entries never left
      else
        wake_timer_if_first(kDueIndex, KEYS[6], j.due)
        due_add(bucket_of(key), key, j.due)
      end
      verdict = 2
    else
      record_del(key, from)
      if j.state == 'b' then waiting_remove(key) end
      if j.rest == '' then redis.call('HDEL', KEYS[1], key) end
      redis.call('HDEL', KEYS[2], key)
      count(KEYS[3], topic, j.state, -1)
      redis.call('INCR', KEYS[5])
      verdict = 1
    end
  end
  out[#out + 1] = verdict
end
return out
