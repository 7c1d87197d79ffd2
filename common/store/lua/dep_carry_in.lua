-- dep_carry_in: on a job's home shard, registers the jobs that wait for it
-- as another shard had them (dep_carry_out.lua there): registrations made
-- while its home was that shard, carried by the mover
-- (checker/shard_mover.h) once the job itself is here or was never added.
-- As dep_register.lua, except that a job that ended here already, delivered
-- too, gets an event at once: its waiters registered before it ended.
-- KEYS[1] the awaited set ({dq}:awaited)
-- ARGV pairs: job key, the jobs waiting for it ('\n'-joined)
-- Returns how many jobs' registrations were written.
-- function flags: none
local written, now = 0, nil
for a = 1, #ARGV, 2 do
  local key = ARGV[a]
  add_waiters(key, ARGV[a + 1])
  local how, why = how_ended_here(key)
  if how then
    now = now or redis_now()
    dep_event(key, how, why, now)
  else
    redis.call('SADD', KEYS[1], key)
  end
  written = written + 1
end
return written
