-- promote: move due jobs to their topic's ready list.
-- KEYS[1] records prefix  KEYS[2] due index  KEYS[3] consumer wake list  KEYS[4] counts
-- KEYS[5] today's stats
-- ARGV[1] batch limit  ARGV[2] ready key prefix ("{dq}:ready:")
-- ARGV[3] the pull topics, '|a|b|' ('': none): each that gets ready jobs is
-- published on {dq}:ready (publish_ready)
-- then per topic whose delivery window is closed, three entries: topic,
-- when the window opens (ms), the spacing of its held jobs (ms, fractional;
-- 0: all at the opening).
-- A due job of such a topic is held, not made ready: it stays delayed (or
-- retrying), attempts unchanged, due at the opening + k x spacing, k
-- counted per topic and opening on this shard ({dq}:window:<topic>:<opens>),
-- so the opening is spread at the topic's rate; its lease field says
-- 'window' (a pending job has no lease), which GET reads as the reason it
-- waits. The caller computes the window on an estimate of Redis's clock:
-- the script holds only while Redis's now is before the opening.
-- "Due" is by Redis's clock, so a host whose clock is ahead never promotes
-- early. The ready keys are built from the prefix; they share the hash tag.
-- The due index gives the buckets whose earliest due has passed; in each,
-- the due zset gives the jobs that are due, first due first. They move, and
-- the bucket's index score becomes its earliest due left (or the bucket
-- leaves the index). Nothing is scanned: a job that is not due is not read.
-- A promoted record moves from its bucket to the flat hash, as state r.
-- (A shard written by store v2 is converted once, by store_upgrade.lua,
-- before its first promote.)
-- Returns {moved, next due ms or -1, Redis's now ms, held}.
local now = redis_now()
local limit = tonumber(ARGV[1])
local kLetterD, kLetterY, kBar = string.byte('d'), string.byte('y'), string.byte('|')

local moved, held = 0, 0
local per_topic, topics = {}, {}
local holds, held_topics = {}, {}
for i = 4, #ARGV, 3 do
  local opens = tonumber(ARGV[i + 1])
  if now < opens then
    holds[ARGV[i]] = {opens = opens, spacing = tonumber(ARGV[i + 2]), next = nil,
                      counter = kTag .. ':window:' .. ARGV[i] .. ':' .. ARGV[i + 1]}
  end
end
-- The held job's new due time: the opening + k x spacing, k its number
-- among the jobs held for that opening on this shard.
local function hold_due(topic, hold)
  if not hold.next then
    hold.next = tonumber(redis.call('GET', hold.counter) or '0')
    hold.count = 0
    held_topics[#held_topics + 1] = topic
  end
  hold.count = hold.count + 1
  local due = hold.opens + math.floor(hold.next * hold.spacing)
  hold.next = hold.next + 1
  return due
end
-- A bucket's due zset is read from its first job on, kWindow jobs at a time
-- (ZRANGE by rank, cheaper than ZRANGEBYSCORE): the due ones move, and the
-- first one left is the bucket's new index score. The index changes are
-- written once for all buckets.
local kWindow = 8
local bounds, gone = {}, {}
local flat_out = {}  -- the promoted records, into the flat hash at the end
local buckets = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ms_text(now), 'LIMIT', '0', int_text(limit))
for _, bucket in ipairs(buckets) do
  if moved + held >= limit then break end
  local due_zset = due_key(bucket)
  local keys, next_due, start = {}, nil, 0
  local held_due, held_records = {}, {}  -- this bucket's held jobs
  repeat
    local part = redis.call('ZRANGE', due_zset, int_text(start), int_text(start + kWindow - 1), 'WITHSCORES')
    for n = 1, #part, 2 do
      if moved + held + #keys >= limit or tonumber(part[n + 1]) > now then
        next_due = part[n + 1]
        break
      end
      keys[#keys + 1] = part[n]
    end
    start = start + kWindow
  until next_due or #part < 2 * kWindow
  if #keys > 0 then
    local records_key = KEYS[1] .. bucket
    local records = redis.call('HMGET', records_key, unpack(keys))
    local left = {}
    for n, key in ipairs(keys) do
      local record = records[n]
      local letter, bar = false, false
      if record then letter, bar = string.byte(record, 1, 2) end
      -- Anything else is an entry its job left behind (never written so):
      -- it only leaves the zset below.
      local topic = bar == kBar and topic_of(key)
      local hold = topic and (letter == kLetterD or letter == kLetterY) and holds[topic]
      local j = hold and parse_record(record)
      if j then
        local due = hold_due(topic, hold)
        j.due, j.lease = ms_text(due), 'window'
        held_records[#held_records + 1] = key
        held_records[#held_records + 1] = record_text(j)
        held_due[#held_due + 1] = due
        held_due[#held_due + 1] = key
        held = held + 1
      elseif bar == kBar and (letter == kLetterD or letter == kLetterY) then
        -- Only the state letter changes: the record is 'r' and the rest as
        -- stored (an inline body too), no parse and no number format.
        local state = letter == kLetterD and 'd' or 'y'
        local entry = per_topic[topic]
        if not entry then
          entry = {keys = {}, d = 0, y = 0}
          per_topic[topic] = entry
          topics[#topics + 1] = topic
        end
        entry[state] = entry[state] + 1
        entry.keys[#entry.keys + 1] = key
        left[#left + 1] = key
        flat_out[#flat_out + 1] = key
        flat_out[#flat_out + 1] = 'r' .. string.sub(record, 2)
        moved = moved + 1
      end
    end
    if #left > 0 then bulk_write('HDEL', records_key, left) end
    redis.call('ZREMRANGEBYRANK', due_zset, '0', int_text(#keys - 1))  -- the zset's first ones
  end
  if #held_due > 0 then
    -- Back in the bucket, due at the opening: the bucket's earliest due may
    -- now be a held one (or the bucket had no other job left).
    bulk_write('HSET', KEYS[1] .. bucket, held_records)
    bulk_write('ZADD', due_zset, held_due)
    local first = redis.call('ZRANGE', due_zset, '0', '0', 'WITHSCORES')
    next_due = first[2]
  end
  if next_due then
    bounds[#bounds + 1] = next_due
    bounds[#bounds + 1] = bucket
  else
    gone[#gone + 1] = bucket
  end
end
bulk_write('HSET', kFlatRecords, flat_out)
bulk_write('ZADD', KEYS[2], bounds)
bulk_write('ZREM', KEYS[2], gone)
for _, topic in ipairs(topics) do
  local entry = per_topic[topic]
  if entry.d > 0 then count(KEYS[4], topic, 'd', -entry.d) end
  if entry.y > 0 then count(KEYS[4], topic, 'y', -entry.y) end
  count(KEYS[4], topic, 'r', #entry.keys)
  bulk_write('RPUSH', tagged(ARGV[2]) .. topic, entry.keys)
  publish_ready(ARGV[3], topic)
end
for _, topic in ipairs(held_topics) do
  local hold = holds[topic]
  -- The count outlives the opening by a minute: no job is held for an
  -- opening that has passed.
  redis.call('SET', hold.counter, string.format('%d', hold.next), 'PXAT', ms_text(hold.opens + 60000))
  stat(KEYS[5], topic, 'window_held', hold.count, now)
end
if moved > 0 then
  -- One token per job (at most 64) wakes that many blocked consumers.
  local tokens = {}
  for i = 1, math.min(moved, 64) do tokens[i] = '1' end
  redis.call('LPUSH', KEYS[3], unpack(tokens))
  redis.call('LTRIM', KEYS[3], '0', '255')
end
local first = redis.call('ZRANGE', KEYS[2], '0', '0', 'WITHSCORES')
if first[2] == nil then
  return {moved, -1, now, held}
end
return {moved, first[2], now, held}
