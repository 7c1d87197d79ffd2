-- dead_requeue: give dead jobs of a topic a fresh start, due now.
-- KEYS[1] records prefix  KEYS[2] dead zset of topic  KEYS[3] due index  KEYS[4] errors
-- KEYS[5] timer wake list  KEYS[6] stats of the day  KEYS[7] counts
-- ARGV[1] topic  ARGV[2] job key, or '' for a batch of all  ARGV[3] batch limit
-- Attempts and Retry-After deferrals restart at 0. Returns the number of jobs requeued.
local keys
if ARGV[2] ~= '' then
  keys = {ARGV[2]}
else
  keys = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[3]) - 1)
end
local now = ms_text(redis_now())
local moved = 0
for _, key in ipairs(keys) do
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.state == 'x' and redis.call('ZREM', KEYS[2], key) == 1 then
    j.state = 'd'
    j.attempts = 0
    j.deferrals = 0
    j.first = ''  -- a new life: max_retry_duration_s counts from its next attempt
    j.expires = ''  -- and a person asked for it: its ttl no longer holds it back
    j.due = now
    local bucket = bucket_of(key)
    record_set(key, record_text(j), from, bucket)  -- into its bucket
    due_add(bucket, key, now)
    redis.call('HDEL', KEYS[4], key)
    moved = moved + 1
  end
end
if moved > 0 then
  redis.call('LPUSH', KEYS[5], now)
  redis.call('LTRIM', KEYS[5], '0', '15')
  count(KEYS[7], ARGV[1], 'x', -moved)
  count(KEYS[7], ARGV[1], 'd', moved)
  stat(KEYS[6], ARGV[1], 'requeued', moved)
end
return moved
