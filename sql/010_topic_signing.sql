-- 007: Standard Webhooks signing keys of topics (common/registry/signing_keys.h).
-- kind is 'hmac' (secret "whsec_...") or 'ed25519' (secret "whsk_...",
-- public_key "whpk_..."). retires_at_ms is 0 for a topic's current key of a
-- kind; a rotation sets it on the previous key, which is still sent until
-- then. The secrets are kept as they are (HMAC needs them), so this file is
-- as sensitive as they are (docs/security.md).
CREATE TABLE topic_signing_keys (
  topic         TEXT NOT NULL,
  key_id        TEXT NOT NULL,
  kind          TEXT NOT NULL,
  secret        TEXT NOT NULL,
  public_key    TEXT NOT NULL DEFAULT '',
  created_at_ms INTEGER NOT NULL,
  retires_at_ms INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (topic, key_id)
);
