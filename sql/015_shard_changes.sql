-- 015: one home per id (docs/decisions.md, "One home per id"). A shard's
-- changes are staged: an added shard is 'moving' (joining for its first
-- seconds, then taking new jobs while the checker moves the jobs whose home
-- it became) until the checker makes it 'active'; a drained one is
-- 'draining' (still taking new jobs for its first seconds) until the checker
-- has moved every job off it and makes it 'drained'. changed_at_ms: when the
-- state was last set (the writing host's clock), which the first seconds
-- are counted from. A config-file shard gets a row when it is drained.
ALTER TABLE shards ADD COLUMN changed_at_ms INTEGER NOT NULL DEFAULT 0;
