-- The relay claims unpublished rows in (created_at, id) order, and the events of one
-- transaction share created_at. With outbox_unpublished on created_at alone, every claim
-- sorted a whole created_at group (50,000 events appended in one transaction: 20 s to
-- relay). A second index on (created_at, id) beside it does not help: once the table has
-- history, the planner expects small groups and still takes the narrower index and an
-- incremental sort. So outbox_unpublished itself becomes (created_at, id), under the same
-- name, which an application's own CREATE INDEX IF NOT EXISTS then leaves alone; it still serves
-- `ferry outbox status` (every unpublished row, quarantined ones included).
-- Dropping an index takes an ACCESS EXCLUSIVE lock on the table and building it reads the
-- table once (inserts wait meanwhile): instant on a new or small table, seconds on tens of
-- millions of rows. Where that is too long, a DBA can apply it by hand instead (see
-- docs/outbox.md: CREATE INDEX CONCURRENTLY under another name, DROP INDEX CONCURRENTLY the
-- old one, rename, then record version 6 in ferry_schema_migrations).
DROP INDEX IF EXISTS @SCHEMA@.outbox_unpublished;
CREATE INDEX outbox_unpublished ON @SCHEMA@.outbox_events (created_at, id)
  WHERE published_at IS NULL;
