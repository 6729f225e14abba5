-- Singleton periodic tasks shared by all relays (outbox retention): when each last ran, so
-- that N replicas run it once per interval between them.
CREATE TABLE IF NOT EXISTS @SCHEMA@.ferry_tasks (
  name         text        PRIMARY KEY,
  last_run_at  timestamptz,
  last_result  text
);
-- Retention deletes published rows created before the cutoff. A BRIN index on created_at
-- lets it skip the table's recent part (rows are appended in time order) for a few pages
-- of index and almost no cost per insert, where a B-tree would be updated on every publish.
CREATE INDEX IF NOT EXISTS outbox_created_brin ON @SCHEMA@.outbox_events USING brin (created_at);
