-- 002: alert mails waiting to be sent. Consumers queue one when a job is
-- dead-lettered; a sender picks the unsent rows (sent_at_ms IS NULL) in id
-- order and stamps sent_at_ms once the mail is out.
CREATE TABLE alert_outbox (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  topic         TEXT NOT NULL,
  job_id        TEXT NOT NULL,
  recipients    TEXT NOT NULL,  -- comma-separated
  subject       TEXT NOT NULL,
  text          TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  sent_at_ms    INTEGER
);

CREATE INDEX alert_outbox_unsent ON alert_outbox (id) WHERE sent_at_ms IS NULL;
