-- 021: a topic's schedules (docs/schedules.md): each adds a job at every
-- tick of a cron spec read in a time zone, or of "@every N". id names the
-- schedule's ticks' jobs ("schedule:<id>:<tick instant>") and its next tick
-- in Redis; it is made when the schedule is added, so a schedule deleted
-- and added again starts afresh. tz "": the topic's zone, else UTC.
-- body: the job body, with {{tick}} (the tick instant, UTC) and {{tick_ms}}
-- filled in. catch_up: 'one' (a tick missed while dq was down runs once, at
-- start) or 'none'. paused 1: no tick is added until resumed.
CREATE TABLE topic_schedules (
  topic         TEXT NOT NULL,
  spec          TEXT NOT NULL,
  id            TEXT NOT NULL UNIQUE,
  tz            TEXT NOT NULL DEFAULT '',
  body          TEXT NOT NULL DEFAULT '{}',
  catch_up      TEXT NOT NULL DEFAULT 'one',
  paused        INTEGER NOT NULL DEFAULT 0,
  created_at_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (topic, spec)
);
