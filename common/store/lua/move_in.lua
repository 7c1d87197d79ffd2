-- move_in: writes a job moved from a draining shard (move_mark.lua) on its
-- new shard, keeping its body, due time, attempts, deferrals, created time
-- and last error; it gets an incarnation of this shard. A pending job is
-- written held for the source shard ({dq}:held:<source>): timer/held_verifier
-- releases it (due as before) once claim.lua on the source says the source
-- no longer holds it, so it is never delivered while the source may still
-- count it, and a delete the source took during the move drops it. A dead
-- job is written dead, at its death time.
-- KEYS[1] bodies  KEYS[2] counts  KEYS[3] seq  KEYS[4] errors
-- ARGV[1] job key  ARGV[2] source shard name  ARGV[3] record as the source
-- held it  ARGV[4] body when not inline  ARGV[5] last error  ARGV[6] dead
-- score  ARGV[7] dead key prefix  ARGV[8] held set prefix
-- Returns 0 written, 1 here already with the same body (moved before),
-- 2 this shard holds the id with another body (not written).
local key = ARGV[1]
local j = parse_record(ARGV[3])
if not j then return redis.error_reply('move_in: bad record') end
local body = j.rest ~= '' and string.sub(j.rest, 2) or ARGV[4]
local existing = parse_record(record_get(key))
if existing then
  if body_of(existing, key, KEYS[1]) == body then return 1 end
  return 2
end
local topic = topic_of(key)
j.inc = string.format('%d', redis.call('INCR', KEYS[3]))
j.lease, j.max = '', ''
if j.state == 'x' then
  redis.call('ZADD', ARGV[7] .. topic, ARGV[6], key)
else
  j.state = 'h'
  redis.call('ZADD', ARGV[8] .. ARGV[2], j.due, key)
end
record_set(key, record_text(j), nil)
if j.rest == '' then redis.call('HSET', KEYS[1], key, body) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[4], key, ARGV[5]) end
count(KEYS[2], topic, j.state, 1)
return 0
