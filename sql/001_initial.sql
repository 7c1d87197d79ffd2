-- 001: topics, extra Redis shards, alert settings.
CREATE TABLE topics (
  name            TEXT PRIMARY KEY,
  callback_url    TEXT NOT NULL,
  method          TEXT NOT NULL DEFAULT 'POST' CHECK (method IN ('POST', 'GET')),
  timeout_ms      INTEGER NOT NULL DEFAULT 5000,
  default_delay_s INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER NOT NULL DEFAULT 0,
  priority        INTEGER NOT NULL DEFAULT 2 CHECK (priority IN (1, 2, 3)),
  retry_ms        TEXT NOT NULL DEFAULT '',
  alert_emails    TEXT NOT NULL DEFAULT '',
  creator         TEXT NOT NULL DEFAULT '',
  status          TEXT NOT NULL DEFAULT 'online' CHECK (status IN ('online', 'offline')),
  created_at_ms   INTEGER NOT NULL,
  updated_at_ms   INTEGER NOT NULL
);

CREATE TABLE shards (
  address    TEXT PRIMARY KEY,  -- host:port
  password   TEXT NOT NULL DEFAULT '',
  enabled    INTEGER NOT NULL DEFAULT 1,
  created_at_ms INTEGER NOT NULL
);

CREATE TABLE alert_settings (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
