-- Prelude: prepended to every script in common/store/lua/ at build time
-- (cmake/embed_lua.cmake), so each script stays one EVALSHA.
--
-- Store v3. A job's record is its meta, "state|attempts|due|created|inc|lease|max[|deferrals]":
--   state    d delayed, r ready, w working (leased), y retrying, x dead
--            (store v3 also had h, held: store_upgrade.lua settles those)
--   attempts delivery attempts started so far
--   due      due time, ms by Redis's clock
--   created  creation time, ms by Redis's clock
--   inc      incarnation: unique per add on this shard ({dq}:seq), so a job
--            deleted and re-added is a different job to a stale ack
--   lease    the reserve id that leased it (state w); 'window' in a d or y
--            record promote.lua held for its topic's delivery window (an
--            r record keeps it until leased); '' otherwise
--   max      the topic's max attempts when it was leased (state w only)
--   deferrals Retry-After answers the job honoured (fail.lua); written only
--            when > 0, so every other record keeps its seven fields
-- A record is that meta alone, or the meta, '\n' and the body: a body of at
-- most kInlineBody bytes (most jobs) is stored inline, which saves a second
-- hashtable entry and its 23-byte key copy per job (~90 bytes of Redis) and
-- a command per transition. A bigger body sits in {dq}:bodies, written once,
-- so no state change copies it. A record without '\n' (also every record of
-- store v2) has its body in {dq}:bodies.
-- Where a record lives depends on its state (field "topic:id" in both):
--   d, y   pending jobs, the many and long-lived: in the bucket hash
--          {dq}:jobs:<b>, b = bucket_of("topic:id") (49,157 buckets, small
--          enough to be listpacks: the key is stored once, with no
--          hashtable entry around it), and in the bucket's due zset
--          {dq}:due:<b> (key scored by due, a listpack too). The due index
--          {dq}:due scores each bucket that has a due zset with its
--          earliest due, exactly: promote reads the buckets whose score has
--          passed and, in each, only the jobs that are due.
--   r, w, x  jobs in flight or dead, the few: in the flat hash
--          {dq}:jobs, so a reserve or an ack reads and writes all its jobs
--          with one command each.
-- Store v2 kept every record in {dq}:jobs and delayed jobs in the zset
-- {dq}:delayed: its delayed records are read where they are until
-- store_upgrade.lua, run once per shard before its first promote, moves them
-- into buckets, due ones first.
local kInlineBody = 256
-- The shard's hash tag, from KEYS[1]: "{dq}", or "{dq:N}" for virtual shard
-- N of a Redis Cluster. Every key a script touches starts with it, so each
-- script stays in one slot; the caller passes key prefixes in ARGV with the
-- "{dq}" tag, and tagged() moves them under the script's own.
local kTag = string.match(KEYS[1] or '', '^{[^}]*}') or '{dq}'
local function tagged(prefix)
  if kTag == '{dq}' then return prefix end
  return kTag .. string.sub(prefix, 5)
end
local kRecordsPrefix = kTag .. ':jobs:'
local kDueIndex = kTag .. ':due'
local kDuePrefix = kTag .. ':due:'
local kFlatRecords, kFlatDelayed = kTag .. ':jobs', kTag .. ':delayed'
local kByteD, kByteY = string.byte('d'), string.byte('y')
local kBuckets = 49157
-- A member of {dq}:working that is never a job: scored +inf (no lease ever
-- expires it), and longer than zset-max-listpack-value (64 by default), so
-- Redis creates the set as a skiplist and keeps it one while the anchor is
-- in it. A listpack of up to 128 leases (two consumers x 64) made every
-- reserve's ZADD and every ack's ZREM walk it: ~12 % of Redis's CPU per
-- delivery (bench/README.md, "The working set's anchor"). It starts with
-- '~', which no topic does, so no topic's listing ever matches it.
local kWorkingAnchor = '~working-set-anchor~' .. string.rep('.', 80)

-- h = (h * 31 + byte) mod 49157 over the key's bytes, six at a time (exact
-- in doubles: 49,156 * 31^6 + ... < 2^53); common/store/keys.h computes the same.
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

local function due_key(bucket)
  return kDuePrefix .. bucket
end

-- The job becomes delayed or retrying: into its bucket's due zset, and the
-- bucket's index score lowered to its due if that is earlier.
local function due_add(bucket, key, due)
  redis.call('ZADD', due_key(bucket), due, key)
  redis.call('ZADD', kDueIndex, 'LT', due, bucket)
end

-- After jobs left a bucket's due zset: the index gets the bucket's new
-- earliest due, or drops the bucket.
local function due_refresh(bucket)
  local first = redis.call('ZRANGE', due_key(bucket), 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('ZADD', kDueIndex, first[2], bucket)
  else
    redis.call('ZREM', kDueIndex, bucket)
  end
end

-- A delayed or retrying job leaves its state (deleted, acked late).
local function due_remove(bucket, key)
  if redis.call('ZREM', due_key(bucket), key) == 1 then due_refresh(bucket) end
end

-- Whether a record's state keeps it in its bucket (d, y) or flat.
local function lives_in_bucket(record)
  local c = string.byte(record, 1)
  return c == kByteD or c == kByteY
end

-- The job's record (false when there is none) and where it is: 'flat' or
-- 'bucket'. bucket: bucket_of(key) when the caller knows it.
local function record_get(key, bucket)
  local record = redis.call('HGET', kFlatRecords, key)
  if record then return record, 'flat' end
  record = redis.call('HGET', records_key(bucket or bucket_of(key)), key)
  if record then return record, 'bucket' end
  return false, nil
end

-- Writes the record where its state keeps it, and removes the job's old
-- record when it was elsewhere (from: 'flat', 'bucket' or nil, a new job).
local function record_set(key, record, from, bucket)
  if lives_in_bucket(record) then
    redis.call('HSET', records_key(bucket or bucket_of(key)), key, record)
    if from == 'flat' then redis.call('HDEL', kFlatRecords, key) end
  else
    redis.call('HSET', kFlatRecords, key, record)
    if from == 'bucket' then redis.call('HDEL', records_key(bucket or bucket_of(key)), key) end
  end
end

local function record_del(key, from, bucket)
  if from == 'flat' then
    redis.call('HDEL', kFlatRecords, key)
  elseif from == 'bucket' then
    redis.call('HDEL', records_key(bucket or bucket_of(key)), key)
  end
end

-- Every time a script uses comes from Redis's clock, never the host's.
local function redis_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function ms_text(ms)
  return string.format('%.0f', ms)
end

-- "state|attempts|due|created|inc|lease|max[|deferrals[|first]]": the
-- eighth field once a Retry-After was honoured, the ninth (when the first
-- attempt began, Redis ms) once a job was reserved; records written before
-- it existed have first '' (reserve.lua sets it at their next attempt).
local function parse_meta(text)
  if not text then return nil end
  local s, a, d, c, i, l, m = string.match(text, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(%d*)$')
  local deferrals, first = 0, ''
  if not s then
    local n
    s, a, d, c, i, l, m, n =
      string.match(text, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(%d*)|(%d+)$')
    if not s then
      s, a, d, c, i, l, m, n, first =
        string.match(text, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(%d*)|(%d+)|(%d+)$')
      if not s then return nil end
    end
    deferrals = tonumber(n)
  end
  return {state = s, attempts = tonumber(a), due = d, created = c, inc = i, lease = l, max = m,
          deferrals = deferrals, first = first}
end

local function meta_text(j)
  local text = j.state .. '|' .. string.format('%d', j.attempts) .. '|' .. j.due .. '|' ..
               j.created .. '|' .. j.inc .. '|' .. j.lease .. '|' .. j.max
  if j.first and j.first ~= '' then
    text = text .. '|' .. string.format('%d', j.deferrals) .. '|' .. j.first
  elseif j.deferrals > 0 then
    text = text .. '|' .. string.format('%d', j.deferrals)
  end
  return text
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
  redis.call('HINCRBY', kTag .. ':totals', field, n)
  local minute = kTag .. ':minute:' .. string.format('%d', math.floor((now or redis_now()) / 60000))
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

-- Removes a job's key from the structure its state keeps it in.
-- from: where its record is (record_get). bucket: bucket_of(key) when the
-- caller knows it.
local function unlink_job(key, j, ready_key, working_key, dead_key, from, bucket)
  if j.state == 'r' then
    redis.call('LREM', ready_key, 1, key)
  elseif j.state == 'w' then
    redis.call('ZREM', working_key, key)
  elseif j.state == 'x' then
    redis.call('ZREM', dead_key, key)
  elseif j.state == 'd' or j.state == 'y' then
    if from == 'flat' then
      redis.call('ZREM', kFlatDelayed, key)  -- a store v2 record
    else
      due_remove(bucket or bucket_of(key), key)
    end
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

-- The dead-letter callback outbox (common/store/dead_callbacks.h): the zset
-- <tag>:deadcb (entry number -> when it is next to be sent, Redis ms) and a
-- hash <tag>:deadcb:<n> per entry: topic, id, body, attempts, error, died_at,
-- created, inc (the dead job's), tries (sends that failed so far). Written by
-- the script that dead-letters the job, so no crash separates the two.
local kDeadCallbacks = kTag .. ':deadcb'
local function dead_callback_add(key, j, error_text, now)
  local n = ms_text(redis.call('INCR', kDeadCallbacks .. ':seq'))
  local topic, id = string.match(key, '^([^:]+):(.*)$')
  local body = body_of(j, key, kTag .. ':bodies') or ''
  redis.call('HSET', kDeadCallbacks .. ':' .. n, 'topic', topic, 'id', id, 'body', body,
             'attempts', string.format('%d', j.attempts), 'error', error_text,
             'died_at', ms_text(now), 'created', j.created, 'inc', j.inc, 'tries', '0')
  redis.call('ZADD', kDeadCallbacks, ms_text(now), n)
end

-- Ended records: a retried add must never run a job twice. After a job ran
-- (delivered, or dead after its attempts) its key is remembered for its
-- topic's dedup_window_s, with how and when it ended, its due time and a
-- print of its body; an add of the same id and body within the window
-- answers "ended" (200 existing, with the final state) instead of adding
-- the job again (add.lua). A delete is not remembered (del.lua). One string
-- key per ended job, expired by Redis itself: "how|ended ms|due ms|print",
-- how: a delivered, x dead.
-- A print is 16 hex digits of the body's SHA-1: it tells a producer's retry
-- from a new body for the same id, it is no defence against a forger.
local kEndedPrefix = kTag .. ':ended:'
local function body_print(body)
  return string.sub(redis.sha1hex(body), 1, 16)
end
local function remember_end(key, how, j, body, window_ms, now)
  if not window_ms or window_ms <= 0 or not body then return end
  redis.call('SET', kEndedPrefix .. key,
             how .. '|' .. ms_text(now) .. '|' .. j.due .. '|' .. body_print(body),
             'PX', string.format('%d', window_ms))
end
-- The end remembered for key with this body: how ('delivered', 'dead'),
-- ended ms and due ms as text; nil when none, or another body's.
local kEndedWords = {a = 'delivered', x = 'dead'}
local function ended_with(key, body)
  local ended = redis.call('GET', kEndedPrefix .. key)
  if not ended then return nil end
  local how, at, due, print = string.match(ended, '^(%a)|(%d+)|(%d+)|(%x+)$')
  if not how or print ~= body_print(body) then return nil end
  return kEndedWords[how], at, due
end
