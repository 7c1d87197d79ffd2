-- ended_carry_out: the ended records (kEndedPrefix .. job key: a delivered,
-- dead or expired job's dedup window and history) of jobs whose home is
-- now another shard, read for the mover to carry them there
-- (checker/shard_mover.h; ended_carry_in.lua there, then
-- ended_carry_done.lua here). Changes nothing.
-- KEYS[1] any key of the shard's tag (the awaited set), for the call's slot
-- ARGV the job keys
-- Returns triples: job key, its ended record, its time to live in ms ('' for
-- none), for each that has one here. A script sees keys expire on its start's
-- clock, but PTTL counts from now: a record expiring while the call runs
-- answers GET and a PTTL of 0. It is left to expire (carried with no TTL, it
-- would live for ever on its home).
-- function flags: no-writes
local out = {}
for _, key in ipairs(ARGV) do
  local ended = redis.call('GET', kEndedPrefix .. key)
  if ended then
    local ttl = redis.call('PTTL', kEndedPrefix .. key)
    if ttl > 0 or ttl == -1 then
      out[#out + 1] = key
      out[#out + 1] = ended
      out[#out + 1] = ttl > 0 and int_text(ttl) or ''
    end
  end
end
return out
