-- move_mark: on a draining shard, marks jobs as being moved to another shard
-- (checker/shard_mover.h). A delayed or retrying job leaves its due zset (the
-- timer never delivers it here again), a dead one its dead zset; its record
-- stays, so gets and deletes by id still find it, and {dq}:moving names the
-- target (and a dead job's death time). Jobs in flight or held are left until
-- they finish. A job marked already is answered again, with the target it was
-- marked for: a mover restarted after a crash finishes what it began.
-- KEYS[1] moving  KEYS[2] bodies  KEYS[3] errors
-- ARGV[1] dead key prefix, then pairs: job key, target shard name
-- Returns {key, target, record, body ('' when inline), last error, dead score
-- ('' unless dead), ...} of each job marked now or before.
local out = {}
for a = 2, #ARGV, 2 do
  local key = ARGV[a]
  local marked = redis.call('HGET', KEYS[1], key)
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and not marked and (j.state == 'd' or j.state == 'y' or j.state == 'x') then
    local score = ''
    if j.state == 'x' then
      local dead_key = ARGV[1] .. topic_of(key)
      score = redis.call('ZSCORE', dead_key, key) or ms_text(redis_now())
      redis.call('ZREM', dead_key, key)
    elseif from == 'flat' then
      redis.call('ZREM', kFlatDelayed, key)  -- a store v2 record
    else
      due_remove(bucket_of(key), key)
    end
    marked = ARGV[a + 1] .. '|' .. score
    redis.call('HSET', KEYS[1], key, marked)
  end
  if j and marked then
    local target, score = string.match(marked, '^([^|]*)|(.*)$')
    local body = ''
    if j.rest == '' then body = redis.call('HGET', KEYS[2], key) or '' end
    out[#out + 1] = key
    out[#out + 1] = target
    out[#out + 1] = record
    out[#out + 1] = body
    out[#out + 1] = redis.call('HGET', KEYS[3], key) or ''
    out[#out + 1] = score
  elseif marked then
    redis.call('HDEL', KEYS[1], key)  -- its job is gone (deleted)
  end
end
return out
