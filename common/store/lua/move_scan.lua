-- move_scan: reads the pending (delayed and retrying) jobs of a range of
-- buckets, for the checker's mover (checker/shard_mover.h), which moves
-- those whose home is another shard. Changes nothing.
-- KEYS[1] due index (for the tag)
-- ARGV[1] first bucket  ARGV[2] most jobs (a bucket is read whole, so a call
-- may answer a few more)
-- Returns {next bucket (-1: the last was read), key, due, key, due, ...}.
-- function flags: no-writes
local bucket, most = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {-1}
while bucket < kBuckets do
  local found = redis.call('ZRANGE', due_key(bucket), 0, -1, 'WITHSCORES')
  for _, value in ipairs(found) do out[#out + 1] = value end
  bucket = bucket + 1
  if #out > 2 * most then break end
end
if bucket < kBuckets then out[1] = bucket end
return out
