-- promote: move due jobs from the delayed zset to their topic's ready list.
-- KEYS[1] jobs  KEYS[2] delayed  KEYS[3] consumer wake list  KEYS[4] counts
-- ARGV[1] batch limit  ARGV[2] ready key prefix ("{dq}:ready:")
-- "Due" is by Redis's clock, so a host whose clock is ahead never promotes
-- early. The ready keys are built from the prefix; they share the hash tag.
-- A batch costs a fixed number of redis.calls (ZREM, HMGET, HSET of all its
-- jobs at once), plus an RPUSH and two counters per topic.
-- Returns {moved, next due ms or -1, Redis's now ms}.
local now = redis_now()
local kLetterD, kLetterY, kBar = string.byte('d'), string.byte('y'), string.byte('|')
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local moved = 0
local per_topic, topics, metas_out = {}, {}, {}
if #due > 0 then
  bulk_write('ZREM', KEYS[2], due)
  local metas = bulk_read('HMGET', KEYS[1], due)
  for n, key in ipairs(due) do
    -- Only the state letter changes, so the meta is not parsed and rebuilt
    -- (a pattern match and a number format per job): its first two bytes
    -- are read, and the new record is 'r' and the rest as stored (an inline
    -- body too).
    local meta = metas[n]
    local letter, bar = nil, nil
    if meta then letter, bar = string.byte(meta, 1, 2) end
    if bar == kBar and (letter == kLetterD or letter == kLetterY) then
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
      metas_out[#metas_out + 1] = key
      metas_out[#metas_out + 1] = 'r' .. string.sub(meta, 2)
      moved = moved + 1
    end
  end
  bulk_write('HSET', KEYS[1], metas_out)
  for _, topic in ipairs(topics) do
    local entry = per_topic[topic]
    if entry.d > 0 then count(KEYS[4], topic, 'd', -entry.d) end
    if entry.y > 0 then count(KEYS[4], topic, 'y', -entry.y) end
    count(KEYS[4], topic, 'r', #entry.keys)
    bulk_write('RPUSH', ARGV[2] .. topic, entry.keys)
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
  return {moved, -1, now}
end
return {moved, first[2], now}
