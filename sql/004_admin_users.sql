-- 004: users of the admin page and their sessions. password_hash is
-- libsodium's crypto_pwhash_str (argon2id, with its own salt and cost).
-- A session is stored by the hash of its token (BLAKE2b), never the token
-- itself, so a copy of the database does not log anyone in; it survives a
-- respawn of dq-admin and ends at expires_at_ms (pushed on every use) or at
-- logout.
CREATE TABLE admin_users (
  name          TEXT PRIMARY KEY,
  password_hash TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);

CREATE TABLE admin_sessions (
  token_hash    TEXT PRIMARY KEY,
  user          TEXT NOT NULL,  -- deleting a user deletes its sessions (common/registry/admin_users.cc)
  csrf_token    TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);

CREATE INDEX admin_sessions_user ON admin_sessions (user);
