-- 012: registry shards take jobs (docs/operations.md, *Adding, draining and
-- removing shards*). state: active (placed on), draining (its jobs move to
-- the others; no new job goes to it). A removed shard is a deleted row (a
-- tombstone in the shared registry). Shared as kind 'shard'.
ALTER TABLE shards ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
