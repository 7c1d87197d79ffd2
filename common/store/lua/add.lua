-- add: store new jobs unless one with the same (topic, id) is held here.
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] stats of the day
-- KEYS[5] timer wake list  KEYS[6] counts  KEYS[7] seq  KEYS[8] moved markers
-- ARGV[1] held set prefix  ARGV[2] shards to verify against, comma separated
-- ARGV[3] every shard the caller could not reach, comma separated
-- then six per job: job key "topic:id", topic, body, 'delay' (ms from
-- Redis's now) or 'at' (epoch ms; one in the past is due at Redis's now,
-- and that is the due time answered), the ms, and the key's bucket.
-- One call stores many jobs: the API server sends together the adds of one
-- event-loop turn that go to this shard (common/store/add_batcher.h). The work a
-- call pays once (TIME, the timer wake check, the counters summed per topic,
-- one HMGET of the flat hash, one ZADD LT of the due index) is what made a
-- one-job call cost ~3x its job's own writes. Each job has its own bucket:
-- a new pending job costs an HSETNX into it and a ZADD into its due zset.
-- A job added while a shard that may hold the same id was unreachable is
-- kept in state h (held) in {dq}:held:<shard> until that shard has been
-- asked (timer/held_verifier.h); it is not delivered before.
-- Returns one reply per job, in order, each one string "verdict|due|state":
-- "added|due|state"; "same|due|state" when the same id is held with the
-- same body (a retried add: nothing changes); "exists||state" when it is
-- held with another body, or dead. Strings, not a table per job: a table
-- per job and its conversion to a reply cost ~11 % of the call.
local now = redis_now()
local created = ms_text(now)
local verify = {}
local any_verify = false
for name in string.gmatch(ARGV[2], '[^,]+') do
  verify[name] = true
  any_verify = true
end
local unreachable = {}
for name in string.gmatch(ARGV[3], '[^,]+') do unreachable[name] = true end
-- Markers are rare: without the hash, no job of this call needs its HGET.
local any_moved = redis.call('EXISTS', KEYS[8]) == 1
local kPerJob = 6
local jobs = (#ARGV - 3) / kPerJob
-- The n-th new job's incarnation is seq + n; seq moves on by the new jobs
-- only, so an add that stores nothing changes nothing.
local seq = tonumber(redis.call('GET', KEYS[7]) or '0')
local stored = 0

-- Held, in-flight and dead jobs are in the flat hash: one HMGET for all.
-- Ids repeated within the call go by in_call.
local job_keys = {}
for i = 1, jobs do job_keys[i] = ARGV[4 + (i - 1) * kPerJob] end
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

-- meta_text() of {state, attempts 0, due, created, inc, no lease, no max},
-- written out: no table per job.
local function new_job_record(state, due, body)
  return new_record(state .. '|0|' .. due .. '|' .. created .. '|' ..
                    string.format('%d', seq + stored + 1) .. '||', body)
end

local metas, bodies, delayed = {}, {}, {}
local in_call = {}          -- key -> index of the job of this call that added it
local counted_d, counted_h, added = {}, {}, {}  -- topic -> new jobs delayed, held, all
local earliest, earliest_text = nil, nil
local replies = {}
for i = 1, jobs do
  local a = 4 + (i - 1) * kPerJob
  local key, topic, body = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local first = in_call[key]
  if first then
    local due, state = string.match(replies[first], '^added|(%d+)|(%a)$')
    if ARGV[4 + (first - 1) * kPerJob + 2] == body then
      replies[i] = 'same|' .. due .. '|' .. state
    else
      replies[i] = 'exists||' .. state
    end
  else
    local bucket_key = KEYS[1] .. ARGV[a + 5]
    local existing = parse_record(in_flat[i])
    local written, record, body_apart, due, due_ms = false, nil, false, nil, nil
    if not existing then
      if not any_verify and not any_moved then
        -- The common case, a new pending job: one HSETNX both looks for it
        -- in its bucket and writes it there.
        due, due_ms = due_of(a)
        record, body_apart = new_job_record('d', due, body)
        if redis.call('HSETNX', bucket_key, key, record) == 1 then
          written = true
        else
          existing = parse_record(redis.call('HGET', bucket_key, key))
        end
      else
        existing = parse_record(redis.call('HGET', bucket_key, key))
      end
    end
    if existing then
      if existing.state ~= 'x' and body_of(existing, key, KEYS[2]) == body then
        replies[i] = 'same|' .. existing.due .. '|' .. existing.state
      else
        replies[i] = 'exists||' .. existing.state
      end
    else
      local state = 'd'
      local also_hold = nil
      if not written then
        due, due_ms = due_of(a)
        -- A marker left when a copy of this id was verified on another shard:
        -- if that shard cannot be asked now, it may still hold the job.
        local moved_to = any_moved and redis.call('HGET', KEYS[8], key)
        if moved_to then
          if unreachable[moved_to] then
            if not verify[moved_to] then also_hold = moved_to end
          else
            redis.call('HDEL', KEYS[8], key)  -- the caller asked that shard: it holds no copy
          end
        end
        if any_verify or moved_to and unreachable[moved_to] then state = 'h' end
        record, body_apart = new_job_record(state, due, body)
        metas[#metas + 1] = {key, record, ARGV[a + 5]}
      end
      stored = stored + 1
      if body_apart then
        bodies[#bodies + 1] = key
        bodies[#bodies + 1] = body
      end
      if state == 'd' then
        delayed[#delayed + 1] = {ARGV[a + 5], due, key}
        if earliest == nil or due_ms < earliest then
          earliest, earliest_text = due_ms, due
        end
        counted_d[topic] = (counted_d[topic] or 0) + 1
      else
        for name in pairs(verify) do redis.call('ZADD', tagged(ARGV[1]) .. name, due, key) end
        if also_hold then redis.call('ZADD', tagged(ARGV[1]) .. also_hold, due, key) end
        counted_h[topic] = (counted_h[topic] or 0) + 1
      end
      added[topic] = (added[topic] or 0) + 1
      in_call[key] = i
      replies[i] = 'added|' .. due .. '|' .. state
    end
  end
end
if stored > 0 then
  redis.call('INCRBY', KEYS[7], stored)
  for _, m in ipairs(metas) do record_set(m[1], m[2], nil, m[3]) end
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
for topic, n in pairs(counted_h) do redis.call('HINCRBY', KEYS[6], topic .. ':h', n) end
for topic, n in pairs(added) do stat(KEYS[4], topic, 'added', n, now) end
return replies
