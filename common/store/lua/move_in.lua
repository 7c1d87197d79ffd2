-- move_in: writes jobs moved from a draining shard (move_mark.lua) on their
-- new shard, keeping body, due time, attempts, deferrals, created time and
-- last error; each gets an incarnation of this shard. A pending job is
-- written held for the source shard ({dq}:held:<source>): it is not
-- delivered until the mover settles it (settle.lua, once move_done.lua
-- removed the source's copy) or, after a crash of the mover,
-- timer/held_verifier hears from claim.lua on the source that the source no
-- longer holds it (a delete the source took during the move: dropped). So
-- it is never due on two shards, and keeps its due time. A dead job is
-- written dead, at its death time.
-- KEYS[1] bodies  KEYS[2] counts  KEYS[3] seq  KEYS[4] errors
-- ARGV[1] source shard name  ARGV[2] dead key prefix  ARGV[3] held set
-- prefix, then five per job: job key, record as the source held it, body
-- when not inline, last error, dead score ('' unless dead).
-- Returns two per job: verdict (0 written, 1 here already with the same
-- body: moved before, 2 this shard holds the id with another body: not
-- written) and the incarnation of the copy here ('' for 2).
local out = {}
for a = 4, #ARGV, 5 do
  local key = ARGV[a]
  local j = parse_record(ARGV[a + 1])
  if not j then return redis.error_reply('move_in: bad record of ' .. key) end
  local body = j.rest ~= '' and string.sub(j.rest, 2) or ARGV[a + 2]
  local existing = parse_record(record_get(key))
  if existing then
    if body_of(existing, key, KEYS[1]) == body then
      out[#out + 1] = 1
      out[#out + 1] = existing.inc
    else
      out[#out + 1] = 2
      out[#out + 1] = ''
    end
  else
    local topic = topic_of(key)
    j.inc = string.format('%d', redis.call('INCR', KEYS[3]))
    j.lease, j.max = '', ''
    if j.state == 'x' then
      redis.call('ZADD', tagged(ARGV[2]) .. topic, ARGV[a + 4], key)
    else
      j.state = 'h'
      redis.call('ZADD', tagged(ARGV[3]) .. ARGV[1], j.due, key)
    end
    record_set(key, record_text(j), nil)
    if j.rest == '' then redis.call('HSET', KEYS[1], key, body) end
    if ARGV[a + 3] ~= '' then redis.call('HSET', KEYS[4], key, ARGV[a + 3]) end
    count(KEYS[2], topic, j.state, 1)
    out[#out + 1] = 0
    out[#out + 1] = j.inc
  end
end
return out
