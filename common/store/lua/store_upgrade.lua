-- store_upgrade: brings a shard written by an older store to the current
-- one (common/store/store_upgrade.h runs it), one step per call, by ARGV[1]:
--
-- 'buckets' (store v2 -> v3), ARGV[2] batch limit. Store v2 kept every
--   record in {dq}:jobs and its delayed jobs in the zset {dq}:delayed; v3
--   keeps pending jobs in buckets (see the prelude). Each call moves up to
--   ARGV[2] delayed records into their buckets, due ones first; when none is
--   left it sets the version to 3, so later calls return at once.
--   Returns 1 when the shard is v3 or later, 0 when records are left to move.
--
-- Store v3 -> v4 (one home per id: common/store/placement.h). Store v3 kept
-- a copy added while a shard that might hold the id was unreachable held
-- (state h, in {dq}:held:<that shard>), markers ({dq}:moved) and
-- tombstones ({dq}:tombs). The C++ side asks the shard a copy waits for
-- once, then:
-- 'settle', ARGV[2] job key, ARGV[3] incarnation, ARGV[4] 'dup' (that shard
--   holds the id, or deleted it after the copy was made) or 'ok', ARGV[5]
--   the shard asked, ARGV[6] every shard name, comma separated: 'dup'
--   removes the copy (counted as "duplicate"); 'ok' takes it out of that
--   shard's held set and, once no held set names it, makes it delayed.
--   Returns 2 removed, 1 released, 3 still held for another shard, 0 gone.
-- 'flight', then job keys: jobs left ready or working by the stopped dq
--   (in flight off their home) become delayed, due as they were, so they
--   can move home; a stale lease's ack then finds another incarnation.
--   Returns how many changed.
-- 'done': drops the markers and tombstones and sets the version to 4.
--   (The empty held sets are gone with their last member.)
-- KEYS[1] the store version key  KEYS[2] stats of the day  KEYS[3] counts
-- KEYS[4] bodies  KEYS[5] errors  KEYS[6] timer wake list  KEYS[7] working
local step = ARGV[1]
local kHeldPrefix = kTag .. ':held:'

if step == 'buckets' then
  local kCurrent = 3
  if tonumber(redis.call('GET', KEYS[1]) or '0') >= kCurrent then return 1 end
  local limit = tonumber(ARGV[2])
  local keys = redis.call('ZRANGE', kFlatDelayed, 0, limit - 1)
  local records = bulk_read('HMGET', kFlatRecords, keys)
  for n, key in ipairs(keys) do
    local record = records[n]
    local due = record and lives_in_bucket(record) and string.match(record, '^%a|%d+|(%d+)|')
    if due then  -- else a stale entry: it only leaves the zset
      local bucket = bucket_of(key)
      redis.call('HSET', records_key(bucket), key, record)
      redis.call('HDEL', kFlatRecords, key)
      due_add(bucket, key, due)
    end
  end
  bulk_write('ZREM', kFlatDelayed, keys)
  if redis.call('EXISTS', kFlatDelayed) == 1 then return 0 end
  redis.call('SET', KEYS[1], tostring(kCurrent))
  return 1
end

if step == 'settle' then
  local key, inc, verdict, asked = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
  local topic = topic_of(key)
  local record, from = record_get(key)
  local j = parse_record(record)
  if not j or j.state ~= 'h' or j.inc ~= inc then
    redis.call('ZREM', kHeldPrefix .. asked, key)
    return 0
  end
  if verdict == 'dup' then
    for name in string.gmatch(ARGV[6], '[^,]+') do redis.call('ZREM', kHeldPrefix .. name, key) end
    redis.call('ZREM', kHeldPrefix .. asked, key)
    record_del(key, from)
    if j.rest == '' then redis.call('HDEL', KEYS[4], key) end  -- the body is apart
    redis.call('HDEL', KEYS[5], key)
    count(KEYS[3], topic, 'h', -1)
    stat(KEYS[2], topic, 'duplicate', 1)
    return 2
  end
  redis.call('ZREM', kHeldPrefix .. asked, key)
  for name in string.gmatch(ARGV[6], '[^,]+') do
    if redis.call('ZSCORE', kHeldPrefix .. name, key) then return 3 end
  end
  j.state = 'd'
  local bucket = bucket_of(key)
  record_set(key, record_text(j), from, bucket)  -- into its bucket
  wake_timer_if_first(kDueIndex, KEYS[6], j.due)
  due_add(bucket, key, j.due)
  count(KEYS[3], topic, 'h', -1)
  count(KEYS[3], topic, 'd', 1)
  return 1
end

if step == 'flight' then
  local changed = 0
  for a = 2, #ARGV do
    local key = ARGV[a]
    local record = redis.call('HGET', kFlatRecords, key)
    local j = parse_record(record)
    if j and (j.state == 'r' or j.state == 'w') then
      local topic = topic_of(key)
      unlink_job(key, j, kTag .. ':ready:' .. topic, KEYS[7], nil, 'flat')
      count(KEYS[3], topic, j.state, -1)
      j.state, j.lease, j.max = 'd', '', ''
      local bucket = bucket_of(key)
      record_set(key, record_text(j), 'flat', bucket)
      wake_timer_if_first(kDueIndex, KEYS[6], j.due)
      due_add(bucket, key, j.due)
      count(KEYS[3], topic, 'd', 1)
      changed = changed + 1
    end
  end
  return changed
end

if step == 'done' then
  redis.call('DEL', kTag .. ':moved', kTag .. ':tombs')
  redis.call('SET', KEYS[1], '4')
  return 1
end

return redis.error_reply('store_upgrade: unknown step ' .. tostring(step))
