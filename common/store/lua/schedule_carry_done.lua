-- schedule_carry_done: ends the carry of a schedule's next tick to its new
-- home shard (schedule_carry_in.lua wrote it there): the key
-- here goes, unless a timer that still placed the schedule here moved it
-- on meanwhile (it is carried again by the mover's next pass).
-- KEYS[1] the schedule's next tick  ARGV[1] the value carried
-- Returns 1 when removed, 0 when it changed.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
