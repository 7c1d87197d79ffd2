-- move_mark: marks jobs as being moved to their home shard
-- (checker/shard_mover.h). A delayed or retrying job leaves its due zset (the
-- timer never delivers it here again), a dead one its dead zset; its record
-- stays, so gets, adds and deletes by id still find it, and {dq}:moving
-- holds "target|dead score|created|" (the dead score '' unless dead). A job
-- waiting for others (b) keeps its waiting entries: while it is marked,
-- dep_release.lua answers 'moving' and the releaser asks again (it finds
-- the target's copy, or this one after an undo). Jobs in
-- flight are left until they finish, and pending ones due within ARGV[2] ms:
-- a job is never due on its target before its move has ended (a delete
-- during the move drops the target's copy first). A job marked already is
-- answered again, with the target it was marked for: a mover restarted
-- after a crash finishes what it began. A mark del.lua flagged "deleted"
-- (the job was deleted during its move) is answered with an empty record,
-- so the mover drops the target's copy before move_done.lua clears it.
-- KEYS[1] moving  KEYS[2] bodies  KEYS[3] errors
-- ARGV[1] dead key prefix  ARGV[2] how long from now a pending job must not
-- be due to be marked (ms), then pairs: job key, target shard name
-- Returns {key, target, record ('' when deleted), body ('' when inline), last
-- error, dead score, created, after, waiters, ...} of each job marked now or
-- before; after: a waiting job's remaining dependencies ('\n'-joined, '' for
-- any other), waiters: the jobs registered here as waiting for it
-- (dep_register.lua; '\n'-joined, '' when none): its target registers them,
-- so the job's end there releases them.
local out = {}
local earliest = redis_now() + tonumber(ARGV[2])
for a = 3, #ARGV, 2 do
  local key = ARGV[a]
  local marked = redis.call('HGET', KEYS[1], key)
  local record = false
  local j = nil
  if not marked then
    record = record_get(key)
    j = parse_record(record)
    if j and (j.state == 'x' or j.state == 'b' or
              (j.state == 'd' or j.state == 'y') and tonumber(j.due) >= earliest) then
      local score = ''
      if j.state == 'x' then
        local dead_key = tagged(ARGV[1]) .. topic_of(key)
        score = redis.call('ZSCORE', dead_key, key) or ms_text(redis_now())
        redis.call('ZREM', dead_key, key)
      elseif j.state == 'b' then
        -- in no due zset: its waiting entries stay until its move ends
      else
        local _, from = record_get(key)
        if from == 'flat' then
          redis.call('ZREM', kFlatDelayed, key)  -- a store v2 record
        else
          due_remove(bucket_of(key), key)
        end
      end
      marked = ARGV[a + 1] .. '|' .. score .. '|' .. j.created .. '|'
      redis.call('HSET', KEYS[1], key, marked)
    else
      marked = false
    end
  end
  if marked then
    local target, score, created, flag = string.match(marked, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    local body, error_text, after, waiters = '', '', '', ''
    if flag == 'deleted' then
      record = ''
    else
      if not record then record = record_get(key) end
      j = parse_record(record)
      if j and j.rest == '' then body = redis.call('HGET', KEYS[2], key) or '' end
      error_text = redis.call('HGET', KEYS[3], key) or ''
      if j and j.state == 'b' then after = redis.call('HGET', kAfter, key) or '' end
      if redis.call('SISMEMBER', kAwaited, key) == 1 then
        waiters = table.concat(redis.call('SMEMBERS', kWaitersPrefix .. key), '\n')
      end
      record = record or ''
    end
    out[#out + 1] = key
    out[#out + 1] = target
    out[#out + 1] = record
    out[#out + 1] = body
    out[#out + 1] = error_text
    out[#out + 1] = score
    out[#out + 1] = created
    out[#out + 1] = after
    out[#out + 1] = waiters
  end
end
return out
