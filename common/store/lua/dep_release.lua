-- dep_release: a job that waiter B waits for ended; run on B's shard by the
-- releaser (checker/dependency_loop.h) for each event of the job's outbox.
-- KEYS[1] due index  KEYS[2] timer wake list  KEYS[3] counts  KEYS[4] stats of the day
-- KEYS[5] errors  KEYS[6] dead zset of B's topic
-- ARGV[1] B's key  ARGV[2] the ended job's key  ARGV[3] how it ended: a
-- delivered, x dead, e expired, d deleted  ARGV[4] why (its reason)
-- ARGV[5] B's topic's on_dependency_dead: 'dead' or 'release'
-- ARGV[6] '1': B's topic has a dead-letter callback  ARGV[7] B's topic's end memory
-- Delivered (or ended otherwise under 'release'): the job leaves B's
-- remaining dependencies; once none remain B becomes delayed, due at the
-- later of its own due time and now, and the timer is woken. Ended
-- otherwise under 'dead': B is dead-lettered, its reason naming the job.
-- Idempotent: a B that no longer waits for the job changes nothing.
-- Returns 'missing' (no B here), 'done' (B does not wait for it: nothing
-- changed), 'waits' (it waits for others still), 'released', 'dead', or
-- 'moving': B is being moved to its home shard (move_mark.lua), nothing
-- changed; the releaser asks again, and finds it moved (or back here).
local key, dep, how = ARGV[1], ARGV[2], ARGV[3]
local bucket = bucket_of(key)
local record, from = record_get(key, bucket)
local j = parse_record(record)
if not j then return 'missing' end
if j.state ~= 'b' then return 'done' end
if redis.call('HEXISTS', kTag .. ':moving', key) == 1 then return 'moving' end
local left, found = {}, false
for k in string.gmatch(redis.call('HGET', kAfter, key) or '', '[^\n]+') do
  if k == dep and not found then
    found = true
  else
    left[#left + 1] = k
  end
end
if not found then return 'done' end
local now = redis_now()
local topic = topic_of(key)
if how ~= 'a' and ARGV[5] ~= 'release' then
  local verbs = {x = 'died', e = 'expired', d = 'was deleted'}
  local dep_topic, dep_id = string.match(dep, '^([^:]+):(.*)$')
  local text = 'dependency ' .. dep_topic .. '/' .. dep_id .. ' ' .. (verbs[how] or 'ended')
  if ARGV[4] ~= '' then text = text .. ': ' .. ARGV[4] end
  waiting_remove(key)
  dead_letter(key, j, from, topic, KEYS[6], KEYS[5], KEYS[4], KEYS[3], text, ARGV[6] == '1',
              ARGV[7], now)
  return 'dead'
end
if #left > 0 then
  redis.call('HSET', kAfter, key, table.concat(left, '\n'))
  return 'waits'
end
waiting_remove(key)
j.state = 'd'
j.due = ms_text(math.max(tonumber(j.due), now))
wake_timer_if_first(KEYS[1], KEYS[2], j.due)  -- before lowering: compares with the old first
record_set(key, record_text(j), from, bucket)
due_add(bucket, key, j.due)
count(KEYS[3], topic, 'b', -1)
count(KEYS[3], topic, 'd', 1)
return 'released'
