-- requeue_expired: jobs whose lease ran out (their consumer died or hung).
-- The attempt they used counts: a job that has used its topic's max attempts
-- is dead-lettered with "lease expired" as its last error, the others go back
-- on their topic's ready list.
-- KEYS[1] records prefix  KEYS[2] working  KEYS[3] consumer wake list  KEYS[4] stats of the day
-- KEYS[5] counts  KEYS[6] errors
-- ARGV[1] batch limit  ARGV[2] ready key prefix  ARGV[3] dead key prefix
-- ARGV[4] the end memory (remember_end) of the topics not listed after it
-- ARGV[5] the pull topics, '|a|b|' ('': none): each that gets a job back is
-- published on {dq}:ready (publish_ready)
-- ARGV[6..] pairs: a topic, then '<dead callback 0|1>|<end memory>' for
-- the topics that differ from that: a job that dies here gets its entry in
-- the dead-letter callback outbox (dead_callback_add) when its topic has a
-- dead-letter callback, and is remembered for the topic's end memory.
-- Returns {requeued, {dead-lettered job key, its attempts, ...}}.
local now = redis_now()
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ms_text(now), 'LIMIT', '0', ARGV[1])
local moved = 0
local dead = {}
local called_back, windows, back = {}, {}, {}
for i = 6, #ARGV - 1, 2 do
  local callback, memory = string.match(ARGV[i + 1], '^([01])|([%d:]+)$')
  called_back[ARGV[i]] = callback == '1'
  windows[ARGV[i]] = memory
end
for _, key in ipairs(expired) do
  redis.call('ZREM', KEYS[2], key)
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.state == 'w' then
    local topic = topic_of(key)
    local max = tonumber(j.max)
    stat(KEYS[4], topic, 'expired', 1, now)
    redis.call('HSET', KEYS[6], key, ms_text(now) .. '|lease expired: attempt ' .. j.attempts ..
      ' got no outcome in time (consumer killed or stalled)')
    count(KEYS[5], topic, 'w', -1)
    j.lease = ''
    j.max = ''
    if max and j.attempts >= max then
      j.state = 'x'
      record_set(key, record_text(j), from)
      redis.call('ZADD', tagged(ARGV[3]) .. topic, now, key)
      count(KEYS[5], topic, 'x', 1)
      stat(KEYS[4], topic, 'failed', 1, now)
      stat(KEYS[4], topic, 'dead', 1, now)
      if called_back[topic] then
        dead_callback_add(key, j, 'lease expired: attempt ' .. j.attempts ..
                          ' got no outcome in time (consumer killed or stalled)', now)
      end
      remember_end(key, 'x', j, body_of(j, key, kTag .. ':bodies'), windows[topic] or ARGV[4],
                   now, 'lease expired: attempt ' .. j.attempts .. ' got no outcome in time')
      dep_ended(key, 'x', 'lease expired: attempt ' .. j.attempts .. ' got no outcome in time', now)
      dead[#dead + 1] = key
      dead[#dead + 1] = j.attempts
    else
      j.state = 'r'
      record_set(key, record_text(j), from)
      redis.call('RPUSH', tagged(ARGV[2]) .. topic, key)
      count(KEYS[5], topic, 'r', 1)
      moved = moved + 1
      back[topic] = true
    end
  end
end
for topic in pairs(back) do publish_ready(ARGV[5], topic) end
if moved > 0 then
  redis.call('LPUSH', KEYS[3], '1')
  redis.call('LTRIM', KEYS[3], '0', '255')
end
return {moved, dead}
