-- circuit_list: every receiver circuit this shard holds, for /metrics, the
-- admin page and dqctl circuits (read only).
-- KEYS[1] set of receivers with a circuit  ARGV[1] circuit key prefix
-- Returns {receiver, {field, value, ...}, receiver, {...}, ...}.
-- function flags: no-writes
local out = {}
for _, receiver in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  out[#out + 1] = receiver
  out[#out + 1] = redis.call('HGETALL', tagged(ARGV[1]) .. receiver)
end
return out
