-- dead_callback_claim: takes up to ARGV[1] entries of the dead-letter callback
-- outbox whose time has come, each for ARGV[2] ms (its lease: no other checker,
-- on this host or another, sends it meanwhile), marked as held by ARGV[3].
-- KEYS[1] the outbox zset ({dq}:deadcb)
-- Returns {Redis's now (ms), {entry number, {field, value, ...}, ...}}.
local now = redis_now()
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {}
for _, n in ipairs(due) do
  local entry = kDeadCallbacks .. ':' .. n
  local fields = redis.call('HGETALL', entry)
  if #fields == 0 then
    redis.call('ZREM', KEYS[1], n)  -- its hash is gone: nothing to send
  else
    redis.call('ZADD', KEYS[1], ms_text(now + tonumber(ARGV[2])), n)
    redis.call('HSET', entry, 'claim', ARGV[3])
    out[#out + 1] = n
    out[#out + 1] = fields
  end
end
return {now, out}
