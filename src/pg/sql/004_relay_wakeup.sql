-- Wakes the relays: every INSERT statement into outbox_events sends NOTIFY ferry_outbox with
-- the schema as payload, delivered when the inserting transaction commits (never for a
-- rollback). One notification per statement, and PostgreSQL folds identical notifications
-- of one transaction into one, so a batch insert costs one wake-up. Relays also poll, so a
-- lost notification only delays delivery by the poll interval.
CREATE OR REPLACE FUNCTION @SCHEMA@.ferry_outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('ferry_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS ferry_outbox_notify ON @SCHEMA@.outbox_events;
CREATE TRIGGER ferry_outbox_notify AFTER INSERT ON @SCHEMA@.outbox_events
  FOR EACH STATEMENT EXECUTE FUNCTION @SCHEMA@.ferry_outbox_notify();
