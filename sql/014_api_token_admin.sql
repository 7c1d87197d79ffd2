-- 014: the admin scope of an API token (common/registry/api_tokens.h): 1 lets
-- it create, change and delete the topics of its scope over the HTTP API
-- (PUT, PATCH and DELETE /v1/topics/{topic}); 0, a producer's token, cannot.
ALTER TABLE api_tokens ADD COLUMN admin INTEGER NOT NULL DEFAULT 0;
