-- reserve: lease ready jobs to a consumer under one reserve id.
-- KEYS[1] records prefix  KEYS[2] working  KEYS[3] counts  KEYS[4] lease list of this
-- reserve id  KEYS[5] cancel marker of this reserve id  KEYS[6] bodies
-- KEYS[7] lease list of an earlier reserve whose reply arrived (dropped now:
-- it is only needed while a reply may be lost)  KEYS[8] stats of the day  KEYS[9] errors
-- ARGV[1] reserve id  ARGV[2] ready key prefix  ARGV[3] most jobs in all
-- ARGV[4] stop adding jobs once their bodies exceed this many bytes
-- ARGV[5] how long the lease list outlives the longest lease, ms
-- then per topic eight entries: topic, lease ms, fair share, cap, max attempts,
-- its end memory (remember_end), its late policy ('': deliver however late;
-- 'dead:<ms>' or 'drop:<ms>': a job found later than that after its due time
-- is dead-lettered with reason "late", or dropped and counted), and '1' when
-- it has a dead-letter callback.
-- A job whose ttl or expire_at has passed (the record's tenth field) is
-- never leased: it ends as expired here (end_unsent), as a late one does.
-- Two passes: every topic first takes up to its fair share, then what is left
-- of the budget goes to topics that still have jobs, up to their cap; so one
-- backlog uses every free slot its cap allows while others are idle.
-- A reserve whose reply the consumer never got is undone by release.lua,
-- which sets the cancel marker first: if this script runs after it (the
-- command sat in a stalled Redis), it takes nothing.
-- Returns {ready jobs left in these topics, Redis's now ms, then six entries
-- per job: key, attempt, due ms, created ms, incarnation, body}; a job the
-- late policy dead-lettered here is six entries too, key, -1, its attempts,
-- created ms, incarnation, the reason: the consumer sends its alert.
redis.call('DEL', KEYS[7])
if redis.call('EXISTS', KEYS[5]) == 1 then
  return {0, 0}
end
local now = redis_now()
local topics = {}
for i = 6, #ARGV, 8 do
  local late_how, late_ms = string.match(ARGV[i + 6], '^(%a+):(%d+)$')
  topics[#topics + 1] = {name = ARGV[i], lease = tonumber(ARGV[i + 1]),
    share = tonumber(ARGV[i + 2]), cap = tonumber(ARGV[i + 3]), max = ARGV[i + 4],
    memory = ARGV[i + 5], late_how = late_how, late_ms = tonumber(late_ms),
    callback = ARGV[i + 7] == '1', taken = 0, empty = false}
end
local budget, budget_bytes = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {0, now}
local bytes, taken_total, longest = 0, 0, 0
-- Written once at the end, for every job taken: a reserve costs a fixed
-- number of redis.calls (an LPOP and two HMGETs per topic asked, one HSET,
-- ZADD and RPUSH for all), not a handful per job.
-- working_out opens with the anchor (prelude), so a ZADD that creates
-- {dq}:working creates a skiplist.
local metas_out, working_out, lease_out, seen = {}, {'+inf', kWorkingAnchor}, {}, {}

-- A job popped from t's ready list that must not be delivered: expired (its
-- ttl or expire_at passed), or later than t's late policy allows. Ends it
-- (expired, dropped or dead) and answers true; false for a job to lease.
local kStatsOfDay, kErrors = KEYS[8], KEYS[9]
local function end_if_undeliverable(t, key, j)
  if has_expired(j, now) then
    end_unsent(key, j, 'flat', t.name, kStatsOfDay, KEYS[3], kErrors, t.memory,
               'expired at ' .. j.expires .. ' (ms) before it could be delivered', 'ttl_expired', now)
    return true
  end
  if not t.late_how then return false end
  local late = now - tonumber(j.due)
  if late <= t.late_ms then return false end
  local why = 'late: found ' .. ms_text(math.ceil(late / 1000)) .. ' s after it was due (late_policy ' ..
              t.late_how .. '_after:' .. ms_text(t.late_ms / 1000) .. ')'
  if t.late_how == 'dead' then
    dead_letter(key, j, 'flat', t.name, kTag .. ':dead:' .. t.name, kErrors,
                kStatsOfDay, KEYS[3], why, t.callback, t.memory, now)
    local o = #out
    out[o + 1], out[o + 2], out[o + 3] = key, -1, j.attempts
    out[o + 4], out[o + 5], out[o + 6] = j.created, j.inc, why
  else
    end_unsent(key, j, 'flat', t.name, kStatsOfDay, KEYS[3], kErrors, t.memory, why,
               'late_dropped', now)
  end
  return true
end

-- Takes up to `want` jobs from the front of t's ready list.
local function take(t, want)
  local ready = tagged(ARGV[2]) .. t.name
  local popped = redis.call('LPOP', ready, int_text(want))
  if not popped then
    t.empty = true
    return
  end
  if #popped < want then t.empty = true end
  -- Ready records are in the flat hash.
  local metas = bulk_read('HMGET', kFlatRecords, popped)
  local live, jobs = {}, {}
  for n, key in ipairs(popped) do
    local j = parse_record(metas[n])
    if j and j.state == 'r' and not seen[key] then  -- else a stale entry: dropped
      seen[key] = true
      if not end_if_undeliverable(t, key, j) then
        live[#live + 1] = key
        jobs[#jobs + 1] = j
      end
    end
  end
  if #live == 0 then return end
  -- Small bodies came inline with their records; the others in one HMGET.
  local apart, bodies = {}, {}
  for n, j in ipairs(jobs) do
    if j.rest == '' then
      apart[#apart + 1] = live[n]
    else
      bodies[n] = string.sub(j.rest, 2)
    end
  end
  if #apart > 0 then
    local read = bulk_read('HMGET', KEYS[6], apart)
    local m = 0
    for n, j in ipairs(jobs) do
      if j.rest == '' then
        m = m + 1
        bodies[n] = read[m]
      end
    end
  end
  for n, key in ipairs(live) do
    if bytes >= budget_bytes then
      -- Over the byte budget: the rest go back to the front, in their order.
      local back = {}
      for m = #live, n, -1 do
        back[#back + 1] = live[m]
        seen[live[m]] = nil
      end
      bulk_write('LPUSH', ready, back)
      t.empty = false
      return
    end
    local j = jobs[n]
    j.state = 'w'
    j.attempts = j.attempts + 1
    if j.first == '' then j.first = ms_text(now) end  -- max_retry_duration_s counts from it
    j.lease = ARGV[1]
    j.max = t.max
    metas_out[#metas_out + 1] = key
    metas_out[#metas_out + 1] = record_text(j)
    if not t.lease_end then t.lease_end = ms_text(now + t.lease) end  -- formatted once per topic
    working_out[#working_out + 1] = t.lease_end
    working_out[#working_out + 1] = key
    lease_out[#lease_out + 1] = key
    local body = bodies[n] or ''  -- false: an HMGET miss
    bytes = bytes + #body
    t.taken = t.taken + 1
    taken_total = taken_total + 1
    if t.lease > longest then longest = t.lease end
    local o = #out
    out[o + 1] = key
    out[o + 2] = j.attempts
    out[o + 3] = j.due
    out[o + 4] = j.created
    out[o + 5] = j.inc
    out[o + 6] = body
  end
end

for pass = 1, 2 do
  for _, t in ipairs(topics) do
    local limit = t.share
    if pass == 2 then limit = t.cap end
    while not t.empty and t.taken < limit and taken_total < budget and bytes < budget_bytes do
      take(t, math.min(limit - t.taken, budget - taken_total))
    end
  end
end
bulk_write('HSET', kFlatRecords, metas_out)
if #working_out > 2 then
  bulk_write('ZADD', KEYS[2], working_out)
end
bulk_write('RPUSH', KEYS[4], lease_out)
local left = 0
for _, t in ipairs(topics) do
  if t.taken > 0 then
    count(KEYS[3], t.name, 'r', -t.taken)
    count(KEYS[3], t.name, 'w', t.taken)
  end
  left = left + redis.call('LLEN', tagged(ARGV[2]) .. t.name)
end
if taken_total > 0 then
  redis.call('PEXPIRE', KEYS[4], ms_text(longest + tonumber(ARGV[5])))
end
out[1] = left
return out
