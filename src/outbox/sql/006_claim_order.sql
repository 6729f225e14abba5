-- The relay claims unpublished, unquarantined rows in (created_at, id) order. With only
-- outbox_unpublished (created_at), the events of one transaction, which share created_at,
-- were sorted as a whole group by every claim: 50,000 events appended in one transaction
-- took 20 s to relay, 3.5 s with this index. outbox_unpublished stays: `ferry outbox status`
-- counts every unpublished row, quarantined ones included, through it.
-- Building the index reads the table once under a SHARE lock (inserts wait meanwhile):
-- quick on a new or small table. On a large one, create it beforehand without blocking,
--   CREATE INDEX CONCURRENTLY outbox_claim ON <schema>.outbox_events (created_at, id)
--     WHERE published_at IS NULL AND quarantined_at IS NULL;
-- and this migration keeps it.
CREATE INDEX IF NOT EXISTS outbox_claim ON @SCHEMA@.outbox_events (created_at, id)
  WHERE published_at IS NULL AND quarantined_at IS NULL;
