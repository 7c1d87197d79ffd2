-- schedule_carry_in: a schedule's next tick as another shard holds it (its
-- previous home while its home changes, or a shard a past change left it
-- on) is written on its home, unless the home holds a later one: a next
-- tick only ever grows, so the later of the two is the schedule's state and
-- no tick is added twice (checker/shard_mover.h, timer/schedule_runner.h).
-- KEYS[1] the schedule's next tick  ARGV[1] the next tick carried (epoch ms)
-- Returns the next tick stored now.
-- function flags: none
local stored = redis.call('GET', KEYS[1])
if stored and tonumber(stored) >= tonumber(ARGV[1]) then return stored end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
