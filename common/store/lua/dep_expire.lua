-- dep_expire: waiting jobs (state b) whose own ttl or expire_at passed end
-- as expired (end_unsent): nothing else looks at them, as they are in no
-- due zset. Run by the releaser (checker/dependency_loop.h) on each shard.
-- One being moved to its home shard is left: it ends there (or here, if
-- the move is undone), once.
-- KEYS[1] the waiting expiries ({dq}:waiting_expiry)  KEYS[2] counts
-- KEYS[3] stats of the day  KEYS[4] errors
-- ARGV[1] batch limit  ARGV[2] the end memory of the topics not listed
-- after it  ARGV[3..] pairs: topic, its end memory (remember_end)
-- Returns how many ended.
local now = redis_now()
local memory = {}
for i = 3, #ARGV - 1, 2 do memory[ARGV[i]] = ARGV[i + 1] end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local ended = 0
for _, key in ipairs(due) do
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.state == 'b' and redis.call('HEXISTS', kTag .. ':moving', key) == 1 then
    -- Being moved (move_mark.lua): it expires where its move leaves it.
  elseif j and j.state == 'b' then
    local topic = topic_of(key)
    waiting_remove(key)
    end_unsent(key, j, from, topic, KEYS[3], KEYS[2], KEYS[4], memory[topic] or ARGV[2],
               'expired at ' .. j.expires .. ' (ms) while waiting for its dependencies',
               'ttl_expired', now)
    ended = ended + 1
  else
    redis.call('ZREM', KEYS[1], key)
  end
end
return ended
