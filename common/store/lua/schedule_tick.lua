-- schedule_tick: a schedule's tick on its home shard (docs/schedules.md): adds
-- the tick's job and moves the schedule's next tick on, in one step, so any
-- number of timers on any number of hosts add each tick once.
-- KEYS[1..8] as add.lua's  KEYS[9] the schedule's next tick (string, epoch ms)
-- ARGV[1] the next tick the caller read ('' when it read none: a new
--         schedule), ARGV[2] the next tick to store, ARGV[3] the topic,
-- ARGV[4] ticks skipped (missed, not added: catch-up), ARGV[5] and ARGV[6]
--         add.lua's ARGV[1] and ARGV[2], then add.lua's eight per tick's job
--         (none: no job this time, only the advance).
-- A caller that read a stale next tick (another timer moved it on, or a
-- tick not yet due by Redis's clock) changes nothing.
-- Returns {verdict, detail}: {'started', next} (no tick was stored: the
-- schedule starts at ARGV[2]); {'ticked', add.lua's replies for the jobs,
-- joined by ','}; {'stale', the stored next tick or ''}; {'early', stored};
-- {'fenced', add.lua's reply}: the schedule's home is moving, nothing written.
-- function flags: none
-- A caller whose view still places the schedule here while it lives on
-- its next home now (the mover carried it there) writes nothing here: not
-- even a start, which would leave a stale next tick behind.
local now = redis_now()
if fenced_for(KEYS[8], ARGV[5], ARGV[6], now) then
  return {'fenced', 'fenced||' .. ARGV[5]}
end
local stored = redis.call('GET', KEYS[9])
if ARGV[1] == '' then
  if stored then return {'stale', stored} end
  redis.call('SET', KEYS[9], ARGV[2])
  return {'started', ARGV[2]}
end
if stored ~= ARGV[1] then return {'stale', stored or ''} end
if tonumber(stored) > now then return {'early', stored} end
local replies = {}
if #ARGV > 6 then
  replies = add_jobs(KEYS, ARGV, 5)
  local added = 0
  for _, reply in ipairs(replies) do
    if string.sub(reply, 1, 6) == 'added|' then added = added + 1 end
  end
  if added > 0 then stat(KEYS[4], ARGV[3], 'tick_added', added, now) end
end
local skipped = tonumber(ARGV[4])
if skipped > 0 then stat(KEYS[4], ARGV[3], 'tick_skipped', skipped, now) end
redis.call('SET', KEYS[9], ARGV[2])
return {'ticked', table.concat(replies, ',')}
