-- Prelude: the top of the dq function library (cmake/embed_lua.cmake makes
-- each common/store/lua/*.lua one function of it, loaded once per Redis
-- with FUNCTION LOAD and run with FCALL). It runs once, when Redis loads the
-- library, not at every call: a script that carried it ran its ~650 lines
-- (closures, key names) at every EVALSHA, ~5.7 µs of Redis CPU a call.
--
-- Store v3. A job's record is its meta, "state|attempts|due|created|inc|lease|max[|deferrals]":
--   state    d delayed, r ready, w working (leased), y retrying, x dead,
--            b waiting for the jobs it names in its add's "after" (its
--            remaining ones in {dq}:after; see "Dependencies" below)
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
--   d, y, b pending jobs, the many and long-lived: in the bucket hash
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
-- The shard's hash tag and the key names built on it: set by begin_call
-- (the end of this file) at the start of every call.
local kTag
local function tagged(prefix)
  if kTag == '{dq}' then return prefix end
  return kTag .. string.sub(prefix, 5)
end
local kRecordsPrefix
-- Pull topics (docs/delivery.md, "Pull workers"): a script that makes a
-- pull topic's jobs ready says so on this channel, its topic's name the
-- message; each API server subscribes per shard and wakes its long polls.
-- pulls: '|a|b|', the pull topics the caller named ('': none), so push
-- topics publish nothing.
local function publish_ready(pulls, topic)
  if pulls ~= '' and string.find(pulls, '|' .. topic .. '|', 1, true) then
    redis.call('PUBLISH', kTag .. ':ready', topic)
  end
end
local kDueIndex, kDuePrefix, kFlatRecords, kFlatDelayed
-- string.byte('d'), ('y'), ('b'): the library's top level runs before Redis
-- gives it the string library (only its functions have it).
local kByteD, kByteY, kByteB = 100, 121, 98
local kBuckets = 49157
-- A member of {dq}:working that is never a job: scored +inf (no lease ever
-- expires it), and longer than zset-max-listpack-value (64 by default), so
-- Redis creates the set as a skiplist and keeps it one while the anchor is
-- in it. A listpack of up to 128 leases (two consumers x 64) made every
-- reserve's ZADD and every ack's ZREM walk it: ~12 % of Redis's CPU per
-- delivery (bench/README.md, "The working set's anchor"). It starts with
-- '~', which no topic does, so no topic's listing ever matches it.
local kWorkingAnchor = '~working-set-anchor~' ..
                       '................................................................................'

-- h = (h * 31 + byte) mod 49157 over the key's bytes, six at a time (exact
-- in doubles: 49,156 * 31^6 + ... < 2^53); common/store/keys.h computes the same.
-- ~1 us for a 23-byte key: callers pass the bucket when they can.
local function bucket_of(key)
  local byte = string.byte
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
  local first = redis.call('ZRANGE', due_key(bucket), '0', '0', 'WITHSCORES')
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

-- Whether a record's state keeps it in its bucket (d, y, b) or flat.
local function lives_in_bucket(record)
  local c = string.byte(record, 1)
  return c == kByteD or c == kByteY or c == kByteB
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

-- Numbers as text. Lua numbers are doubles: '%.0f' goes through printf's
-- float path (~7,000 Redis instructions), '%d' (a long on 64-bit Linux,
-- exact for every ms and count dq keeps) through the integer one. A number
-- handed to redis.call is turned into text by Redis with '%.17g' (the float
-- path again), so scripts pass counts and times as text: small integers,
-- the counts most calls pass, come from a table filled as they are met.
local function ms_text(ms)
  return string.format('%d', ms)
end
local kIntTexts = {}
local function int_text(n)
  local text = kIntTexts[n]
  if text then return text end
  text = string.format('%d', n)
  if n >= -4096 and n <= 4096 then kIntTexts[n] = text end
  return text
end

-- "state|attempts|due|created|inc|lease|max[|deferrals[|first[|expires]]]":
-- the eighth field once a Retry-After was honoured, the ninth (when the
-- first attempt began, Redis ms) once a job was reserved, the tenth (when
-- the job expires, Redis ms: never delivered after it) for a job added with
-- a ttl or expire_at; records written before a field existed lack it
-- (reserve.lua sets first at their next attempt). With a tenth field, the
-- ninth may be empty (not attempted yet).
local function parse_meta(text)
  if not text then return nil end
  -- The seven fields every record has in one match, then the optional ones
  -- from what is left: a leased job's record has nine, and matching the
  -- whole meta against each form in turn failed three times first (~4.7 µs
  -- of Redis CPU per delivery, callgrind).
  local s, a, d, c, i, l, m, rest =
    string.match(text, '^(%a)|(%d+)|(%d+)|(%d+)|(%d*)|([^|]*)|(%d*)(.*)$')
  if not s then return nil end
  local n, first, expires = nil, '', ''
  if rest ~= '' then
    n, first = string.match(rest, '^|(%d+)|(%d+)$')
    if not n then
      first = ''
      n = string.match(rest, '^|(%d+)$')
      if not n then
        n, first, expires = string.match(rest, '^|(%d+)|(%d*)|(%d+)$')
        if not n then return nil end
      end
    end
  end
  return {state = s, attempts = tonumber(a), due = d, created = c, inc = i, lease = l, max = m,
          deferrals = n and tonumber(n) or 0, first = first, expires = expires}
end

local function meta_text(j)
  local text = j.state .. '|' .. string.format('%d', j.attempts) .. '|' .. j.due .. '|' ..
               j.created .. '|' .. j.inc .. '|' .. j.lease .. '|' .. j.max
  if j.expires and j.expires ~= '' then
    text = text .. '|' .. string.format('%d', j.deferrals) .. '|' .. (j.first or '') .. '|' ..
           j.expires
  elseif j.first and j.first ~= '' then
    text = text .. '|' .. string.format('%d', j.deferrals) .. '|' .. j.first
  elseif j.deferrals > 0 then
    text = text .. '|' .. string.format('%d', j.deferrals)
  end
  return text
end

-- Whether the job expired (its tenth field has passed) at Redis ms now.
local function has_expired(j, now)
  return j.expires ~= '' and now >= tonumber(j.expires)
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

-- Dependencies (docs/delivery.md, "Dependencies between jobs"). A waiting
-- job B (state b) sits in its bucket, in no due zset, and in
--   {dq}:waiting:<topic>   zset: B -> its own due (listings, next due first)
--   {dq}:waiting_expiry    zset: B -> when it expires (its ttl or expire_at)
--   {dq}:after             hash: B -> the keys of the jobs it still waits
--                          for, '\n'-joined (ids hold no control characters)
-- On the shard of each job A that B waits for (dep_register.lua):
--   {dq}:awaited           set of the keys of jobs some waiter waits for
--   {dq}:waiters:<A>       set: the waiters' keys
-- Every script that ends a job (ack, fail, requeue_expired, reserve, del,
-- dep_release, dep_expire) asks {dq}:awaited (one SMISMEMBER per call) and,
-- for an awaited job, appends an event to the shard's outbox in the same
-- script: {dq}:depout (zset event n -> when it is next to be handled) and
-- {dq}:depout:events (hash n -> "how\nended ms\nA key\nwhy", how: a
-- delivered, x dead, e expired, d deleted), and wakes the releaser
-- ({dq}:wake:deps). dq-redis-checker's releaser (checker/dependency_loop.h)
-- hands each event to A's waiters (dep_release.lua on their shards).
local kAwaited, kWaitersPrefix, kDepOut, kDepEvents, kDepWake, kAfter
local kWaitingPrefix, kWaitingExpiry

-- Records that the awaited job at key ended (how: a, x, e, d) for its waiters.
-- It is no longer awaited: a waiter that registers later finds its ended
-- record, or waits for a new job of the id.
local function dep_event(key, how, why, now)
  local n = ms_text(redis.call('INCR', kDepOut .. ':seq'))
  redis.call('HSET', kDepEvents, n, how .. '\n' .. ms_text(now) .. '\n' .. key .. '\n' .. why)
  redis.call('ZADD', kDepOut, now, n)
  redis.call('SREM', kAwaited, key)
  redis.call('LPUSH', kDepWake, '1')
  redis.call('LTRIM', kDepWake, '0', '15')
end

-- One job ended: an event when some waiter waits for it.
local function dep_ended(key, how, why, now)
  if redis.call('SISMEMBER', kAwaited, key) == 1 then dep_event(key, how, why, now) end
end

-- Many jobs ended the same way (an ack's): one SMISMEMBER for all.
local function dep_ended_all(keys, how, why, now)
  if #keys == 0 then return end
  local awaited = redis.call('SMISMEMBER', kAwaited, unpack(keys))
  for n, key in ipairs(keys) do
    if awaited[n] == 1 then dep_event(key, how, why, now) end
  end
end

-- Registers the jobs in joined ('\n'-joined keys) as waiting for the job at
-- key, as another shard had them (a move: move_in.lua, dep_carry_in.lua).
local function add_waiters(key, joined)
  for waiter in string.gmatch(joined, '[^\n]+') do
    redis.call('SADD', kWaitersPrefix .. key, waiter)
  end
end

-- A waiting job leaves the waiting state (released, deleted, ended).
local function waiting_remove(key)
  redis.call('ZREM', kWaitingPrefix .. topic_of(key), key)
  redis.call('ZREM', kWaitingExpiry, key)
  redis.call('HDEL', kAfter, key)
end

-- Per topic and state job counts ({dq}:counts "topic:state"), for gauges.
local function count(counts_key, topic, state, delta)
  redis.call('HINCRBY', counts_key, topic .. ':' .. state, int_text(delta))
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
  local by = int_text(n)
  if redis.call('HINCRBY', stats_key, field, by) == n then
    redis.call('EXPIRE', stats_key, '3456000')
  end
  redis.call('HINCRBY', kTag .. ':totals', field, by)
  local minute = kTag .. ':minute:' .. string.format('%d', math.floor((now or redis_now()) / 60000))
  if redis.call('HINCRBY', minute, field, by) == n then redis.call('EXPIRE', minute, '7500') end
end

-- Wakes a sleeping timer when `due` is earlier than everything delayed.
local function wake_timer_if_first(due_index_key, wake_key, due)
  local first = redis.call('ZRANGE', due_index_key, '0', '0', 'WITHSCORES')
  if first[2] == nil or tonumber(first[2]) > tonumber(due) then
    redis.call('LPUSH', wake_key, due)
    redis.call('LTRIM', wake_key, '0', '15')
  end
end

-- Removes a job's key from the structure its state keeps it in.
-- from: where its record is (record_get). bucket: bucket_of(key) when the
-- caller knows it.
local function unlink_job(key, j, ready_key, working_key, dead_key, from, bucket)
  if j.state == 'r' then
    redis.call('LREM', ready_key, '1', key)
  elseif j.state == 'w' then
    redis.call('ZREM', working_key, key)
  elseif j.state == 'x' then
    redis.call('ZREM', dead_key, key)
  elseif j.state == 'b' then
    waiting_remove(key)
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
local kDeadCallbacks
local function dead_callback_add(key, j, error_text, now)
  local n = ms_text(redis.call('INCR', kDeadCallbacks .. ':seq'))
  local topic, id = string.match(key, '^([^:]+):(.*)$')
  local body = body_of(j, key, kTag .. ':bodies') or ''
  redis.call('HSET', kDeadCallbacks .. ':' .. n, 'topic', topic, 'id', id, 'body', body,
             'attempts', string.format('%d', j.attempts), 'error', error_text,
             'died_at', ms_text(now), 'created', j.created, 'inc', j.inc, 'tries', '0')
  redis.call('ZADD', kDeadCallbacks, ms_text(now), n)
end

-- Ended records: what became of a job that is gone, one string key per
-- job, expired by Redis itself:
--   "how|ended ms|due ms|print|dedup until ms|attempts|detail"
-- how: a delivered, x dead, e expired (its ttl or expire_at passed, or it was
-- dropped as late), d deleted. A print is 16 hex digits of the body's
-- SHA-1: it tells a producer's retry from a new body for the same id; it is
-- no defence against a forger. detail (history, when the topic keeps it):
-- "status|host|first bytes of the answer" of a delivery, the reason of a
-- death or an expiry.
-- Two uses, one record. Dedup: an add of the same id and body before
-- "dedup until" (the topic's dedup_window_s after a delivery or a death)
-- answers how it ended (200 existing) instead of running it again
-- (add.lua); an expiry or a delete never dedups (the job did not run).
-- History: GET answers the final state of a gone job while its record lives
-- (the topic's keep_done_days). Records of store v4 were "how|ended|due|print".
-- A script is told how long to remember by an "end memory" argument
-- "dedup ms:keep ms" (common/store/end_memory.h); a bare number is both.
local kEndedPrefix
local function body_print(body)
  return string.sub(redis.sha1hex(body), 1, 16)
end
local function end_memory(arg)
  local dedup, keep = string.match(arg or '', '^(%d+):(%d+)$')
  if dedup then return tonumber(dedup), tonumber(keep) end
  local both = tonumber(arg or '0') or 0
  return both, both
end
-- Remembers how the job at key ended, for the longer of the topic's dedup
-- window (deliveries and deaths only) and its history (keep_done_days).
-- memory: the script's end memory argument; detail: '' or the history's.
-- An ack ends many jobs at one `now` with a few end memories: what depends
-- only on those two (the parse, three number formats) is worked out once
-- per call (end_texts).
local end_texts = {}
local function remember_end(key, how, j, body, memory, now, detail)
  local lasting = how == 'a' or how == 'x'
  local texts = end_texts[memory or '']
  if not texts or texts.now ~= now or texts.lasting ~= lasting then
    local dedup, keep = end_memory(memory)
    if not lasting then dedup = 0 end
    local ttl = math.max(dedup, keep)
    texts = {now = now, lasting = lasting, ttl = ttl, at = ms_text(now),
             dedup_until = dedup > 0 and ms_text(now + dedup) or '0',
             px = ttl > 0 and ms_text(ttl) or '0'}
    end_texts[memory or ''] = texts
  end
  if texts.ttl <= 0 then return end
  redis.call('SET', kEndedPrefix .. key,
             how .. '|' .. texts.at .. '|' .. j.due .. '|' .. body_print(body or '') .. '|' ..
             texts.dedup_until .. '|' .. string.format('%d', j.attempts) .. '|' .. (detail or ''),
             'PX', texts.px)
end
-- The end remembered for key with this body, while it dedups: how
-- ('delivered', 'dead'), ended ms and due ms as text; nil when none, not a
-- delivery or a death, past its dedup window, or another body's.
local kEndedWords = {a = 'delivered', x = 'dead'}
local function ended_with(key, body, now)
  local ended = redis.call('GET', kEndedPrefix .. key)
  if not ended then return nil end
  local how, at, due, print, rest = string.match(ended, '^(%a)|(%d+)|(%d+)|(%x+)(.*)$')
  if not how or not kEndedWords[how] or print ~= body_print(body) then return nil end
  local dedup_until = string.match(rest, '^|(%d+)|')
  if dedup_until and tonumber(dedup_until) <= now then return nil end
  return kEndedWords[how], at, due
end

-- How the job at key ended here, for the jobs that wait for it
-- (dep_register.lua, dep_carry_in.lua): 'x' and its last error while it is
-- a dead letter here, else its ended record's how (a, x, e, d) and reason;
-- nil while it is pending here, or unknown (not added yet, or forgotten).
local function how_ended_here(key)
  local j = parse_record(record_get(key))
  if j and j.state == 'x' then
    local err = redis.call('HGET', kTag .. ':errors', key) or ''
    return 'x', string.match(err, '^%d+|(.*)$') or err
  end
  if j then return nil, '' end
  local ended = redis.call('GET', kEndedPrefix .. key)
  if not ended then return nil, '' end
  local how, rest = string.match(ended, '^(%a)|(.*)$')
  -- "ended|due|print|dedup until|attempts|detail": the detail is the reason.
  return how, string.match(rest or '', '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]*|(.*)$') or ''
end

-- Ends a job that must never be delivered now: its ttl or expire_at passed
-- (event 'ttl_expired'), or it was found later than its topic's late_policy
-- allows (event 'late_dropped'). Its record, body and last error go, it is
-- counted, and remembered as expired with the reason (history). The caller
-- has taken its key out of the list or set its state kept it in.
-- counts_key nil: the caller counted it out of its state already.
local function end_unsent(key, j, from, topic, stats_key, counts_key, errors_key, memory, reason,
                          event, now)
  remember_end(key, 'e', j, body_of(j, key, kTag .. ':bodies'), memory, now, reason)
  record_del(key, from)
  if j.rest == '' then redis.call('HDEL', kTag .. ':bodies', key) end
  redis.call('HDEL', errors_key, key)
  if counts_key then count(counts_key, topic, j.state, -1) end
  stat(stats_key, topic, event, 1, now)
  dep_ended(key, 'e', reason, now)
end

-- Dead-letters a job the caller took out of its ready list or working set,
-- with text as its last error: dead zset, counts, stats, the dead-letter
-- callback outbox when the topic has one (callback true), remembered as
-- dead for the end memory.
local function dead_letter(key, j, from, topic, dead_key, errors_key, stats_key, counts_key, text,
                           callback, memory, now)
  redis.call('HSET', errors_key, key, ms_text(now) .. '|' .. text)
  count(counts_key, topic, j.state, -1)
  j.state, j.lease, j.max = 'x', '', ''
  record_set(key, record_text(j), from)
  redis.call('ZADD', dead_key, now, key)
  count(counts_key, topic, 'x', 1)
  stat(stats_key, topic, 'dead', 1, now)
  if callback then dead_callback_add(key, j, text, now) end
  remember_end(key, 'x', j, body_of(j, key, kTag .. ':bodies'), memory, now, text)
  dep_ended(key, 'x', text, now)
end

-- Whether this shard's fence (common/store/fence.h) names next_home within
-- the last hold_ms: a host whose view still places here what already lives
-- on next_home must not write it here.
local function fenced_for(fence_key, next_home, hold_ms, now)
  if next_home == '' then return false end
  local named = redis.call('ZSCORE', fence_key, next_home)
  return named ~= false and tonumber(named) > now - tonumber(hold_ms)
end

-- The adds of add.lua, shared with schedule_tick.lua: K the eight keys add.lua
-- names, A[base] the jobs' next home ('' when none), A[base + 1] how long
-- a name in the fence holds (ms), then eight per job from A[base + 2]
-- (add.lua's header says which and what the replies are).
local function add_jobs(K, A, base)
  local kPerJob = 8
  local kFirstJob = base + 2
  local jobs = (#A - kFirstJob + 1) / kPerJob
  local now = redis_now()
  if fenced_for(K[8], A[base], A[base + 1], now) then
    local replies = {}
    for i = 1, jobs do replies[i] = 'fenced||' .. A[base] end
    return replies
  end
  local created = ms_text(now)
  -- The n-th new job's incarnation is seq + n; seq moves on by the new jobs
  -- only, so an add that stores nothing changes nothing.
  local seq = tonumber(redis.call('GET', K[7]) or '0')
  local stored = 0

  -- In-flight and dead jobs are in the flat hash: one HMGET for all.
  -- Ids repeated within the call go by in_call.
  local job_keys = {}
  for i = 1, jobs do job_keys[i] = A[kFirstJob + (i - 1) * kPerJob] end
  local in_flat = bulk_read('HMGET', kFlatRecords, job_keys)

  -- Number formatting is a costly part of Lua's string work (Lua numbers are
  -- doubles; see ms_text), and a call's jobs mostly share a delay: each
  -- distinct delay is formatted once.
  local due_text_of_delay, due_ms_of_delay = {}, {}
  local function due_of(a)
    local when = A[a + 4]
    if A[a + 3] ~= 'delay' then
      local at = tonumber(when)
      if at < now then return created, now end  -- in the past: due at once, at Redis's now
      return when, at
    end
    local due = due_text_of_delay[when]
    if due then return due, due_ms_of_delay[when] end
    local due_ms = now + tonumber(when)
    due = ms_text(due_ms)
    due_text_of_delay[when], due_ms_of_delay[when] = due, due_ms
    return due, due_ms
  end

  -- meta_text() of {state (d, or b waiting for its "after"), attempts 0, due, created, inc, no lease, no max,
  -- and its expiry when it has one}, written out: no table per job.
  local function new_job_record(due, due_ms, expiry, body, state)
    local meta = state .. '|0|' .. due .. '|' .. created .. '|' ..
                 string.format('%d', seq + stored + 1) .. '||'
    if expiry ~= '' then
      local how, ms = string.match(expiry, '^(%a+):(%d+)$')
      local expires = tonumber(ms)
      if how == 'ttl' then expires = due_ms + expires end
      meta = meta .. '|0||' .. ms_text(expires)
    end
    return new_record(meta, body)
  end

  local bodies, delayed, waiting = {}, {}, {}
  local in_call = {}          -- key -> index of the job of this call that added it
  local counted_d, added = {}, {}  -- topic -> new jobs delayed, all
  local earliest, earliest_text = nil, nil
  local replies = {}
  for i = 1, jobs do
    local a = kFirstJob + (i - 1) * kPerJob
    local key, topic, body = A[a], A[a + 1], A[a + 2]
    local first = in_call[key]
    if first then
      local due, state = string.match(replies[first], '^added|(%d+)|(%a)$')
      if A[kFirstJob + (first - 1) * kPerJob + 2] == body then
        replies[i] = 'same|' .. due .. '|' .. state
      else
        replies[i] = 'exists||' .. state
      end
    else
      local bucket_key = K[1] .. A[a + 5]
      local existing = parse_record(in_flat[i])
      local record, body_apart, due, due_ms = nil, false, nil, nil
      local how, ended_at, ended_due = nil, nil, nil
      if not existing then
        -- Ended within its topic's dedup window with this body: a retry of
        -- an add that was stored (its answer lost) and ran already. Unless a
        -- newer job of the id is pending in its bucket, nothing is written.
        how, ended_at, ended_due = ended_with(key, body, now)
        if how then
          existing = parse_record(redis.call('HGET', bucket_key, key))
        else
          -- A new pending job: one HSETNX both looks for it in its bucket and
          -- writes it there.
          due, due_ms = due_of(a)
          record, body_apart = new_job_record(due, due_ms, A[a + 6], body,
                                              (A[a + 7] or '') ~= '' and 'b' or 'd')
          if redis.call('HSETNX', bucket_key, key, record) == 0 then
            existing = parse_record(redis.call('HGET', bucket_key, key))
          end
        end
      elseif existing.state == 'x' then
        how, ended_at, ended_due = ended_with(key, body, now)  -- died within the window
      end
      if existing and not (existing.state == 'x' and how) then
        if existing.state ~= 'x' and body_of(existing, key, K[2]) == body then
          replies[i] = 'same|' .. existing.due .. '|' .. existing.state
        else
          replies[i] = 'exists||' .. existing.state
        end
      elseif how then
        replies[i] = 'ended|' .. ended_due .. '|' .. how .. '|' .. ended_at
      else
        stored = stored + 1
        if body_apart then
          bodies[#bodies + 1] = key
          bodies[#bodies + 1] = body
        end
        local after = A[a + 7] or ''
        if after ~= '' then
          -- Waits for the jobs it names: no due entry until they are delivered.
          waiting[#waiting + 1] = {key, topic, due, after, record}
        else
          delayed[#delayed + 1] = {A[a + 5], due, key}
          if earliest == nil or due_ms < earliest then
            earliest, earliest_text = due_ms, due
          end
        end
        local state = after ~= '' and 'b' or 'd'
        counted_d[topic .. ':' .. state] = (counted_d[topic .. ':' .. state] or 0) + 1
        added[topic] = (added[topic] or 0) + 1
        in_call[key] = i
        replies[i] = 'added|' .. due .. '|' .. state
      end
    end
  end
  if stored > 0 then
    redis.call('INCRBY', K[7], int_text(stored))
    if #bodies > 0 then redis.call('HSET', K[2], unpack(bodies)) end
  end
  if earliest_text then
    wake_timer_if_first(K[3], K[5], earliest_text)  -- before lowering: compares with the old first
    -- Each job into its bucket's due zset; the index lowered in one ZADD LT.
    local lower = {}
    for _, d in ipairs(delayed) do
      redis.call('ZADD', due_key(d[1]), d[2], d[3])
      lower[#lower + 1] = d[2]
      lower[#lower + 1] = d[1]
    end
    for first = 1, #lower, kBulkChunk do
      redis.call('ZADD', K[3], 'LT', unpack(lower, first, math.min(#lower, first + kBulkChunk - 1)))
    end
  end
  for _, w in ipairs(waiting) do
    redis.call('ZADD', kWaitingPrefix .. w[2], w[3], w[1])
    redis.call('HSET', kAfter, w[1], w[4])
    local j = parse_record(w[5])
    if j.expires ~= '' then redis.call('ZADD', kWaitingExpiry, j.expires, w[1]) end
  end
  for counted, n in pairs(counted_d) do redis.call('HINCRBY', K[6], counted, int_text(n)) end
  for topic, n in pairs(added) do stat(K[4], topic, 'added', n, now) end
  return replies
end

-- Every function of the library starts here: the key names of the shard the
-- call is for, from its first key's hash tag ("{dq}", or "{dq:N}" for
-- virtual shard N of a Redis Cluster). Every key a function touches starts
-- with it, so each call stays in one slot; callers pass key prefixes in ARGV
-- with the "{dq}" tag, and tagged() moves them under the call's own. A
-- plain shard's calls all carry "{dq}": the names are built once.
local function begin_call(keys)
  local tag = string.match(keys[1] or '', '^{[^}]*}') or '{dq}'
  if tag == kTag then return end
  kTag = tag
  kRecordsPrefix = tag .. ':jobs:'
  kDueIndex, kDuePrefix = tag .. ':due', tag .. ':due:'
  kFlatRecords, kFlatDelayed = tag .. ':jobs', tag .. ':delayed'
  kAwaited, kWaitersPrefix = tag .. ':awaited', tag .. ':waiters:'
  kDepOut, kDepEvents = tag .. ':depout', tag .. ':depout:events'
  kDepWake, kAfter = tag .. ':wake:deps', tag .. ':after'
  kWaitingPrefix, kWaitingExpiry = tag .. ':waiting:', tag .. ':waiting_expiry'
  kDeadCallbacks = tag .. ':deadcb'
  kEndedPrefix = tag .. ':ended:'
end
