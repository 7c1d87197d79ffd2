-- dep_register: a job B about to be added names jobs it waits for ("after");
-- run on the shard of those jobs (their home) before B is added on its own,
-- so no job of them can end unseen between the two: from here on, the
-- script that ends one appends an event for its waiters (dep_ended in the
-- prelude). A B whose add then fails leaves a harmless registration: the
-- releaser finds no B and drops it (checker/dependency_loop.h).
-- KEYS[1] the awaited set ({dq}:awaited)
-- ARGV[1] B's key, ARGV[2] n, then the keys of the jobs it waits for: the
-- first n have their home here, the others their previous or next home
-- while the shard list changes (common/store/placement.h)
-- Per awaited job A:
--   A pending here (any state but dead)   registered: B waits for it
--   A gone, its ended record says delivered          not registered: B does not wait for it
--   A gone, its ended record says dead, expired or deleted (or A is a dead
--   letter here)   registered, and an event for A appended at once: the
--   releaser hands it to B once B is added, as if A ended now
--   A unknown (not added yet, or forgotten)  registered: B waits for it
--   (A may come later; a B that waits for a job that never comes waits
--   until its own ttl or expire_at); on a shard that is not A's home, not
--   registered: A is added on its home only, where B registers too, and a
--   registration here would be carried there by the mover, again and
--   again while such adds come (checker/shard_mover.h)
-- Returns one string per awaited job, in order: 'wait', 'delivered', or
-- 'ended' (dead, expired or deleted: its event is out).
-- function flags: none
local out = {}
local waiter = ARGV[1]
local now = nil
local at_home = tonumber(ARGV[2])
for n = 3, #ARGV do
  local key = ARGV[n]
  local how, why = how_ended_here(key)
  if how == 'a' then
    out[#out + 1] = 'delivered'
  elseif how then
    redis.call('SADD', kWaitersPrefix .. key, waiter)
    now = now or redis_now()
    dep_event(key, how, why, now)
    out[#out + 1] = 'ended'
  elseif n - 2 <= at_home or record_get(key) then
    redis.call('SADD', KEYS[1], key)
    redis.call('SADD', kWaitersPrefix .. key, waiter)
    out[#out + 1] = 'wait'
  else
    out[#out + 1] = 'wait'  -- unknown here: registered on its home
  end
end
return out
