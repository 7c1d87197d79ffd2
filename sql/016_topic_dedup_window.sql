-- 016: how long a job that ran (delivered, or dead) is remembered, so
-- that a producer's retry of its add (same id and body) answers 200
-- "existing" with how it ended instead of running it again (docs/RELIABILITY.md,
-- "A retried add"). 0: nothing is remembered.
ALTER TABLE topics ADD COLUMN dedup_window_s INTEGER NOT NULL DEFAULT 600;
