-- 018: the time zone a topic's wall times are read in: an add's `at`
-- without an offset and without its own `tz`, and the legacy port's
-- fix_time (README, "tz"). "": the server's local zone, as before.
ALTER TABLE topics ADD COLUMN tz TEXT NOT NULL DEFAULT '';
