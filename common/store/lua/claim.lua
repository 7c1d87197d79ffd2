-- claim: asked of shard S about a copy of a job held on another shard F
-- (added while S was unreachable). If S holds the id, or deleted it while a
-- shard was unreachable (tombstone) after F's copy was made, F's copy is a
-- duplicate: a copy made after that delete is a new job. The two times come
-- from two Redis clocks: within ARGV[4] ms of each other counts as "after",
-- so a skew between shards can only drop such a copy, never deliver one a
-- 204 DELETE answered for. Otherwise S
-- records that the id now lives on F (a marker the add script reads), so a
-- later add here while F is unreachable is held until F is asked.
-- A job S is moving to F (move_mark.lua, S draining) is not settled yet.
-- KEYS[1] records prefix  KEYS[2] tombstones  KEYS[3] moved markers  KEYS[4] moving
-- ARGV[1] job key  ARGV[2] name of the shard holding the copy (F)
-- ARGV[3] when F's copy was created (F's clock)  ARGV[4] clock slack ms
-- Returns 1 duplicate, 0 F's copy may be delivered, 2 ask again later.
if redis.call('HEXISTS', KEYS[4], ARGV[1]) == 1 then
  return 2
end
if record_get(ARGV[1]) then
  return 1
end
local deleted_at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if deleted_at and tonumber(deleted_at) + tonumber(ARGV[4]) >= tonumber(ARGV[3]) then
  return 1
end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
return 0
