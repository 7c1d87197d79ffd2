-- move_lease: takes or renews the lease of a draining shard's mover, so one
-- host's dq-redis-checker moves its jobs at a time (checker/shard_mover.h).
-- KEYS[1] lease key  ARGV[1] holder  ARGV[2] lease ms
-- Returns 1 held by the caller now, 0 held by another.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
