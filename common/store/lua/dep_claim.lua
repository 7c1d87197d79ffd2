-- dep_claim: the releaser (checker/dependency_loop.h) takes up to ARGV[1]
-- events of this shard's dependency outbox whose time has come, each for
-- ARGV[2] ms (its lease: no other releaser, on this host or another, hands
-- it out meanwhile), with the waiters of the job each names.
-- KEYS[1] the outbox zset ({dq}:depout)
-- Returns {Redis's now (ms), {event number, "how\nended ms\nkey\nwhy",
-- {waiter key, ...}}, ...}. An event whose text is gone is dropped.
local now = redis_now()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, n in ipairs(due) do
  local text = redis.call('HGET', kDepEvents, n)
  if not text then
    redis.call('ZREM', KEYS[1], n)
  else
    redis.call('ZADD', KEYS[1], ms_text(now + tonumber(ARGV[2])), n)
    local key = string.match(text, '^%a\n%d+\n([^\n]*)\n')
    out[#out + 1] = {n, text, redis.call('SMEMBERS', kWaitersPrefix .. (key or ''))}
  end
end
return {now, out}
