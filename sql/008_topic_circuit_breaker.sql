-- 007: circuit breaking per receiver (docs/delivery.md, "Circuit breaking").
-- circuit_breaker   1: calls to the topic's receiver (callback host:port) stop
--                   while it keeps failing, and its jobs wait without using
--                   attempts; 0: every due job is called as before.
-- circuit_failures  receiver failures in a row (no answer, 5xx, 429) that stop
--                   this topic's calls.
-- circuit_open_ms   wait before the first probe; doubles while probes fail.
ALTER TABLE topics ADD COLUMN circuit_breaker INTEGER NOT NULL DEFAULT 1;
ALTER TABLE topics ADD COLUMN circuit_failures INTEGER NOT NULL DEFAULT 5;
ALTER TABLE topics ADD COLUMN circuit_open_ms INTEGER NOT NULL DEFAULT 10000;
