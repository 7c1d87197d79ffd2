-- move_in: writes jobs moved to their home shard (move_mark.lua marked them
-- on their source; checker/shard_mover.h) here, keeping state, body, due
-- time, attempts, deferrals, created time and last error; each gets an
-- incarnation of this shard. A pending job goes into its due zset as it
-- was: the source took its copy out of its own (so it is never due on two
-- shards), and marks only jobs due well after the move ends. A dead job is
-- written dead, at its death time. A waiting job (b) waits here for the
-- same jobs, in its topic's waiting set (and expiry set when it has one).
-- The jobs registered on the source as waiting for a moved job are
-- registered here too (dep_register.lua's sets), so its end here releases
-- them; the source's registrations stay until the mover carries them
-- (dep_carry_*.lua), so one that came during the move is not lost.
-- KEYS[1] bodies  KEYS[2] counts  KEYS[3] seq  KEYS[4] errors  KEYS[5] timer wake list
-- ARGV[1] dead key prefix, then seven per job: job key, record as the
-- source held it, body when not inline, last error, dead score ('' unless
-- dead), the jobs it waits for ('\n'-joined, b only), the jobs waiting for
-- it ('\n'-joined, '' none).
-- Returns two per job: verdict (0 written, 1 here already with the same
-- body: moved before, 2 this shard holds the id with another body: not
-- written) and the incarnation of the copy here ('' for 2).
-- function flags: none
local out = {}
for a = 2, #ARGV, 7 do
  local key = ARGV[a]
  local j = parse_record(ARGV[a + 1])
  if not j then return redis.error_reply('move_in: bad record of ' .. key) end
  local body = j.rest ~= '' and string.sub(j.rest, 2) or ARGV[a + 2]
  local existing = parse_record(record_get(key))
  -- The waiters go with the job this shard holds now (written, or moved
  -- before): never to another job of the id (answer 2: the move is undone).
  local waiters = ARGV[a + 6]
  if waiters ~= '' and (not existing or body_of(existing, key, KEYS[1]) == body) then
    redis.call('SADD', kAwaited, key)
    add_waiters(key, waiters)
  end
  if existing then
    if body_of(existing, key, KEYS[1]) == body then
      out[#out + 1] = 1
      out[#out + 1] = existing.inc
    else
      out[#out + 1] = 2
      out[#out + 1] = ''
    end
  else
    local topic = topic_of(key)
    local bucket = bucket_of(key)
    j.inc = string.format('%d', redis.call('INCR', KEYS[3]))
    j.lease, j.max = '', ''
    if j.state == 'x' then
      redis.call('ZADD', tagged(ARGV[1]) .. topic, ARGV[a + 4], key)
    elseif j.state == 'b' then
      redis.call('ZADD', kWaitingPrefix .. topic, j.due, key)
      redis.call('HSET', kAfter, key, ARGV[a + 5])
      if j.expires ~= '' then redis.call('ZADD', kWaitingExpiry, j.expires, key) end
    else
      wake_timer_if_first(kDueIndex, KEYS[5], j.due)
      due_add(bucket, key, j.due)
    end
    record_set(key, record_text(j), nil, bucket)
    if j.rest == '' then redis.call('HSET', KEYS[1], key, body) end
    if ARGV[a + 3] ~= '' then redis.call('HSET', KEYS[4], key, ARGV[a + 3]) end
    count(KEYS[2], topic, j.state, 1)
    out[#out + 1] = 0
    out[#out + 1] = j.inc
  end
end
return out
