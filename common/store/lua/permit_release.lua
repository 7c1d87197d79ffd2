-- permit_release: give back permits of a topic (docs/delivery.md, "Caps per
-- topic"): those whose calls ended, and those taken but never used (whose
-- rate share is refunded too, so an unused permit costs the receiver nothing).
-- KEYS[1] permits zset of the topic  KEYS[2] rate state of the topic
-- ARGV[1] max_rate per second (0: none)  ARGV[2] unused permits to refund
-- ARGV[3..] permit ids (absent ones, e.g. expired, are skipped)
-- Returns the number of permits removed.
local removed = 0
if #ARGV >= 3 then
  removed = redis.call('ZREM', KEYS[1], unpack(ARGV, 3))
end
local rate, refund = tonumber(ARGV[1]), tonumber(ARGV[2])
if rate > 0 and refund > 0 then
  local tat = redis.call('GET', KEYS[2])
  if tat then
    local now = redis_now()
    local back = math.max(now, tonumber(tat) - refund * 1000 / rate)
    redis.call('SET', KEYS[2], string.format('%.3f', back), 'PX', math.ceil(back - now) + 1000)
  end
end
return removed
