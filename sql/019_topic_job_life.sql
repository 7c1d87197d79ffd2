-- 019: how long a topic's jobs live and what is kept after them.
--   ttl            seconds a job may still be delivered after it is due
--                  (a job's own ttl or expire_at overrides it); 0: no limit
--   keep_done_days days a delivered, deleted or expired job is kept in
--                  compact form, so GET answers its final state; 0: none
--   late_policy    "deliver", "dead_after:S" or "drop_after:S"
ALTER TABLE topics ADD COLUMN ttl INTEGER NOT NULL DEFAULT 0;
ALTER TABLE topics ADD COLUMN keep_done_days INTEGER NOT NULL DEFAULT 0;
ALTER TABLE topics ADD COLUMN late_policy TEXT NOT NULL DEFAULT 'deliver';
