-- pull_cap: a pull topic's caps, max_in_flight and max_rate, held over every
-- API server of every host (docs/delivery.md, "Pull workers"), on the
-- topic's coordination shard (common/store/coordination_shard.h). The jobs
-- of the topic leased to workers are a zset: member a lease, "<shard
-- name>|<job key>|<reserve id>", score its deadline (ms, Redis's clock).
-- A reserve first takes room ('take': hold members "hold|<reserve id>|<n>"
-- that count like leases for hold ms), runs reserve.lua on the job shards,
-- then 'settle's: its holds go, the leases it got come in, rate shares it
-- did not use are given back. An ack or nack 'drop's its lease (and says so
-- on the ready channel: a waiting reserve may take the room); a touch moves
-- its deadline; a lease that ends is dropped by the next 'take'.
-- KEYS[1] the topic's leases (zset)  KEYS[2] its rate state (GCRA's
-- arrival time, ms)
-- ARGV[1] 'take': ARGV[2] reserve id  ARGV[3] jobs wanted  ARGV[4]
--   max_in_flight (0: none)  ARGV[5] max_rate per second (0: none)
--   ARGV[6] burst  ARGV[7] hold ms
--   Returns {jobs allowed, ms to wait before asking again (0: none refused)}.
-- ARGV[1] 'settle': ARGV[2] reserve id  ARGV[3] jobs allowed by its take
--   ARGV[4] max_rate  ARGV[5] lease ms, then the leases it got.  Returns 0.
-- ARGV[1] 'drop': ARGV[2] topic, then leases.  Returns the number dropped.
-- ARGV[1] 'touch': ARGV[2] lease ms  ARGV[3] lease.  Returns 1 if it was there.
local now = redis_now()
local op = ARGV[1]
local function keep_alive()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(last[2]) - now) + 1000)
  end
end

if op == 'take' then
  local id, want = ARGV[2], tonumber(ARGV[3])
  local most, rate, burst, hold = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]),
                                  tonumber(ARGV[7])
  local allowed, wait = want, 0
  if most > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    local free = math.max(0, most - redis.call('ZCARD', KEYS[1]))
    if free < allowed then
      allowed = free
      local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
      wait = first[2] and math.max(1, tonumber(first[2]) - now) or 1
    end
  end
  if rate > 0 and allowed > 0 then
    local interval = 1000 / rate
    local tat = math.max(tonumber(redis.call('GET', KEYS[2]) or now), now)
    local shares = math.max(0, math.floor(burst - (tat - now) / interval + 1e-9))
    if shares < allowed then
      allowed = shares
      wait = math.max(wait, math.ceil(tat - (burst - 1) * interval - now), 1)
    end
    if allowed > 0 then
      tat = tat + allowed * interval
      redis.call('SET', KEYS[2], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
    end
  end
  if most > 0 and allowed > 0 then
    local holds = {}
    for n = 1, allowed do
      holds[#holds + 1] = now + hold
      holds[#holds + 1] = 'hold|' .. id .. '|' .. n
    end
    redis.call('ZADD', KEYS[1], unpack(holds))
    keep_alive()
  end
  return {allowed, wait}
end

if op == 'settle' then
  local id, allowed, rate, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  local got = #ARGV - 5
  local holds = {}
  for n = 1, allowed do holds[#holds + 1] = 'hold|' .. id .. '|' .. n end
  if #holds > 0 then redis.call('ZREM', KEYS[1], unpack(holds)) end
  if got > 0 then
    local leases = {}
    for i = 6, #ARGV do
      leases[#leases + 1] = now + lease
      leases[#leases + 1] = ARGV[i]
    end
    redis.call('ZADD', KEYS[1], unpack(leases))
    keep_alive()
  end
  if rate > 0 and allowed > got then  -- shares taken but not used
    local stored = redis.call('GET', KEYS[2])
    if stored then
      local tat = math.max(now, tonumber(stored) - (allowed - got) * 1000 / rate)
      redis.call('SET', KEYS[2], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
    end
  end
  return 0
end

if op == 'drop' then
  local dropped = 0
  if #ARGV > 2 then
    dropped = redis.call('ZREM', KEYS[1], unpack(ARGV, 3))
  end
  if dropped > 0 then redis.call('PUBLISH', kTag .. ':ready', ARGV[2]) end
  return dropped
end

if op == 'touch' then
  local moved = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[3])
  keep_alive()
  return moved
end
return redis.error_reply('pull_cap: unknown op ' .. tostring(op))
