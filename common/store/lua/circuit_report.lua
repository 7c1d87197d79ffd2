-- circuit_report: one ended call to a receiver (a callback host:port), for
-- its circuit breaker; the rules of common/store/circuit_state.h, on the
-- receiver's one shared copy, so every consumer of every host sees the same.
-- KEYS[1] the receiver's circuit hash  KEYS[2] set of receivers with a circuit
-- ARGV[1] receiver  ARGV[2] '1' a receiver failure, '0' an answer that proves it alive
-- ARGV[3] threshold (the topic's circuit_failures)  ARGV[4] circuit_open_ms
-- ARGV[5] most wait, ms  ARGV[6] error  ARGV[7] reporting process  ARGV[8] lease ms
-- A healthy receiver costs nothing: an answer while closed with no failures
-- counted writes nothing.
-- Returns {change, field, value, ...}: change '' or 'opened' or 'closed' (each
-- given to exactly one report, so the alert goes out once), then the hash.
local c = redis.call('HGETALL', KEYS[1])
local h = {}
for i = 1, #c, 2 do h[c[i]] = c[i + 1] end
local phase = h.phase or 'closed'
local failures = tonumber(h.failures or '0')
local failed = ARGV[2] == '1'
if not failed and phase == 'closed' and failures == 0 then
  table.insert(c, 1, '')
  return c
end
local now = redis_now()
local change = ''
local function open_it(wait)
  redis.call('HSET', KEYS[1], 'phase', 'open', 'since', ms_text(now), 'open_ms', ms_text(wait),
    'probe_at', ms_text(now + wait), 'allowed', '1', 'holder', '', 'lease_until', '0')
end
if failed then
  failures = failures + 1
  redis.call('HSET', KEYS[1], 'failures', failures, 'last_error', ARGV[6],
    'last_error_at', ms_text(now))
  redis.call('SADD', KEYS[2], ARGV[1])
  if phase == 'closed' then
    if failures >= math.max(1, tonumber(ARGV[3])) then
      redis.call('HSET', KEYS[1], 'opened_at', ms_text(now))
      open_it(tonumber(ARGV[4]))
      change = 'opened'
    end
  elseif phase == 'half_open' then
    local base = tonumber(ARGV[4])
    local most = math.max(base, tonumber(ARGV[5]))
    open_it(math.min(most, math.max(base, tonumber(h.open_ms or '0') * 2)))
  end
elseif phase == 'closed' then
  redis.call('HSET', KEYS[1], 'failures', '0')
else
  local allowed = tonumber(h.allowed or '1')
  if phase == 'open' then
    allowed = 1
    redis.call('HSET', KEYS[1], 'phase', 'half_open', 'since', ms_text(now))
  end
  allowed = allowed * 2
  if allowed >= 16 then  -- kCloseAllowed
    redis.call('HSET', KEYS[1], 'phase', 'closed', 'failures', '0', 'since', ms_text(now),
      'open_ms', '0', 'probe_at', '0', 'allowed', '1', 'holder', '', 'lease_until', '0')
    change = 'closed'
  else
    redis.call('HSET', KEYS[1], 'allowed', allowed)
    if h.holder == ARGV[7] then
      redis.call('HSET', KEYS[1], 'lease_until', ms_text(now + tonumber(ARGV[8])))
    end
  end
end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, change)
return out
