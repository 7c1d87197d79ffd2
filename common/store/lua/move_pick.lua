-- move_pick: the next delayed or retrying jobs of a draining shard to move
-- (checker/shard_mover.h), earliest due first, read in one call. Changes
-- nothing: move_mark.lua takes them.
-- KEYS[1] due index  ARGV[1] most jobs
-- Returns their job keys.
local limit = tonumber(ARGV[1])
local out = {}
for _, bucket in ipairs(redis.call('ZRANGE', KEYS[1], 0, limit - 1)) do
  for _, key in ipairs(redis.call('ZRANGE', due_key(bucket), 0, limit - #out - 1)) do
    out[#out + 1] = key
  end
  if #out >= limit then break end
end
return out
