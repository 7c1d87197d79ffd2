-- dead_purge: delete a batch of a topic's dead jobs for good.
-- KEYS[1] records prefix  KEYS[2] dead zset of topic  KEYS[3] errors  KEYS[4] bodies
-- KEYS[5] counts
-- ARGV[1] batch limit  ARGV[2] topic
-- Returns the number of jobs deleted (call again until it returns 0).
local keys = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)
for _, key in ipairs(keys) do
  redis.call('ZREM', KEYS[2], key)
  record_del(key, 'flat')  -- a dead job's record is in the flat hash
  redis.call('HDEL', KEYS[3], key)
  redis.call('HDEL', KEYS[4], key)
end
if #keys > 0 then count(KEYS[5], ARGV[2], 'x', -#keys) end
return #keys
