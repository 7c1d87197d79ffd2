-- ack: deliveries succeeded, so their jobs are done and removed; many jobs
-- per call (a consumer acks what finished since its last round trip).
-- KEYS[1] jobs  KEYS[2] bodies  KEYS[3] working  KEYS[4] delayed  KEYS[5] errors
-- KEYS[6] stats of the day  KEYS[7] counts
-- ARGV[1] ready key prefix  ARGV[2] dead key prefix
-- then per job three entries: job key, incarnation, reserve id.
-- Only the job that was delivered is touched: a job deleted and re-added
-- meanwhile has another incarnation and is left alone. The same job whose
-- lease expired (requeued, or leased again) is removed too: its callback
-- succeeded, and delivering it again would only be a duplicate. The acks
-- apply in order, as if each were its own call: a job acked twice in one
-- call is gone for the second.
-- The common case costs a fixed number of redis.calls per call, not per job:
-- one HMGET, one ZREM and two HDELs for all (a third for bodies stored
-- apart), the counters once per topic.
-- Returns one entry per job: 1 acked under its lease, 2 acked after its
-- lease expired, 0 gone (deleted, acked already, or replaced by a newer job).
local keys, out = {}, {}
for i = 3, #ARGV, 3 do keys[#keys + 1] = ARGV[i] end
local metas = bulk_read('HMGET', KEYS[1], keys)
local done, working, delayed, apart, per_state, per_topic = {}, {}, {}, {}, {}, {}
for n, key in ipairs(keys) do
  local inc, lease = ARGV[3 * n + 1], ARGV[3 * n + 2]
  local j = (not done[key]) and parse_record(metas[n]) or nil
  if not j or j.inc ~= inc or j.state == 'h' then
    out[n] = 0
  else
    out[n] = 2
    if j.state == 'w' and j.lease == lease then out[n] = 1 end
    done[key] = true
    if j.rest == '' then apart[#apart + 1] = key end
    local topic = topic_of(key)
    if j.state == 'w' then
      working[#working + 1] = key
    elseif j.state == 'd' or j.state == 'y' then
      delayed[#delayed + 1] = key
    else  -- ready or dead: rare (acked after its lease expired), one call each
      unlink_job(key, j, KEYS[4], ARGV[1] .. topic, KEYS[3], ARGV[2] .. topic, {})
    end
    local counted = topic .. ':' .. j.state
    per_state[counted] = (per_state[counted] or 0) + 1
    per_topic[topic] = (per_topic[topic] or 0) + 1
  end
end
local gone = {}
for key in pairs(done) do gone[#gone + 1] = key end
if #gone > 0 then
  bulk_write('ZREM', KEYS[3], working)
  bulk_write('ZREM', KEYS[4], delayed)
  bulk_write('HDEL', KEYS[1], gone)
  bulk_write('HDEL', KEYS[2], apart)
  bulk_write('HDEL', KEYS[5], gone)
  for counted, n in pairs(per_state) do redis.call('HINCRBY', KEYS[7], counted, -n) end
  local now = redis_now()
  for topic, n in pairs(per_topic) do stat(KEYS[6], topic, 'delivered', n, now) end
end
return out
