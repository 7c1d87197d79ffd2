-- circuit_report: one ended call, for the circuit breakers it counts
-- against: its endpoint's (host:port/path) and its receiver's (host:port);
-- the rules of common/store/circuit_state.h, on the one shared copy of each,
-- so every consumer of every host sees the same. Both hashes are on the
-- receiver's shard, so one script changes them together.
-- KEYS[1] set of circuits on this shard  KEYS[2], KEYS[3]... the circuit hashes
-- ARGV[1] threshold (the topic's circuit_failures)  ARGV[2] circuit_open_ms
-- ARGV[3] most wait, ms  ARGV[4] error  ARGV[5] reporting process  ARGV[6] lease ms
-- then per hash of KEYS[1 + i]: ARGV[4 + 3i] circuit name, ARGV[5 + 3i] verdict
-- ('f' a failure, 'a' an answer that proves it alive, 'p' a Retry-After
-- pause, '-' nothing), ARGV[6 + 3i] the pause, ms.
-- A healthy circuit costs nothing: an answer while closed with no failures
-- counted writes nothing.
-- Returns {change, {field, value, ...}, change, {...}, ...} per hash: change
-- '' or 'opened' or 'closed' (each given to exactly one report, so the alert
-- goes out once), then the hash after the call.
local threshold, base, most_wait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local error_text, reporter, lease = ARGV[4], ARGV[5], tonumber(ARGV[6])
local now = redis_now()

local function report(key, name, verdict, pause)
  local c = redis.call('HGETALL', key)
  if verdict == '-' then return '', c end
  local h = {}
  for i = 1, #c, 2 do h[c[i]] = c[i + 1] end
  local phase = h.phase or 'closed'
  local failures = tonumber(h.failures or '0')
  if verdict == 'p' then
    -- Not a failure: the endpoint asked for a pause; no call goes until then.
    local until_ms = math.max(tonumber(h.paused_until or '0'), now + pause)
    redis.call('HSET', key, 'paused_until', ms_text(until_ms), 'paused_at', ms_text(now),
      'last_error', error_text, 'last_error_at', ms_text(now))
    redis.call('SADD', KEYS[1], name)
    return '', redis.call('HGETALL', key)
  end
  local failed = verdict == 'f'
  if not failed and phase == 'closed' and failures == 0 then
    return '', c
  end
  local change = ''
  local function open_it(wait)
    redis.call('HSET', key, 'phase', 'open', 'since', ms_text(now), 'open_ms', ms_text(wait),
      'probe_at', ms_text(now + wait), 'allowed', '1', 'holder', '', 'lease_until', '0')
  end
  if failed then
    failures = failures + 1
    redis.call('HSET', key, 'failures', failures, 'last_error', error_text,
      'last_error_at', ms_text(now))
    redis.call('SADD', KEYS[1], name)
    if phase == 'closed' then
      if failures >= math.max(1, threshold) then
        redis.call('HSET', key, 'opened_at', ms_text(now))
        open_it(base)
        change = 'opened'
      end
    elseif phase == 'half_open' then
      local most = math.max(base, most_wait)
      open_it(math.min(most, math.max(base, tonumber(h.open_ms or '0') * 2)))
    end
  elseif phase == 'closed' then
    redis.call('HSET', key, 'failures', '0')
  else
    local allowed = tonumber(h.allowed or '1')
    if phase == 'open' then
      allowed = 1
      redis.call('HSET', key, 'phase', 'half_open', 'since', ms_text(now))
    end
    allowed = allowed * 2
    if allowed >= 16 then  -- kCloseAllowed
      redis.call('HSET', key, 'phase', 'closed', 'failures', '0', 'since', ms_text(now),
        'open_ms', '0', 'probe_at', '0', 'allowed', '1', 'holder', '', 'lease_until', '0')
      change = 'closed'
    else
      redis.call('HSET', key, 'allowed', allowed)
      if h.holder == reporter then
        redis.call('HSET', key, 'lease_until', ms_text(now + lease))
      end
    end
  end
  return change, redis.call('HGETALL', key)
end

local out = {}
for i = 1, #KEYS - 1 do
  local change, hash = report(KEYS[1 + i], ARGV[4 + 3 * i], ARGV[5 + 3 * i],
    tonumber(ARGV[6 + 3 * i]))
  out[#out + 1] = change
  out[#out + 1] = hash
end
return out
