-- promote: move due jobs to their topic's ready list.
-- KEYS[1] records prefix  KEYS[2] due index  KEYS[3] consumer wake list  KEYS[4] counts
-- ARGV[1] batch limit  ARGV[2] ready key prefix ("{dq}:ready:")
-- "Due" is by Redis's clock, so a host whose clock is ahead never promotes
-- early. The ready keys are built from the prefix; they share the hash tag.
-- Buckets whose due bound has passed are scanned whole (each holds a few
-- dozen jobs): what is due moves, and the bucket's bound becomes the
-- earliest due left in it (or the bucket leaves the index). A bucket is
-- never left half done, so the limit is checked between buckets.
-- While a store v2 shard is being converted, each call first moves a batch
-- of its flat records into buckets (migrate_some), due ones first.
-- Returns {moved, next due ms or -1, Redis's now ms}.
local now = redis_now()
local limit = tonumber(ARGV[1])
local kLetterD, kLetterY, kBar = string.byte('d'), string.byte('y'), string.byte('|')

-- Store v2 conversion: the due flat jobs, then any others, up to `limit`.
local converting = false
if flat_exists() or redis.call('EXISTS', kFlatDelayed) == 1 then
  converting = true
  local keys = redis.call('ZRANGEBYSCORE', kFlatDelayed, '-inf', now, 'LIMIT', 0, limit)
  if #keys < limit and flat_exists() then
    for _, key in ipairs(redis.call('HRANDFIELD', kFlatRecords, limit - #keys)) do
      keys[#keys + 1] = key
    end
  end
  for _, key in ipairs(keys) do
    local old = redis.call('HGET', kFlatRecords, key)
    if old then
      migrate_one(key, old, bucket_of(key))
    else
      redis.call('ZREM', kFlatDelayed, key)  -- a stale entry
    end
  end
  -- Every live entry of the flat zset has its flat record: with no records
  -- left, what remains of the zset is stale.
  if redis.call('EXISTS', kFlatRecords) == 0 then
    redis.call('DEL', kFlatDelayed)
    converting = false
  end
end

local moved = 0
local per_topic, topics = {}, {}
local buckets = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
local bounds, gone = {}, {}
for _, bucket in ipairs(buckets) do
  if moved >= limit then break end
  local records_key = KEYS[1] .. bucket
  local all = redis.call('HGETALL', records_key)
  local out, next_due = {}, nil
  for n = 1, #all, 2 do
    local record = all[n + 1]
    local letter, bar = string.byte(record, 1, 2)
    if bar == kBar and (letter == kLetterD or letter == kLetterY) then
      -- Only the state letter changes: the record is 'r' and the rest as
      -- stored (an inline body too), no parse and no number format.
      local due = tonumber(string.match(record, '^%a|%d+|(%d+)|'))
      if due and due <= now then
        local key = all[n]
        local state = letter == kLetterD and 'd' or 'y'
        local topic = topic_of(key)
        local entry = per_topic[topic]
        if not entry then
          entry = {keys = {}, d = 0, y = 0}
          per_topic[topic] = entry
          topics[#topics + 1] = topic
        end
        entry[state] = entry[state] + 1
        entry.keys[#entry.keys + 1] = key
        out[#out + 1] = key
        out[#out + 1] = 'r' .. string.sub(record, 2)
        moved = moved + 1
      elseif due and (next_due == nil or due < next_due) then
        next_due = due
      end
    end
  end
  if #out > 0 then bulk_write('HSET', records_key, out) end
  if next_due then
    bounds[#bounds + 1] = next_due
    bounds[#bounds + 1] = bucket
  else
    gone[#gone + 1] = bucket
  end
end
bulk_write('ZADD', KEYS[2], bounds)
bulk_write('ZREM', KEYS[2], gone)
for _, topic in ipairs(topics) do
  local entry = per_topic[topic]
  if entry.d > 0 then count(KEYS[4], topic, 'd', -entry.d) end
  if entry.y > 0 then count(KEYS[4], topic, 'y', -entry.y) end
  count(KEYS[4], topic, 'r', #entry.keys)
  bulk_write('RPUSH', ARGV[2] .. topic, entry.keys)
end
if moved > 0 then
  -- One token per job (at most 64) wakes that many blocked consumers.
  local tokens = {}
  for i = 1, math.min(moved, 64) do tokens[i] = '1' end
  redis.call('LPUSH', KEYS[3], unpack(tokens))
  redis.call('LTRIM', KEYS[3], 0, 255)
end
if converting then return {moved, now, now} end  -- more to convert: call again at once
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] == nil then
  return {moved, -1, now}
end
return {moved, first[2], now}
