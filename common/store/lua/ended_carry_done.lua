-- ended_carry_done: ends the carry of ended records ended_carry_in.lua
-- wrote on the jobs' home: each goes from here unless it changed since it
-- was read (a job of the id that was still here ended meanwhile: its record
-- is carried by the mover's next pass).
-- KEYS[1] any key of the shard's tag (the awaited set), for the call's slot
-- ARGV pairs: job key, the ended record carried
-- Returns how many were removed. Runs on a full shard too (it only
-- removes): a full shard can still be drained.
local removed = 0
for a = 1, #ARGV, 2 do
  local key = kEndedPrefix .. ARGV[a]
  if redis.call('GET', key) == ARGV[a + 1] then
    removed = removed + redis.call('DEL', key)
  end
end
return removed
