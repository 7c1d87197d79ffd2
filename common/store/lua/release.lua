-- release: undo a reserve whose reply never reached the consumer (a timeout
-- or a lost connection), without waiting out the lease and without counting
-- an attempt: the jobs it leased go back to the front of their ready lists.
-- KEYS[1] records prefix  KEYS[2] working  KEYS[3] counts  KEYS[4] lease list of the
-- reserve id  KEYS[5] cancel marker of the reserve id  KEYS[6] consumer wake list
-- ARGV[1] reserve id  ARGV[2] ready key prefix  ARGV[3] cancel marker TTL ms
-- ARGV[4] the pull topics, '|a|b|' ('' or none: none): each that gets a job
-- back is published on {dq}:ready (publish_ready)
-- The cancel marker makes a reserve that runs later (still queued in a
-- stalled Redis) take nothing.
-- Returns the number of jobs given back.
redis.call('SET', KEYS[5], '1', 'PX', ARGV[3])
local keys = redis.call('LRANGE', KEYS[4], '0', '-1')
local moved = 0
local back = {}
for i = #keys, 1, -1 do  -- backwards, so LPUSH restores their order
  local key = keys[i]
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.state == 'w' and j.lease == ARGV[1] then
    redis.call('ZREM', KEYS[2], key)
    j.state = 'r'
    j.attempts = j.attempts - 1
    j.lease = ''
    j.max = ''
    record_set(key, record_text(j), from)
    local topic = topic_of(key)
    redis.call('LPUSH', tagged(ARGV[2]) .. topic, key)
    count(KEYS[3], topic, 'w', -1)
    count(KEYS[3], topic, 'r', 1)
    moved = moved + 1
    back[topic] = true
  end
end
for topic in pairs(back) do publish_ready(ARGV[4] or '', topic) end
redis.call('DEL', KEYS[4])
if moved > 0 then
  redis.call('LPUSH', KEYS[6], '1')
  redis.call('LTRIM', KEYS[6], '0', '255')
end
return moved
