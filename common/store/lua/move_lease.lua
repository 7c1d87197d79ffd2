-- move_lease: takes or renews the lease of the mover of a shard moving in or
-- draining, so one dq-redis-checker moves its jobs at a time
-- (checker/shard_mover.h). The
-- lease is short and renewed on every pass; a holder the caller knows is
-- dead (its own host, a pid that is gone: a checker killed and restarted)
-- is taken over at once.
-- A draining shard's also keeps the time it was first seen draining
-- (KEYS[2]), which a removal waits on (common/registry/shard_list.h,
-- drain_settled).
-- KEYS[1] lease key  KEYS[2] draining-since key
-- ARGV[1] holder  ARGV[2] lease ms  ARGV[3] a holder known dead, or ''
-- ARGV[4] how long the draining-since time outlives the last pass (ms); 0:
-- the shard moves in, no such time
-- Returns 1 held by the caller now, 0 held by another.
if ARGV[4] ~= '0' then
  redis.call('SET', KEYS[2], string.format('%d', redis_now()), 'NX')
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] and (ARGV[3] == '' or holder ~= ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
