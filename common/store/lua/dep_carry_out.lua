-- dep_carry_out: the registrations of jobs that are not here (moved to their
-- home shard, or never added here) that the mover is to carry to their
-- home (checker/shard_mover.h; dep_carry_in.lua there, then
-- dep_carry_done.lua here). Changes nothing.
-- KEYS[1] the awaited set ({dq}:awaited)
-- ARGV the keys of awaited jobs whose home is another shard
-- Returns pairs: job key, the jobs waiting for it ('\n'-joined), for each
-- one that is awaited here and has no record here (one that does ends here,
-- or is moved with its registrations by move_mark.lua).
-- function flags: no-writes
local out = {}
for _, key in ipairs(ARGV) do
  if redis.call('SISMEMBER', KEYS[1], key) == 1 and not record_get(key) then
    out[#out + 1] = key
    out[#out + 1] = table.concat(redis.call('SMEMBERS', kWaitersPrefix .. key), '\n')
  end
end
return out
