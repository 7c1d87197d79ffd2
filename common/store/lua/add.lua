-- add: store new jobs on their home shard (common/store/placement.h).
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] stats of the day
-- KEYS[5] timer wake list  KEYS[6] counts  KEYS[7] seq  KEYS[8] fence
-- ARGV[1] the jobs' next home while the shard list changes ('' when none):
-- this shard refuses them when that home was named in its fence (KEYS[8])
-- within ARGV[2] ms: a host that already places them there looked here
-- (common/store/fence.h)
-- ARGV[2] how long a name in the fence holds (ms)
-- then seven per job: job key "topic:id", topic, body, 'delay' (ms from
-- Redis's now) or 'at' (epoch ms; one in the past is due at Redis's now,
-- and that is the due time answered), the ms, the key's bucket, and when
-- it expires: '' never, 'ttl:<ms>' that long after its due time, 'at:<ms>'
-- at that epoch ms (the record's tenth field: never delivered after it).
-- One call stores many jobs: the API server sends together the adds of one
-- event-loop turn that go to this shard (common/store/add_batcher.h). The work a
-- call pays once (TIME, the timer wake check, the counters summed per topic,
-- one HMGET of the flat hash, one ZADD LT of the due index) is what made a
-- one-job call cost ~3x its job's own writes. Each job has its own bucket:
-- a new pending job costs an HSETNX into it and a ZADD into its due zset.
-- Returns one reply per job, in order, each one string "verdict|due|state":
-- "added|due|d"; "same|due|state" when the same id is pending with the
-- same body (a retried add: nothing changes); "ended|due|how|ended at" when
-- it ran (delivered, dead) with the same body within its topic's
-- dedup window (a retried add whose job already ran: nothing changes;
-- remember_end in the prelude); "exists||state" when it is pending with
-- another body, or dead; "fenced||<next home>" when ARGV[1] is fenced here
-- (nothing written). Strings, not a table per job: a table per
-- job and its conversion to a reply cost ~11 % of the call.
local kPerJob = 7
local kFirstJob = 3
local jobs = (#ARGV - kFirstJob + 1) / kPerJob
local now = redis_now()
if ARGV[1] ~= '' then
  local named = redis.call('ZSCORE', KEYS[8], ARGV[1])
  if named and tonumber(named) > now - tonumber(ARGV[2]) then
    local replies = {}
    for i = 1, jobs do replies[i] = 'fenced||' .. ARGV[1] end
    return replies
  end
end
local created = ms_text(now)
-- The n-th new job's incarnation is seq + n; seq moves on by the new jobs
-- only, so an add that stores nothing changes nothing.
local seq = tonumber(redis.call('GET', KEYS[7]) or '0')
local stored = 0

-- In-flight and dead jobs are in the flat hash: one HMGET for all.
-- Ids repeated within the call go by in_call.
local job_keys = {}
for i = 1, jobs do job_keys[i] = ARGV[kFirstJob + (i - 1) * kPerJob] end
local in_flat = bulk_read('HMGET', kFlatRecords, job_keys)

-- Number formatting is the costly part of Lua's string work (Lua numbers are
-- doubles: '%.0f' goes through printf's float path), and a call's jobs mostly
-- share a delay: each distinct delay is formatted once.
local due_text_of_delay, due_ms_of_delay = {}, {}
local function due_of(a)
  local when = ARGV[a + 4]
  if ARGV[a + 3] ~= 'delay' then
    local at = tonumber(when)
    if at < now then return created, now end  -- in the past: due at once, at Redis's now
    return when, at
  end
  local due = due_text_of_delay[when]
  if due then return due, due_ms_of_delay[when] end
  local due_ms = now + tonumber(when)
  due = ms_text(due_ms)
  due_text_of_delay[when], due_ms_of_delay[when] = due, due_ms
  return due, due_ms
end

-- meta_text() of {state, attempts 0, due, created, inc, no lease, no max,
-- and its expiry when it has one}, written out: no table per job.
local function new_job_record(due, due_ms, expiry, body)
  local meta = 'd|0|' .. due .. '|' .. created .. '|' .. string.format('%d', seq + stored + 1) .. '||'
  if expiry ~= '' then
    local how, ms = string.match(expiry, '^(%a+):(%d+)$')
    local expires = tonumber(ms)
    if how == 'ttl' then expires = due_ms + expires end
    meta = meta .. '|0||' .. ms_text(expires)
  end
  return new_record(meta, body)
end

local bodies, delayed = {}, {}
local in_call = {}          -- key -> index of the job of this call that added it
local counted_d, added = {}, {}  -- topic -> new jobs delayed, all
local earliest, earliest_text = nil, nil
local replies = {}
for i = 1, jobs do
  local a = kFirstJob + (i - 1) * kPerJob
  local key, topic, body = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local first = in_call[key]
  if first then
    local due, state = string.match(replies[first], '^added|(%d+)|(%a)$')
    if ARGV[kFirstJob + (first - 1) * kPerJob + 2] == body then
      replies[i] = 'same|' .. due .. '|' .. state
    else
      replies[i] = 'exists||' .. state
    end
  else
    local bucket_key = KEYS[1] .. ARGV[a + 5]
    local existing = parse_record(in_flat[i])
    local record, body_apart, due, due_ms = nil, false, nil, nil
    local how, ended_at, ended_due = nil, nil, nil
    if not existing then
      -- Ended within its topic's dedup window with this body: a retry of
      -- an add that was stored (its answer lost) and ran already. Unless a
      -- newer job of the id is pending in its bucket, nothing is written.
      how, ended_at, ended_due = ended_with(key, body, now)
      if how then
        existing = parse_record(redis.call('HGET', bucket_key, key))
      else
        -- A new pending job: one HSETNX both looks for it in its bucket and
        -- writes it there.
        due, due_ms = due_of(a)
        record, body_apart = new_job_record(due, due_ms, ARGV[a + 6], body)
        if redis.call('HSETNX', bucket_key, key, record) == 0 then
          existing = parse_record(redis.call('HGET', bucket_key, key))
        end
      end
    elseif existing.state == 'x' then
      how, ended_at, ended_due = ended_with(key, body, now)  -- died within the window
    end
    if existing and not (existing.state == 'x' and how) then
      if existing.state ~= 'x' and body_of(existing, key, KEYS[2]) == body then
        replies[i] = 'same|' .. existing.due .. '|' .. existing.state
      else
        replies[i] = 'exists||' .. existing.state
      end
    elseif how then
      replies[i] = 'ended|' .. ended_due .. '|' .. how .. '|' .. ended_at
    else
      stored = stored + 1
      if body_apart then
        bodies[#bodies + 1] = key
        bodies[#bodies + 1] = body
      end
      delayed[#delayed + 1] = {ARGV[a + 5], due, key}
      if earliest == nil or due_ms < earliest then
        earliest, earliest_text = due_ms, due
      end
      counted_d[topic] = (counted_d[topic] or 0) + 1
      added[topic] = (added[topic] or 0) + 1
      in_call[key] = i
      replies[i] = 'added|' .. due .. '|d'
    end
  end
end
if stored > 0 then
  redis.call('INCRBY', KEYS[7], stored)
  if #bodies > 0 then redis.call('HSET', KEYS[2], unpack(bodies)) end
end
if earliest_text then
  wake_timer_if_first(KEYS[3], KEYS[5], earliest_text)  -- before lowering: compares with the old first
  -- Each job into its bucket's due zset; the index lowered in one ZADD LT.
  local lower = {}
  for _, d in ipairs(delayed) do
    redis.call('ZADD', due_key(d[1]), d[2], d[3])
    lower[#lower + 1] = d[2]
    lower[#lower + 1] = d[1]
  end
  for first = 1, #lower, kBulkChunk do
    redis.call('ZADD', KEYS[3], 'LT', unpack(lower, first, math.min(#lower, first + kBulkChunk - 1)))
  end
end
for topic, n in pairs(counted_d) do redis.call('HINCRBY', KEYS[6], topic .. ':d', n) end
for topic, n in pairs(added) do stat(KEYS[4], topic, 'added', n, now) end
return replies
