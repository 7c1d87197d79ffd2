-- permit_lease: one consumer's permits to call a topic's callback under the
-- topic's caps, shared by every consumer on every host (docs/delivery.md,
-- "Caps per topic"). The one script that changes a topic's cap state.
-- A consumer (the holder) holds ONE lease per topic: a count of permits (its
-- calls open plus those on its hand) and a deadline. Every call sets the
-- count whole (not a change), so a lost answer is mended by the next call,
-- and renews the deadline; a lease not renewed ends by itself, so a killed
-- holder never leaks permits. While the topic is far from its caps a holder
-- gets a block of permits ahead (`ahead`), used and reused without a call
-- here; near them, exactly what it asks for.
-- KEYS[1] leases of the topic: hash holder -> "count seq"
-- KEYS[2] their deadlines: zset holder -> deadline ms (Redis's clock)
-- KEYS[3] rate state of the topic (GCRA: theoretical arrival time, ms)
-- ARGV[1] holder  ARGV[2] sequence number of this call (an earlier call of
-- the holder that runs after a later one changes nothing)
-- ARGV[3] the holder's calls open (its lease counts them whatever the cap)
-- ARGV[4] permits wanted on hand now  ARGV[5] a block of permits wanted on
-- hand while the topic is far from max_in_flight (0: none)
-- ARGV[6] max_in_flight (0: none)  ARGV[7] lease ms
-- ARGV[8] max_rate per second (0: none)  ARGV[9] burst
-- ARGV[10] rate shares the holder has on hand  ARGV[11] rate shares given
-- back unused (refunded)  ARGV[12] a block of shares wanted on hand while
-- the topic is far from max_rate (0: none)
-- Far from a cap: after the block, at least another block is left (under
-- max_in_flight, or in the rate's bucket). The rate is a GCRA: each share
-- moves the arrival time on by 1000/rate ms, and is given while that time is
-- at most burst-1 intervals ahead of now.
-- Returns {permits the holder's lease now counts (0 without max_in_flight),
-- rate shares taken, ms to wait before asking again when fewer than wanted
-- were given (0: none refused), 1 when the block was given}.
local now = redis_now()
local holder, seq = ARGV[1], tonumber(ARGV[2])
local open, want, ahead = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local most_open, lease = tonumber(ARGV[6]), tonumber(ARGV[7])
local rate, burst = tonumber(ARGV[8]), tonumber(ARGV[9])
local have, refund, share_ahead = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])

-- Under max_in_flight: how many permits this holder could have on hand.
local free = math.huge
if most_open > 0 then
  local ended = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
  if #ended > 0 then
    redis.call('ZREM', KEYS[2], unpack(ended))
    redis.call('HDEL', KEYS[1], unpack(ended))
  end
  local others = 0
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local count, s = string.match(all[i + 1], '^(%d+) (%d+)$')
    if all[i] == holder then
      if tonumber(s) > seq then
        return {tonumber(count), 0, 0, 0}
      end
    else
      others = others + tonumber(count)
    end
  end
  free = math.max(0, most_open - others - open)
else
  redis.call('HDEL', KEYS[1], holder)
  redis.call('ZREM', KEYS[2], holder)
end

-- Under max_rate: how many shares the bucket gives now.
local tat, interval, allowed, refunded = now, 0, math.huge, false
if rate > 0 then
  interval = 1000 / rate
  local stored = redis.call('GET', KEYS[3])
  tat = math.max(tonumber(stored or now), now)
  if refund > 0 and stored then
    tat = math.max(now, tat - refund * interval)
    refunded = true
  end
  allowed = math.max(0, math.floor(burst - (tat - now) / interval + 1e-9))
end

-- Exactly what is wanted, or a block while it leaves as much to the others.
local far = 1
local target = want
if most_open > 0 then
  if free - ahead >= ahead then
    target = math.max(want, ahead)
  else
    far = 0
  end
end
local share_target = want
if rate > 0 then
  if most_open > 0 and far == 0 then
    share_target = math.min(want, free)  -- no shares beyond the permits on hand
  elseif have + allowed - share_ahead >= share_ahead then
    share_target = math.max(want, share_ahead)
  else
    far = 0
  end
end

local wait = 0
local held = 0
if most_open > 0 then
  local hand = math.min(target, free)
  held = open + hand
  if hand < want then
    -- Full: ask again when the earliest lease may end (the holder caps it).
    local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    wait = first[2] and math.max(1, tonumber(first[2]) - now) or 1
  end
  if held > 0 then
    redis.call('HSET', KEYS[1], holder, string.format('%d %.0f', held, seq))
    redis.call('ZADD', KEYS[2], now + lease, holder)
    -- Both keys outlive the latest lease (hosts may differ in lease ms).
    local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
    local ttl = math.ceil(math.max(tonumber(last[2]), now + lease) - now) + 1000
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
  else
    redis.call('HDEL', KEYS[1], holder)
    redis.call('ZREM', KEYS[2], holder)
  end
end

local taken = 0
if rate > 0 then
  taken = math.max(0, math.min(share_target, have + allowed) - have)
  if have + taken < math.min(want, share_target) then
    -- the next share is given once the arrival time is burst-1 intervals ahead
    wait = math.max(wait, math.ceil(tat + taken * interval - (burst - 1) * interval - now), 1)
  end
  if taken > 0 or refunded then
    tat = tat + taken * interval
    redis.call('SET', KEYS[3], string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1000)
  end
end
return {held, taken, wait, far}
