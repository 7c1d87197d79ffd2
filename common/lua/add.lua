-- add: store a new job unless one with the same (topic, id) is held here.
-- KEYS[1] jobs  KEYS[2] bodies  KEYS[3] delayed  KEYS[4] stats of the day
-- KEYS[5] timer wake list  KEYS[6] counts  KEYS[7] seq  KEYS[8] moved markers
-- ARGV[1] job key "topic:id"  ARGV[2] topic  ARGV[3] body
-- ARGV[4] 'delay' (ARGV[5] ms from Redis's now) or 'at' (ARGV[5] epoch ms)
-- ARGV[6] held set prefix  ARGV[7] shards to verify against, comma separated
-- ARGV[8] every shard the caller could not reach, comma separated
-- A job added while a shard that may hold the same id was unreachable is
-- kept in state h (held) in {dq}:held:<shard> until that shard has been
-- asked (timer/held_verifier.h); it is not delivered before.
-- Returns {'added', due, state}; {'same', due, state} when the same id is
-- held with the same body (a retried add: nothing changes); {'exists', state}
-- when it is held with another body, or dead.
local key, topic, body = ARGV[1], ARGV[2], ARGV[3]
local existing = parse_meta(redis.call('HGET', KEYS[1], key))
if existing then
  if existing.state ~= 'x' and redis.call('HGET', KEYS[2], key) == body then
    return {'same', existing.due, existing.state}
  end
  return {'exists', existing.state}
end
local now = redis_now()
local due = ARGV[5]
if ARGV[4] == 'delay' then due = ms_text(now + tonumber(ARGV[5])) end
local holds = {}
for name in string.gmatch(ARGV[7], '[^,]+') do holds[name] = true end
-- A marker left when a copy of this id was verified on another shard: if that
-- shard cannot be asked now, it may still hold the job.
local moved_to = redis.call('HGET', KEYS[8], key)
if moved_to then
  local unreachable = false
  for name in string.gmatch(ARGV[8], '[^,]+') do
    if name == moved_to then unreachable = true end
  end
  if unreachable then
    holds[moved_to] = true
  else
    redis.call('HDEL', KEYS[8], key)  -- the caller asked that shard: it holds no copy
  end
end
local state = 'd'
if next(holds) ~= nil then state = 'h' end
local inc = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[1], key, meta_text({state = state, attempts = 0, due = due,
  created = ms_text(now), inc = string.format('%d', inc), lease = '', max = ''}))
redis.call('HSET', KEYS[2], key, body)
if state == 'd' then
  wake_timer_if_first(KEYS[3], KEYS[5], due)
  redis.call('ZADD', KEYS[3], due, key)
else
  for name in pairs(holds) do redis.call('ZADD', ARGV[6] .. name, due, key) end
end
count(KEYS[6], topic, state, 1)
stat(KEYS[4], topic, 'added', 1, now)
return {'added', due, state}
