-- 013: the dead-letter callback of a topic: a URL dq-redis-checker POSTs a
-- signed JSON document to when one of the topic's jobs dies (docs/callbacks.md,
-- "Dead-letter callback"). '' is none.
ALTER TABLE topics ADD COLUMN dead_callback TEXT NOT NULL DEFAULT '';
