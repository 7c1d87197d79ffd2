-- registry_changes: the objects of the shared registry changed after a
-- change number, each once, in the state it has now (a host pulls these
-- into its SQLite copy: common/registry/registry_sync.h).
-- KEYS[1] change counter  KEYS[2] change log zset (kind \n name -> change)
-- ARGV[1] after this change number  ARGV[2] at most this many objects
-- ARGV[3] versions hash prefix  ARGV[4] rows hash prefix (+ kind)
-- Returns {counter, member, change, version, row or '' (deleted), ...}.
-- function flags: no-writes
local out = {redis.call('GET', KEYS[1]) or '0'}
local changed = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf', 'WITHSCORES',
                           'LIMIT', 0, tonumber(ARGV[2]))
for i = 1, #changed, 2 do
  local member = changed[i]
  local cut = string.find(member, '\n', 1, true)
  local kind, name = string.sub(member, 1, cut - 1), string.sub(member, cut + 1)
  out[#out + 1] = member
  out[#out + 1] = changed[i + 1]
  out[#out + 1] = redis.call('HGET', tagged(ARGV[3]) .. kind, name) or '0'
  out[#out + 1] = redis.call('HGET', tagged(ARGV[4]) .. kind, name) or ''
end
return out
