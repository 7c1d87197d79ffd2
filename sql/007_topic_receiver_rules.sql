-- 007: answers that protect the receiver (common/registry/delivery_rules.h).
-- max_deferrals  how many 429/503 answers with Retry-After a job may honour
--                without using an attempt (0: Retry-After is never honoured).
-- dead_on        '' or HTTP statuses ('400,410,422') that dead-letter a job at once.
-- retry_jitter   percent (0-100) by which each retry wait is lengthened at random.
ALTER TABLE topics ADD COLUMN max_deferrals INTEGER NOT NULL DEFAULT 10;
ALTER TABLE topics ADD COLUMN dead_on TEXT NOT NULL DEFAULT '';
ALTER TABLE topics ADD COLUMN retry_jitter INTEGER NOT NULL DEFAULT 0;
