-- circuit_probe: asks for the probe lease of a receiver's circuit (rules of
-- common/store/circuit_state.h, circuit_take_probe). Granted when the circuit
-- is open and its wait is over, or half-open with the lease free, expired (a
-- prober that was killed does not wedge it) or held by the caller already
-- (renewed). The holder alone calls the receiver, `allowed` calls at once.
-- KEYS[1] the receiver's circuit hash
-- ARGV[1] asking process  ARGV[2] lease ms
-- Returns {granted 0|1, field, value, ...} (the hash after the call).
local c = redis.call('HGETALL', KEYS[1])
local h = {}
for i = 1, #c, 2 do h[c[i]] = c[i + 1] end
local phase = h.phase or 'closed'
local granted = 0
if phase ~= 'closed' then
  local now = redis_now()
  if phase == 'open' then
    if now >= tonumber(h.probe_at or '0') then
      redis.call('HSET', KEYS[1], 'phase', 'half_open', 'since', ms_text(now))
      granted = 1
    end
  elseif (h.holder or '') == '' or h.holder == ARGV[1] or
      tonumber(h.lease_until or '0') <= now then
    granted = 1
  end
  if granted == 1 then
    redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'lease_until', ms_text(now + tonumber(ARGV[2])))
    c = redis.call('HGETALL', KEYS[1])
  end
end
table.insert(c, 1, granted)
return c
