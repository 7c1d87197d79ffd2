-- ack: deliveries succeeded, so their jobs are done and removed; many jobs
-- per call (a consumer acks what finished since its last round trip).
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] working  KEYS[4] due index  KEYS[5] errors
-- KEYS[6] stats of the day  KEYS[7] counts
-- ARGV[1] ready key prefix  ARGV[2] dead key prefix
-- then per job seven entries: job key, incarnation, reserve id, the key's
-- bucket, its topic's end memory (remember_end: '0' remembers nothing),
-- the delivery's detail for the topic's history ("status|host|answer's
-- first bytes", or '' when it keeps none), and '1' for a strict ack (a
-- pull worker's token): only the current lease counts, see below.
-- Only the job that was delivered is touched: a job deleted and re-added
-- meanwhile has another incarnation and is left alone. The same job whose
-- lease expired (requeued, or leased again) is removed too: its callback
-- succeeded, and delivering it again would only be a duplicate. A strict
-- ack is different: a pull worker's lease that ran out may be another
-- worker's job now, so it acks only a job still working under that very
-- lease (else 0, nothing changed). The acks
-- apply in order, as if each were its own call: a job acked twice in one
-- call is gone for the second.
-- The common case costs a fixed number of redis.calls per call, not per job:
-- one HMGET, one ZREM, two HDELs and one SMISMEMBER ({dq}:awaited: an
-- event for the waiters of an awaited job, dep_ended_all) for all (a third
-- HDEL for bodies stored apart), the counters once per topic.
-- Returns one entry per job: 1 acked under its lease, 2 acked after its
-- lease expired, 0 gone (deleted, acked already, or replaced by a newer job).
local kPerAck = 7
local keys, buckets, out = {}, {}, {}
for base = 3, #ARGV, kPerAck do
  keys[#keys + 1] = ARGV[base]
  buckets[#buckets + 1] = ARGV[base + 3]
end
local now = redis_now()
-- Acked jobs are in flight: their records are in the flat hash. A miss may
-- be a job that became pending again (retrying after its lease expired):
-- its bucket is asked too.
local records = bulk_read('HMGET', kFlatRecords, keys)
local done, working, flat_gone, apart, per_state, per_topic = {}, {}, {}, {}, {}, {}
local errors_gone = {}
for n, key in ipairs(keys) do
  local base = 3 + (n - 1) * kPerAck
  local inc, lease, bucket = ARGV[base + 1], ARGV[base + 2], buckets[n]
  local record, from = records[n], 'flat'
  if not record and not done[key] then
    record = redis.call('HGET', KEYS[1] .. bucket, key)
    from = record and 'bucket' or nil
  end
  local j = (not done[key]) and parse_record(record) or nil
  if j and ARGV[base + 6] == '1' and (j.state ~= 'w' or j.lease ~= lease) then
    j = nil  -- strict: not under this lease
  end
  if not j or j.inc ~= inc then
    out[n] = 0
  else
    out[n] = 2
    if j.state == 'w' and j.lease == lease then out[n] = 1 end
    done[key] = true
    if ARGV[base + 4] ~= '0' then
      remember_end(key, 'a', j, body_of(j, key, KEYS[2]), ARGV[base + 4], now, ARGV[base + 5])
    end
    errors_gone[#errors_gone + 1] = key
    if j.rest == '' then apart[#apart + 1] = key end
    local topic = topic_of(key)
    if j.state == 'w' then
      working[#working + 1] = key
    else  -- ready, retrying or dead: rare (acked after its lease expired), one call each
      unlink_job(key, j, tagged(ARGV[1]) .. topic, KEYS[3], tagged(ARGV[2]) .. topic, from, bucket)
    end
    if from == 'flat' then
      flat_gone[#flat_gone + 1] = key
    else
      record_del(key, from, bucket)
    end
    local counted = topic .. ':' .. j.state
    per_state[counted] = (per_state[counted] or 0) + 1
    per_topic[topic] = (per_topic[topic] or 0) + 1
  end
end
if #errors_gone > 0 then
  dep_ended_all(errors_gone, 'a', '', now)  -- one SMISMEMBER: their waiters' events
  bulk_write('ZREM', KEYS[3], working)
  bulk_write('HDEL', kFlatRecords, flat_gone)
  bulk_write('HDEL', KEYS[2], apart)
  bulk_write('HDEL', KEYS[5], errors_gone)
  for counted, n in pairs(per_state) do redis.call('HINCRBY', KEYS[7], counted, int_text(-n)) end
  for topic, n in pairs(per_topic) do stat(KEYS[6], topic, 'delivered', n, now) end
end
return out
