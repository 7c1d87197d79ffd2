-- schedule_read: a schedule's next tick and Redis's clock, for a timer to
-- plan its step (common/store/schedule_ticks.h).
-- KEYS[1] the schedule's next tick. Returns {next tick ms or '', now ms}.
-- function flags: no-writes
return {redis.call('GET', KEYS[1]) or '', redis_now()}
