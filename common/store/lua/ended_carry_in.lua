-- ended_carry_in: ended records another shard holds (ended_carry_out.lua
-- read them) written on the jobs' home, where a get or a retried add looks
-- for them. One already here that ended later stays: it is the id's latest
-- job (a job of the id added and ended again since).
-- KEYS[1] any key of the shard's tag (the awaited set), for the call's slot
-- ARGV triples: job key, ended record, time to live in ms ('' for none)
-- Returns how many were written.
-- function flags: none
local function ended_at(record)
  return tonumber(string.match(record or '', '^%a|(%d+)|') or '-1')
end
local written = 0
for a = 1, #ARGV, 3 do
  local key, record, ttl = kEndedPrefix .. ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local here = redis.call('GET', key)
  if not here or ended_at(here) < ended_at(record) then
    if ttl ~= '' then
      redis.call('SET', key, record, 'PX', ttl)
    else
      redis.call('SET', key, record)
    end
    written = written + 1
  end
end
return written
