-- reserve: lease ready jobs to a consumer under one reserve id.
-- KEYS[1] jobs  KEYS[2] working  KEYS[3] counts  KEYS[4] lease list of this
-- reserve id  KEYS[5] cancel marker of this reserve id  KEYS[6] bodies
-- KEYS[7] lease list of an earlier reserve whose reply arrived (dropped now:
-- it is only needed while a reply may be lost)
-- ARGV[1] reserve id  ARGV[2] ready key prefix  ARGV[3] most jobs in all
-- ARGV[4] stop adding jobs once their bodies exceed this many bytes
-- ARGV[5] how long the lease list outlives the longest lease, ms
-- then per topic five entries: topic, lease ms, fair share, cap, max attempts.
-- Two passes: every topic first takes up to its fair share, then what is left
-- of the budget goes to topics that still have jobs, up to their cap; so one
-- backlog uses every free slot its cap allows while others are idle.
-- A reserve whose reply the consumer never got is undone by release.lua,
-- which sets the cancel marker first: if this script runs after it (the
-- command sat in a stalled Redis), it takes nothing.
-- Returns {ready jobs left in these topics, Redis's now ms, then six entries
-- per job: key, attempt, due ms, created ms, incarnation, body}.
redis.call('DEL', KEYS[7])
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {0, 0}
end
local now = redis_now()
local topics = {}
for i = 6, #ARGV, 5 do
  topics[#topics + 1] = {name = ARGV[i], lease = tonumber(ARGV[i + 1]),
    share = tonumber(ARGV[i + 2]), cap = tonumber(ARGV[i + 3]), max = ARGV[i + 4],
    taken = 0, empty = false}
end
local budget, budget_bytes = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {0, now}
local bytes, taken_total, longest = 0, 0, 0

local function take(t)
  local key = redis.call('LPOP', ARGV[2] .. t.name)
  if not key then
    t.empty = true
    return
  end
  local j = parse_meta(redis.call('HGET', KEYS[1], key))
  if not j or j.state ~= 'r' then return end  -- a stale entry
  j.state = 'w'
  j.attempts = j.attempts + 1
  j.lease = ARGV[1]
  j.max = t.max
  redis.call('HSET', KEYS[1], key, meta_text(j))
  redis.call('ZADD', KEYS[2], ms_text(now + t.lease), key)
  redis.call('RPUSH', KEYS[4], key)
  local body = redis.call('HGET', KEYS[6], key) or ''
  bytes = bytes + #body
  t.taken = t.taken + 1
  taken_total = taken_total + 1
  if t.lease > longest then longest = t.lease end
  local n = #out
  out[n + 1] = key
  out[n + 2] = j.attempts
  out[n + 3] = j.due
  out[n + 4] = j.created
  out[n + 5] = j.inc
  out[n + 6] = body
end

for pass = 1, 2 do
  for _, t in ipairs(topics) do
    local limit = t.share
    if pass == 2 then limit = t.cap end
    while not t.empty and t.taken < limit and taken_total < budget and bytes < budget_bytes do
      take(t)
    end
  end
end
local left = 0
for _, t in ipairs(topics) do
  if t.taken > 0 then
    count(KEYS[3], t.name, 'r', -t.taken)
    count(KEYS[3], t.name, 'w', t.taken)
  end
  left = left + redis.call('LLEN', ARGV[2] .. t.name)
end
if taken_total > 0 then
  redis.call('PEXPIRE', KEYS[4], ms_text(longest + tonumber(ARGV[5])))
end
out[1] = left
return out
