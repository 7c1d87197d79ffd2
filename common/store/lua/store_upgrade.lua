-- store_upgrade: brings a shard written by store v2 to store v3, a batch per
-- call (common/store/store_upgrade.h runs it until it answers 1).
-- KEYS[1] the store version key ({dq}:store_version)
-- ARGV[1] batch limit
-- Store v2 kept every record in {dq}:jobs and its delayed jobs in the zset
-- {dq}:delayed; v3 keeps pending jobs in buckets (see the prelude). Each call
-- moves up to ARGV[1] delayed records into their buckets, due ones first;
-- when none is left it sets the version to 3, so later calls return at once.
-- Returns 1 when the shard is v3, 0 when more records are left to move.
local kCurrent = 3
if tonumber(redis.call('GET', KEYS[1]) or '0') >= kCurrent then return 1 end
local limit = tonumber(ARGV[1])

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
