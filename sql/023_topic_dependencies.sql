-- 023: what a topic's jobs that wait for other jobs ("after" of an add:
-- docs/delivery.md, "Dependencies between jobs") do when one they wait for
-- dies (dead-lettered), expires (its ttl, expire_at or late policy) or is
-- deleted: 'dead' (the default) dead-letters the waiter with a reason
-- naming that job; 'release' lets it go as if that job was delivered.
ALTER TABLE topics ADD COLUMN on_dependency_dead TEXT NOT NULL DEFAULT 'dead';
