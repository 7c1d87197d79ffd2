-- reserve: lease ready jobs to a consumer, topic by topic in the order given.
-- KEYS[1] jobs  KEYS[2] working
-- ARGV[1] now ms  ARGV[2] ready key prefix
-- then triples from ARGV[3]: topic, lease ms, most jobs to take from it.
-- Each job taken gets attempts+1, state w, and a lease deadline in working.
-- Returns a flat array, five entries per job:
--   job key, attempt, due ms, created ms, body
local now = tonumber(ARGV[1])
local out = {}
for i = 3, #ARGV, 3 do
  local topic = ARGV[i]
  local lease = tonumber(ARGV[i + 1])
  local most = tonumber(ARGV[i + 2])
  local taken = 0
  while taken < most do
    local key = redis.call('LPOP', ARGV[2] .. topic)
    if not key then break end
    local record = redis.call('HGET', KEYS[1], key)
    if record and string.sub(record, 1, 1) == 'r' then
      local attempts, due, created, body = string.match(record, '^.|(%d+)|(%d+)|(%d+)|(.*)$')
      local attempt = tonumber(attempts) + 1
      redis.call('HSET', KEYS[1], key, 'w|' .. attempt .. '|' .. due .. '|' .. created .. '|' .. body)
      redis.call('ZADD', KEYS[2], string.format('%.0f', now + lease), key)
      out[#out + 1] = key
      out[#out + 1] = attempt
      out[#out + 1] = due
      out[#out + 1] = created
      out[#out + 1] = body
      taken = taken + 1
    end
  end
end
return out
