-- 017: how long a job may go on being retried, from its first attempt, before
-- it is dead-lettered whatever held it back (ordinary retries, Retry-After
-- pauses, an open circuit): nothing waits forever (docs/delivery.md,
-- "Nothing waits forever"). Cloud Tasks' name; 7 days; 0: no limit.
ALTER TABLE topics ADD COLUMN max_retry_duration_s INTEGER NOT NULL DEFAULT 604800;
