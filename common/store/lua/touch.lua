-- touch: a pull worker extends its lease on a job (POST .../touch).
-- KEYS[1] records prefix  KEYS[2] working
-- ARGV[1] job key  ARGV[2] incarnation  ARGV[3] reserve id (the lease)
-- ARGV[4] the new lease, ms from Redis's now
-- Only the current lease holder's touch counts: the job must be working
-- under that lease and incarnation (a lease that ran out and was requeued,
-- leased again, acked, deleted or replaced: stale, nothing changed). A
-- lease that ran out but was not requeued yet is still this worker's: the
-- touch renews it.
-- Returns {1, the lease's new end ms} or {0, 0} stale.
local key = ARGV[1]
local record = record_get(key)
local j = parse_record(record)
if not j or j.state ~= 'w' or j.inc ~= ARGV[2] or j.lease ~= ARGV[3] then
  return {0, 0}
end
local until_ms = redis_now() + tonumber(ARGV[4])
redis.call('ZADD', KEYS[2], 'XX', ms_text(until_ms), key)
return {1, until_ms}
