-- move_drop: on a shard jobs were moved to, removes the moved copy of a job
-- deleted on its source during the move (move_done.lua answered 3):
-- pending, waiting or dead, with the created time the source's copy had, so a newer
-- add of the same id is never touched. (move_mark.lua marks only jobs due
-- well after the move, so the copy was not delivered meanwhile.)
-- KEYS[1] bodies  KEYS[2] errors  KEYS[3] counts  KEYS[4] working
-- ARGV[1] dead key prefix, then pairs: job key, created
-- Returns the number of copies removed.
local dropped = 0
for a = 2, #ARGV, 2 do
  local key = ARGV[a]
  local record, from = record_get(key)
  local j = parse_record(record)
  if j and j.created == ARGV[a + 1] and (j.state == 'd' or j.state == 'y' or j.state == 'x' or j.state == 'b') then
    local topic = topic_of(key)
    unlink_job(key, j, nil, KEYS[4], tagged(ARGV[1]) .. topic, from)
    record_del(key, from)
    if j.rest == '' then redis.call('HDEL', KEYS[1], key) end
    redis.call('HDEL', KEYS[2], key)
    count(KEYS[3], topic, j.state, -1)
    dropped = dropped + 1
  end
end
return dropped
