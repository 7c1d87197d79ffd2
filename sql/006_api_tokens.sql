-- 006: API tokens of producers (common/registry/api_tokens.h), asked for by the API
-- server when [server] require_token = yes. A token is stored by its hash
-- (BLAKE2b, hex), never the token itself, so a copy of the database lets no
-- one in. topics is the scope: "*" for every topic, else topic names joined
-- by commas.
CREATE TABLE api_tokens (
  name          TEXT PRIMARY KEY,
  token_hash    TEXT NOT NULL UNIQUE,
  topics        TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
