-- permit_take: take up to n permits to call a topic's callback, under its
-- caps, for every consumer on every host (docs/delivery.md, "Caps per topic").
-- KEYS[1] permits zset of the topic (permit id -> lease deadline ms)
-- KEYS[2] rate state of the topic (GCRA: theoretical arrival time, ms)
-- ARGV[1] permit id prefix (unique per consumer)  ARGV[2] first sequence number
-- ARGV[3] n wanted  ARGV[4] max_in_flight (0: none)  ARGV[5] lease ms
-- ARGV[6] max_rate per second (0: none)  ARGV[7] burst
-- A permit's lease ends by itself, so a killed holder never leaks one. The
-- rate is a GCRA: each call moves the arrival time on by 1000/rate ms, and a
-- call is allowed while that time is at most burst-1 intervals ahead of now.
-- Returns {k permits taken (ids prefix..seq, seq+1, ...; none are stored
-- without max_in_flight), ms to wait before more can be taken (0: maybe now;
-- with a full max_in_flight: until the earliest lease ends)}.
local now = redis_now()
local k = tonumber(ARGV[3])
local most_open = tonumber(ARGV[4])
local rate = tonumber(ARGV[6])
local wait = 0
if most_open > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local room = most_open - redis.call('ZCARD', KEYS[1])
  if room < k then
    k = math.max(0, room)
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    if first[2] then
      wait = math.max(1, tonumber(first[2]) - now)
    end
  end
end
local tat, interval = now, 0
if rate > 0 and k > 0 then
  interval = 1000 / rate
  local burst = tonumber(ARGV[7])
  tat = math.max(tonumber(redis.call('GET', KEYS[2]) or now), now)
  local allowed = math.floor(burst - (tat - now) / interval + 1e-9)
  if allowed < k then
    k = math.max(0, allowed)
    -- the next call is allowed once the arrival time is burst-1 intervals ahead
    wait = math.max(wait, math.ceil(tat + k * interval - (burst - 1) * interval - now), 1)
  end
  if k > 0 then
    tat = tat + k * interval
    redis.call('SET', KEYS[2], string.format('%.3f', tat), 'PX',
      math.ceil(tat - now) + 1000)
  end
end
if most_open > 0 and k > 0 then
  local deadline = now + tonumber(ARGV[5])
  local seq = tonumber(ARGV[2])
  for i = 0, k - 1 do
    redis.call('ZADD', KEYS[1], deadline, ARGV[1] .. string.format('%.0f', seq + i))
  end
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[5]) + 1000)
end
return {k, wait}
