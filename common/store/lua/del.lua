-- del: remove a job wherever it is (delayed, retrying, ready, working, dead, held).
-- KEYS[1] records prefix  KEYS[2] bodies  KEYS[3] due index  KEYS[4] working
-- KEYS[5] ready list of topic  KEYS[6] dead zset of topic  KEYS[7] errors
-- KEYS[8] stats of the day  KEYS[9] counts  KEYS[10] tombstones  KEYS[11] moving
-- ARGV[1] job key  ARGV[2] topic  ARGV[3] '1' to leave a tombstone (some
-- shard was unreachable: a held copy there must learn this id was deleted)
-- ARGV[4] held set prefix  ARGV[5] every shard name, comma separated
-- Returns {1, state} when deleted, {0, ''} when there was no such job.
local key, topic = ARGV[1], ARGV[2]
local bucket = bucket_of(key)
local record, from = record_get(key, bucket)
local j = parse_record(record)
if not j then
  return {0, ''}
end
local held = {}
if j.state == 'h' then
  for name in string.gmatch(ARGV[5], '[^,]+') do held[#held + 1] = tagged(ARGV[4]) .. name end
end
unlink_job(key, j, KEYS[5], KEYS[4], KEYS[6], held, from, bucket)
record_del(key, from, bucket)
if j.rest == '' then redis.call('HDEL', KEYS[2], key) end  -- the body is apart
redis.call('HDEL', KEYS[7], key)
count(KEYS[9], topic, j.state, -1)
stat(KEYS[8], topic, 'deleted', 1)
-- A job being moved off a draining shard (move_mark.lua): its mark is
-- flagged, so the mover drops the copy it wrote on the target (or is about
-- to), and a held copy there learns of this delete from the tombstone.
local marked = redis.call('HGET', KEYS[11], key)
local moving = marked ~= false
if moving then
  redis.call('HSET', KEYS[11], key, string.match(marked, '^([^|]*|[^|]*|[^|]*|)') .. 'deleted')
end
if (ARGV[3] == '1' or moving) and j.state ~= 'h' then
  redis.call('ZADD', KEYS[10], redis_now(), key)
end
return {1, j.state}
