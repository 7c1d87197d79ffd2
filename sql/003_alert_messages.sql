-- 003: alert events get a kind and the details a grouped mail lists, and
-- composed alerts (one mail + one webhook call each) get a table of their own
-- that records each channel's delivery and the back-off of failed sends.
--
-- alert_outbox rows are events: kind 'dead_letter' (queued by consumers,
-- grouped per topic by the redis checker) or 'crash_loop' (queued by the
-- master). The checker stamps sent_at_ms when it has put the event into an
-- alert_messages row, in the same transaction.
ALTER TABLE alert_outbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'dead_letter';
ALTER TABLE alert_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alert_outbox ADD COLUMN error TEXT NOT NULL DEFAULT '';

-- One alert to send: mail to `recipients` plus the global `to` setting, and
-- the JSON `payload` to the webhook. A channel is 'pending' until it is
-- 'sent', or 'off' when it was not configured when the alert came due.
-- sent_at_ms is set once no channel is pending.
CREATE TABLE alert_messages (
  id                 INTEGER PRIMARY KEY AUTOINCREMENT,
  kind               TEXT NOT NULL,  -- shard_down, shard_up, dead_letters, crash_loop
  subject            TEXT NOT NULL,
  text               TEXT NOT NULL,
  recipients         TEXT NOT NULL DEFAULT '',  -- besides the global ones, comma-separated
  payload            TEXT NOT NULL,             -- JSON object for the webhook
  mail_state         TEXT NOT NULL DEFAULT 'pending' CHECK (mail_state IN ('pending', 'sent', 'off')),
  webhook_state      TEXT NOT NULL DEFAULT 'pending' CHECK (webhook_state IN ('pending', 'sent', 'off')),
  attempts           INTEGER NOT NULL DEFAULT 0,  -- failed send rounds so far
  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,
  last_error         TEXT NOT NULL DEFAULT '',
  created_at_ms      INTEGER NOT NULL,
  sent_at_ms         INTEGER
);

CREATE INDEX alert_messages_pending ON alert_messages (next_attempt_at_ms) WHERE sent_at_ms IS NULL;
