-- move_lease: takes or renews the lease of a draining shard's mover, so one
-- dq-redis-checker moves its jobs at a time (checker/shard_mover.h). The
-- lease is short and renewed on every pass; a holder the caller knows is
-- dead (its own host, a pid that is gone: a checker killed and restarted)
-- is taken over at once.
-- KEYS[1] lease key  ARGV[1] holder  ARGV[2] lease ms  ARGV[3] a holder known dead, or ''
-- Returns 1 held by the caller now, 0 held by another.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] and (ARGV[3] == '' or holder ~= ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
