-- 022: a topic's mode: 'push' (dq calls its callback_url, as before) or
-- 'pull' (no callback: workers reserve its jobs over the API, ack, nack
-- and touch them; docs/delivery.md, "Pull workers"). A pull topic needs no
-- callback_url, and consumers never reserve its jobs.
ALTER TABLE topics ADD COLUMN mode TEXT NOT NULL DEFAULT 'push';
