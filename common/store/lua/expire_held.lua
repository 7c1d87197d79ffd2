-- expire_held: dead-letters the ready jobs of a topic whose calls a circuit
-- holds (open, or paused by a Retry-After) once they have waited longer than
-- the topic's max_retry_duration_s: nothing waits forever. A held job is not
-- reserved, so fail.lua never sees it; this is its clock.
-- KEYS[1] records prefix  KEYS[2] ready list of the topic  KEYS[3] dead zset of the topic
-- KEYS[4] errors  KEYS[5] stats of the day  KEYS[6] counts
-- ARGV[1] topic  ARGV[2] max_retry_duration_s, ms (> 0)  ARGV[3] the reason
-- ARGV[4] '1': the topic has a dead-letter callback  ARGV[5] its end memory
-- (remember_end)
-- ARGV[6] most jobs looked at (from the front of the list: the longest ready)
-- A job's wait counts from its first attempt (the record's ninth field) or,
-- never attempted, from when it was due.
-- A held job whose ttl or expire_at passed is ended as expired (end_unsent).
-- Returns the number dead-lettered.
local topic, max_retry, reason = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = redis_now()
local dead = 0
for _, key in ipairs(redis.call('LRANGE', KEYS[2], 0, tonumber(ARGV[6]) - 1)) do
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.state == 'r' and has_expired(j, now) then
    -- Its ttl or expire_at passed while it was held: never delivered now.
    redis.call('LREM', KEYS[2], 1, key)
    end_unsent(key, j, from, topic, KEYS[5], KEYS[6], KEYS[4], ARGV[5],
               'expired at ' .. j.expires .. ' while held: ' .. reason, 'ttl_expired', now)
  elseif j and j.state == 'r' then
    local start = tonumber(j.first ~= '' and j.first or j.due)
    if now - start >= max_retry then
      redis.call('LREM', KEYS[2], 1, key)
      local text = reason .. ' (waited ' .. ms_text(math.ceil((now - start) / 1000)) ..
                   ' s, longer than max_retry_duration_s ' .. ms_text(max_retry / 1000) .. ')'
      dead_letter(key, j, from, topic, KEYS[3], KEYS[4], KEYS[5], KEYS[6], text, ARGV[4] == '1',
                  ARGV[5], now)
      dead = dead + 1
    end
  end
end
return dead
