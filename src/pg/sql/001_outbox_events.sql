-- The outbox: one row per event, written in the application's own transaction.
-- Columns as applications commonly make them, so a table an application already made is adopted.
CREATE TABLE IF NOT EXISTS @SCHEMA@.outbox_events (
  id            uuid        PRIMARY KEY,
  topic         text        NOT NULL,
  aggregate_id  uuid        NOT NULL,
  payload       jsonb       NOT NULL,
  trace_id      text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  published_at  timestamptz
);
-- Publish bookkeeping: failed publish attempts of the row and the last error; a row that can
-- never become a job (payload over the relay's envelope limit) is set aside, not retried.
ALTER TABLE @SCHEMA@.outbox_events ADD COLUMN IF NOT EXISTS attempts int NOT NULL DEFAULT 0;
ALTER TABLE @SCHEMA@.outbox_events ADD COLUMN IF NOT EXISTS last_error text;
ALTER TABLE @SCHEMA@.outbox_events ADD COLUMN IF NOT EXISTS quarantined_at timestamptz;
-- The relay reads unpublished rows oldest first: the partial index stays small however
-- large the table grows (an application's own index of this name is kept).
CREATE INDEX IF NOT EXISTS outbox_unpublished ON @SCHEMA@.outbox_events (created_at)
  WHERE published_at IS NULL;
