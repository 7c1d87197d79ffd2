-- registry_put: compare-and-set of one object of the shared registry
-- (common/registry/shared_registry.h): the one way the shared copy changes.
-- KEYS[1] versions hash of the kind (name -> version)  KEYS[2] rows hash of
-- the kind (name -> row JSON; absent: deleted or never made)  KEYS[3] change
-- counter  KEYS[4] change log zset (kind \n name -> change number)
-- ARGV[1] name  ARGV[2] mode  ARGV[3] expected version  ARGV[4] row JSON
-- ARGV[5] log member
-- Modes: create (refused when it exists), publish (refused when it exists or
-- was ever deleted: a host's copy from before it shared), update and delete
-- (refused unless it exists at the expected version; delete with expected ''
-- takes any version).
-- Returns {'ok', new version, ''} or {refusal, version, row or ''} where
-- refusal is exists, deleted, missing or conflict: what the copy holds now.
-- function flags: none
local name, mode, expected = ARGV[1], ARGV[2], ARGV[3]
local version = tonumber(redis.call('HGET', KEYS[1], name) or '0')
local row = redis.call('HGET', KEYS[2], name)
local function refuse(why)
  return {why, tostring(version), row or ''}
end
if mode == 'create' then
  if row then return refuse('exists') end
elseif mode == 'publish' then
  if row then return refuse('exists') end
  if version > 0 then return refuse('deleted') end
elseif mode == 'update' or mode == 'delete' then
  if not row then return refuse('missing') end
  if (mode == 'update' or expected ~= '') and tostring(version) ~= expected then
    return refuse('conflict')
  end
else
  return redis.error_reply('registry_put: unknown mode ' .. mode)
end
version = version + 1
redis.call('HSET', KEYS[1], name, tostring(version))
if mode == 'delete' then
  redis.call('HDEL', KEYS[2], name)
else
  redis.call('HSET', KEYS[2], name, ARGV[4])
end
local change = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[4], change, ARGV[5])
return {'ok', tostring(version), ''}
