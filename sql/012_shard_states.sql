-- 012: registry shards take jobs (docs/operations.md, *Adding, draining and
-- removing shards*). state: active (placed on), draining (its jobs stay,
-- no new job goes to it). A removed shard is a deleted row (a tombstone in
-- the shared registry). Shared as kind 'shard'. Rows from before this
-- migration were only listed (the admin page's old form; no job went to
-- them): they stay 'listed' and unused until removed and added again.
ALTER TABLE shards ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
UPDATE shards SET state = 'listed';
