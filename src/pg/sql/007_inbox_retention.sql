-- Inbox retention (`ferry inbox cleanup`) deletes markers processed before a cutoff, and
-- `ferry inbox status` reads each consumer's oldest and newest marker. Markers are written
-- in time order, so a BRIN index on processed_at lets the cleanup skip the recent part of
-- the table for almost no cost per claim.
CREATE INDEX IF NOT EXISTS processed_messages_at_brin ON @SCHEMA@.processed_messages USING brin (processed_at);
