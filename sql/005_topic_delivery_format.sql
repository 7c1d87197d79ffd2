-- 005: how a topic's callbacks are sent and what counts as success.
-- callback_format 'json': one JSON document (dq's own format);
--                 'form': the body's top-level keys as form fields (POST) or
--                         query parameters (GET), as the PHP delay queue sent them.
-- success_json    '' (any 2xx succeeds) or 'PATH=VALUE' (e.g. 'code=0',
--                 'data.status=ok'): a 2xx whose JSON body does not hold
--                 VALUE at PATH is a failed attempt.
ALTER TABLE topics ADD COLUMN callback_format TEXT NOT NULL DEFAULT 'json'
  CHECK (callback_format IN ('json', 'form'));
ALTER TABLE topics ADD COLUMN success_json TEXT NOT NULL DEFAULT '';
