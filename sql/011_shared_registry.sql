-- 007: the shared registry (docs/registry.md, *One registry for every host*).
-- registry_versions: the version of each object of this host's copy, as the
-- shared copy in Redis numbered it, and the hash of its row as last written
-- or pushed, so a write that bypassed the shared copy (an older dqctl, the
-- first admin user) is found and pushed. kind: topic, api_token, admin_user,
-- alert_settings. row_hash 'deleted': a tombstone (the object was deleted).
-- registry_sync: the sync's own state (key 'seen_seq': the last change of
-- the shared copy applied here).
CREATE TABLE registry_versions (
  kind     TEXT NOT NULL,
  name     TEXT NOT NULL,
  version  INTEGER NOT NULL,
  row_hash TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (kind, name)
);

CREATE TABLE registry_sync (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
