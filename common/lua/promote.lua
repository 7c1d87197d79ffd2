-- promote: move due jobs from the delayed zset to their topic's ready list.
-- KEYS[1] jobs  KEYS[2] delayed  KEYS[3] consumer wake list
-- ARGV[1] now ms  ARGV[2] batch limit  ARGV[3] ready key prefix ("{dq}:ready:")
-- The ready keys are built from the prefix; they share the hash tag, so the
-- script stays within one Redis Cluster slot.
-- Returns {moved, next due ms or -1}.
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local moved = 0
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[2], key)
  local record = redis.call('HGET', KEYS[1], key)
  if record then
    local topic = string.match(key, '^([^:]+):')
    redis.call('HSET', KEYS[1], key, 'r' .. string.sub(record, 2))
    redis.call('RPUSH', ARGV[3] .. topic, key)
    moved = moved + 1
  end
end
if moved > 0 then
  -- One token per job (at most 64) wakes that many blocked consumers.
  local tokens = {}
  for i = 1, math.min(moved, 64) do tokens[i] = '1' end
  redis.call('LPUSH', KEYS[3], unpack(tokens))
  redis.call('LTRIM', KEYS[3], 0, 255)
end
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if first[2] == nil then
  return {moved, -1}
end
return {moved, first[2]}
