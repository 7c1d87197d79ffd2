-- cap_state: what a topic's caps allow now, read only (permit_lease.lua
-- keeps them), for a ready job's waiting reason (common/store/cap_state.h).
-- KEYS[1] leases of the topic: hash holder -> "count seq"
-- KEYS[2] their deadlines: zset holder -> deadline ms (Redis's clock)
-- KEYS[3] rate state of the topic (GCRA arrival time, ms)
-- Returns {permits the live leases count, the arrival time as text ('' when
-- none), Redis's now ms}.
-- function flags: no-writes
local now = redis_now()
local live = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ms_text(now), '+inf')
local counted = 0
if #live > 0 then
  local entries = redis.call('HMGET', KEYS[1], unpack(live))
  for _, entry in ipairs(entries) do
    local count = entry and string.match(entry, '^(%d+) ')
    if count then counted = counted + tonumber(count) end
  end
end
return {counted, redis.call('GET', KEYS[3]) or '', now}
