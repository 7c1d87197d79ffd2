-- 007: caps on calls to a topic's callback, shared by every consumer on every
-- host (docs/delivery.md, "Caps per topic"). 0 is no cap.
-- max_in_flight: calls open at once; max_rate: calls per second;
-- max_burst: calls at once above max_rate (0: a tenth of max_rate, at least 1).
ALTER TABLE topics ADD COLUMN max_in_flight INTEGER NOT NULL DEFAULT 0 CHECK (max_in_flight >= 0);
ALTER TABLE topics ADD COLUMN max_rate INTEGER NOT NULL DEFAULT 0 CHECK (max_rate >= 0);
ALTER TABLE topics ADD COLUMN max_burst INTEGER NOT NULL DEFAULT 0 CHECK (max_burst >= 0);
