-- The dead letters of one job id under a prefix, whatever the queue: the first lookup of a
-- trace (`ferry trace`, GET /api/trace/{eventId}) asks for (prefix, job_id), which the
-- failure index (prefix, queue, job_id, ...) cannot serve without the queue. Migrations run
-- in one transaction, so this is a plain CREATE INDEX (it holds off inserts into
-- dead_letters while it builds); on a large table create it first by hand with
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS dead_letters_prefix_job_id
--     ON <schema>.dead_letters (prefix, job_id);
-- and this migration then finds it and does nothing.
CREATE INDEX IF NOT EXISTS dead_letters_prefix_job_id ON @SCHEMA@.dead_letters (prefix, job_id);
