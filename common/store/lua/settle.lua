-- settle: apply a verdict to a held copy (see claim.lua) on its own shard.
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] errors
-- KEYS[5] stats of the day  KEYS[6] counts  KEYS[7] timer wake list
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] incarnation  ARGV[4] 'dup' or 'ok'
-- ARGV[5] the shard that answered  ARGV[6] held set prefix
-- ARGV[7] every shard name, comma separated
-- 'dup' removes the copy (counted as "duplicate"); 'ok' takes it out of that
-- shard's held set and, once no held set names it, makes it delayed again.
-- Returns 2 removed, 1 released, 3 still held for another shard, 0 gone.
local key, topic = ARGV[1], ARGV[2]
local record, from = record_get(key)
local j = parse_record(record)
if not j or j.state ~= 'h' or j.inc ~= ARGV[3] then
  redis.call('ZREM', tagged(ARGV[6]) .. ARGV[5], key)
  return 0
end
if ARGV[4] == 'dup' then
  for name in string.gmatch(ARGV[7], '[^,]+') do redis.call('ZREM', tagged(ARGV[6]) .. name, key) end
  record_del(key, from)
  if j.rest == '' then redis.call('HDEL', KEYS[2], key) end  -- the body is apart
  redis.call('HDEL', KEYS[4], key)
  count(KEYS[6], topic, 'h', -1)
  stat(KEYS[5], topic, 'duplicate', 1)
  return 2
end
redis.call('ZREM', tagged(ARGV[6]) .. ARGV[5], key)
for name in string.gmatch(ARGV[7], '[^,]+') do
  if redis.call('ZSCORE', tagged(ARGV[6]) .. name, key) then return 3 end
end
j.state = 'd'
local bucket = bucket_of(key)
record_set(key, record_text(j), from, bucket)  -- into its bucket
wake_timer_if_first(KEYS[3], KEYS[7], j.due)
due_add(bucket, key, j.due)
count(KEYS[6], topic, 'h', -1)
count(KEYS[6], topic, 'd', 1)
return 1
