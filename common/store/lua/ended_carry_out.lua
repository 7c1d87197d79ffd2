-- ended_carry_out: the ended records (kEndedPrefix .. job key: a delivered,
-- dead or expired job's dedup window and history) of jobs whose home is
-- now another shard, read for the mover to carry them there
-- (checker/shard_mover.h; ended_carry_in.lua there, then
-- ended_carry_done.lua here). Changes nothing.
-- KEYS[1] any key of the shard's tag (the awaited set), for the call's slot
-- ARGV the job keys
-- Returns triples: job key, its ended record, its time to live in ms ('' for
-- none), for each that has one here.
-- function flags: no-writes
local out = {}
for _, key in ipairs(ARGV) do
  local ended = redis.call('GET', kEndedPrefix .. key)
  if ended then
    local ttl = redis.call('PTTL', kEndedPrefix .. key)
    if ttl ~= -2 then
      out[#out + 1] = key
      out[#out + 1] = ended
      out[#out + 1] = ttl > 0 and int_text(ttl) or ''
    end
  end
end
return out
