-- promote: move due jobs from the delayed zset to their topic's ready list.
-- KEYS[1] jobs  KEYS[2] delayed  KEYS[3] consumer wake list  KEYS[4] counts
-- ARGV[1] batch limit  ARGV[2] ready key prefix ("{dq}:ready:")
-- "Due" is by Redis's clock, so a host whose clock is ahead never promotes
-- early. The ready keys are built from the prefix; they share the hash tag.
-- Returns {moved, next due ms or -1, Redis's now ms}.
local now = redis_now()
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local moved = 0
local per_topic = {}
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[2], key)
  local j = parse_meta(redis.call('HGET', KEYS[1], key))
  if j and (j.state == 'd' or j.state == 'y') then
    local topic = topic_of(key)
    count(KEYS[4], topic, j.state, -1)
    per_topic[topic] = (per_topic[topic] or 0) + 1
    j.state = 'r'
    redis.call('HSET', KEYS[1], key, meta_text(j))
    redis.call('RPUSH', ARGV[2] .. topic, key)
    moved = moved + 1
  end
end
for topic, n in pairs(per_topic) do count(KEYS[4], topic, 'r', n) end
if moved > 0 then
  -- One token per job (at most 64) wakes that many blocked consumers.
  local tokens = {}
  for i = 1, math.min(moved, 64) do tokens[i] = '1' end
  redis.call('LPUSH', KEYS[3], unpack(tokens))
  redis.call('LTRIM', KEYS[3], 0, 255)
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] == nil then
  return {moved, -1, now}
end
return {moved, first[2], now}
