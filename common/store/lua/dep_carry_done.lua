-- dep_carry_done: ends the carry of registrations dep_carry_in.lua wrote on
-- the jobs' home shard: the waiters carried leave the job's set here, and
-- the job stops being awaited here once none is left. A registration that
-- came after dep_carry_out.lua read the set stays, for the mover's next
-- pass; so do those of a job that is here again.
-- KEYS[1] the awaited set ({dq}:awaited)
-- ARGV pairs: job key, the waiters carried ('\n'-joined)
-- Returns how many jobs stopped being awaited here.
local ended = 0
for a = 1, #ARGV, 2 do
  local key = ARGV[a]
  if not record_get(key) then
    for waiter in string.gmatch(ARGV[a + 1], '[^\n]+') do
      redis.call('SREM', kWaitersPrefix .. key, waiter)
    end
    if redis.call('SCARD', kWaitersPrefix .. key) == 0 then
      ended = ended + redis.call('SREM', KEYS[1], key)
    end
  end
end
return ended
