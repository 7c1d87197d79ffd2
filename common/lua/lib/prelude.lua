-- Prelude: prepended to every script in common/lua/ at build time
-- (cmake/embed_lua.cmake), so each script stays one EVALSHA.
--
-- Store v3. A job's record lives in the bucket hash {dq}:jobs:<b>, field
-- "topic:id", b = bucket_of("topic:id") (65,521 buckets, small enough to be
-- listpacks: the job key is stored once, with no hashtable entry around it).
-- Its meta is "state|attempts|due|created|inc|lease|max":
--   state    d delayed, r ready, w working (leased), y retrying, x dead,
--            h held (added while a shard that may hold the id was unreachable)
--   attempts delivery attempts started so far
--   due      due time, ms by Redis's clock
--   created  creation time, ms by Redis's clock
--   inc      incarnation: unique per add on this shard ({dq}:seq), so a job
--            deleted and re-added is a different job to a stale ack
--   lease    the reserve id that leased it (state w only)
--   max      the topic's max attempts when it was leased (state w only)
-- A record is that meta alone, or the meta, '\n' and the body: a body of at
-- most kInlineBody bytes (most jobs) is stored inline, which saves a second
-- hashtable entry and its 23-byte key copy per job (~90 bytes of Redis) and
-- a command per transition. A bigger body sits in {dq}:bodies, written once,
-- so no state change copies it. A record without '\n' (also every record of
-- store v2) has its body in {dq}:bodies.
-- The due index {dq}:due has one member per bucket holding delayed or
-- retrying jobs, scored with a lower bound of their earliest due: writers
-- only ever lower it (ZADD LT); promote scans a bucket whose score has
-- passed, moves what is due and sets the bucket's true next due (or drops
-- it). So the index is never later than a job, and a stale score only
-- costs one scan.
-- Store v2 kept the records in one hash {dq}:jobs and delayed jobs in the
-- zset {dq}:delayed; record_get reads a job still there (moving it), and
-- promote moves the rest in batches (migrate_some).
local kInlineBody = 256
local kRecordsPrefix = '{dq}:jobs:'
local kDueIndex = '{dq}:due'
local kFlatRecords, kFlatDelayed = '{dq}:jobs', '{dq}:delayed'
local kBuckets = 65521

-- h = (h * 31 + byte) mod 65521 over the key's bytes, six at a time (exact
-- in doubles: 65,520 * 31^6 + ... < 2^53); common/keys.h computes the same.
-- ~1 us for a 23-byte key: callers pass the bucket when they can.
local byte = string.byte
local function bucket_of(key)
  local h, n, i = 0, #key, 1
  while i + 5 <= n do
    local a, b, c, d, e, f = byte(key, i, i + 5)
    h = ((((((h * 31 + a) * 31 + b) * 31 + c) * 31 + d) * 31 + e) * 31 + f) % kBuckets
    i = i + 6
  end
  while i <= n do
    h = (h * 31 + byte(key, i)) % kBuckets
    i = i + 1
  end
  return h
end

local function records_key(bucket)
  return kRecordsPrefix .. bucket
end

-- Lowers the due index of a bucket to `due` (adds it when absent).
local function due_lower(bucket, due)
  redis.call('ZADD', kDueIndex, 'LT', due, bucket)
end

-- Sets a bucket's due bound to the earliest due of its delayed and retrying
-- jobs, or drops it from the index when it has none (a bucket holds a few
-- dozen records). Used where a delayed job leaves, so that a deleted job
-- does not wake the timer for nothing.
local function due_refresh(bucket)
  local all = redis.call('HGETALL', records_key(bucket))
  local earliest = nil
  for n = 2, #all, 2 do
    local due = string.match(all[n], '^[dy]|%d+|(%d+)|')
    if due then
      due = tonumber(due)
      if earliest == nil or due < earliest then earliest = due end
    end
  end
  if earliest then
    redis.call('ZADD', kDueIndex, earliest, bucket)
  else
    redis.call('ZREM', kDueIndex, bucket)
  end
end

-- Store v2 leftovers: whether this shard still has a flat records hash,
-- asked once per script call.
local flat_checked, flat_present = false, false
local function flat_exists()
  if not flat_checked then
    flat_checked = true
    flat_present = redis.call('EXISTS', kFlatRecords) == 1
  end
  return flat_present
end

-- Moves one job from the store v2 layout into its bucket; returns its record.
local function migrate_one(key, record, bucket)
  redis.call('HSET', records_key(bucket), key, record)
  redis.call('HDEL', kFlatRecords, key)
  local letter = string.sub(record, 1, 1)
  if letter == 'd' or letter == 'y' then
    local due = string.match(record, '^%a|%d+|(%d+)|')
    redis.call('ZREM', kFlatDelayed, key)
    if due then due_lower(bucket, due) end
  end
  return record
end

-- The job's record (false when there is none). bucket: bucket_of(key) when
-- the caller knows it.
local function record_get(key, bucket)
  bucket = bucket or bucket_of(key)
  local record = redis.call('HGET', records_key(bucket), key)
  if not record and flat_exists() then
    local old = redis.call('HGET', kFlatRecords, key)
    if old then record = migrate_one(key, old, bucket) end
  end
  return record
end

local function record_set(key, record, bucket)
  redis.call('HSET', records_key(bucket or bucket_of(key)), key, record)
end

local function record_del(key, bucket)
  redis.call('HDEL', records_key(bucket or bucket_of(key)), key)
end

-- Every time a script uses comes from Redis's clock, never the host's.
local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function ms_text(ms)
  return string.format('%.0f', ms)
end

local function parse_meta(text)
  if not text then return nil end
  local s, a, d, c, i, l, m = string.match(text, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(%d*)$')
  if not s then return nil end
  return {state = s, attempts = tonumber(a), due = d, created = c, inc = i, lease = l, max = m}
end

local function meta_text(j)
  return j.state .. '|' .. string.format('%d', j.attempts) .. '|' .. j.due .. '|' .. j.created ..
         '|' .. j.inc .. '|' .. j.lease .. '|' .. j.max
end

-- A record read by HGET/HMGET -> the job's fields, plus `rest`: '' when the
-- body is in {dq}:bodies, else '\n' and the inline body, kept as stored.
local function parse_record(record)
  if not record then return nil end
  local nl = string.find(record, '\n', 1, true)
  local j
  if nl then
    j = parse_meta(string.sub(record, 1, nl - 1))
    if j then j.rest = string.sub(record, nl) end
  else
    j = parse_meta(record)
    if j then j.rest = '' end
  end
  return j
end

local function record_text(j)
  return meta_text(j) .. j.rest
end

-- The record of a new job: its meta, with the body inline when it is small.
-- Returns the record and whether the body must go to {dq}:bodies.
local function new_record(meta, body)
  if #body <= kInlineBody then return meta .. '\n' .. body, false end
  return meta, true
end

-- The job's body: inline, or from {dq}:bodies (false when absent).
local function body_of(j, key, bodies_key)
  if j.rest ~= '' then return string.sub(j.rest, 2) end
  return redis.call('HGET', bodies_key, key)
end

local function topic_of(key)
  return string.match(key, '^([^:]+):')
end

-- Per topic and state job counts ({dq}:counts "topic:state"), for gauges.
local function count(counts_key, topic, state, delta)
  redis.call('HINCRBY', counts_key, topic .. ':' .. state, delta)
end

-- Per topic event counters ("topic:event"), kept three ways:
--   stats_key          the day's counters (KEYS, named by the caller), 40 days
--   {dq}:totals        since the shard was created, for Prometheus counters
--   {dq}:minute:<m>    per minute of Redis's clock, 2 hours, for the charts
-- A dated key gets its TTL when one of its fields is created (HINCRBY
-- answers n: the field was absent), so it never exists without one, and the
-- common case costs no EXPIRE (each redis.call is ~1 us of a script's time).
-- now: the script's redis_now(), when it has one (saves a TIME).
local function stat(stats_key, topic, what, n, now)
  local field = topic .. ':' .. what
  if redis.call('HINCRBY', stats_key, field, n) == n then
    redis.call('EXPIRE', stats_key, 3456000)
  end
  redis.call('HINCRBY', '{dq}:totals', field, n)
  local minute = '{dq}:minute:' .. string.format('%d', math.floor((now or redis_now()) / 60000))
  if redis.call('HINCRBY', minute, field, n) == n then redis.call('EXPIRE', minute, 7500) end
end

-- Wakes a sleeping timer when `due` is earlier than everything delayed.
local function wake_timer_if_first(due_index_key, wake_key, due)
  local first = redis.call('ZRANGE', due_index_key, 0, 0, 'WITHSCORES')
  if first[2] == nil or tonumber(first[2]) > tonumber(due) then
    redis.call('LPUSH', wake_key, due)
    redis.call('LTRIM', wake_key, 0, 15)
  end
end

-- Removes a job's key from the structure its state keeps it in. A delayed
-- or retrying job has none: its bucket's due index score stays a lower bound.
-- held_keys: the {dq}:held:<shard> sets (state h only).
local function unlink_job(key, j, ready_key, working_key, dead_key, held_keys)
  if j.state == 'r' then
    redis.call('LREM', ready_key, 1, key)
  elseif j.state == 'w' then
    redis.call('ZREM', working_key, key)
  elseif j.state == 'x' then
    redis.call('ZREM', dead_key, key)
  elseif j.state == 'h' then
    for _, held in ipairs(held_keys) do redis.call('ZREM', held, key) end
  end
end


-- One command over many items (HMGET, HDEL, ZREM, RPUSH, HSET/ZADD pairs...),
-- in chunks: Lua's unpack() refuses more than a few thousand values. A flat
-- list of pairs stays whole, as the chunk size is even.
local kBulkChunk = 1000
local function bulk_write(cmd, key, items)
  for first = 1, #items, kBulkChunk do
    redis.call(cmd, key, unpack(items, first, math.min(#items, first + kBulkChunk - 1)))
  end
end

-- The replies of bulk reads, one list in item order (HMGET: false for absent).
local function bulk_read(cmd, key, items)
  local out = {}
  for first = 1, #items, kBulkChunk do
    local part = redis.call(cmd, key, unpack(items, first, math.min(#items, first + kBulkChunk - 1)))
    for _, value in ipairs(part) do out[#out + 1] = value end
  end
  return out
end
