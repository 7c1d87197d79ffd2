-- ack: a delivery succeeded, so the job is done and removed.
-- KEYS[1] jobs  KEYS[2] bodies  KEYS[3] working  KEYS[4] delayed
-- KEYS[5] ready list of topic  KEYS[6] dead zset of topic  KEYS[7] errors
-- KEYS[8] stats of the day  KEYS[9] counts
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] incarnation  ARGV[4] reserve id
-- Only the job that was delivered is touched: a job deleted and re-added
-- meanwhile has another incarnation and is left alone. The same job whose
-- lease expired (requeued, or leased again) is removed too: its callback
-- succeeded, and delivering it again would only be a duplicate.
-- Returns 1 acked under its lease, 2 acked after its lease expired,
-- 0 gone (deleted, acked already, or replaced by a newer job).
local key, topic = ARGV[1], ARGV[2]
local j = parse_meta(redis.call('HGET', KEYS[1], key))
if not j or j.inc ~= ARGV[3] or j.state == 'h' then
  return 0
end
local result = 2
if j.state == 'w' and j.lease == ARGV[4] then result = 1 end
unlink_job(key, j, KEYS[4], KEYS[5], KEYS[3], KEYS[6], {})
redis.call('HDEL', KEYS[1], key)
redis.call('HDEL', KEYS[2], key)
redis.call('HDEL', KEYS[7], key)
count(KEYS[9], topic, j.state, -1)
stat(KEYS[8], topic, 'delivered', 1)
return result
