-- Dead letters as the recorder and `ferry dlq sync` write them. A row is one final failure
-- of one job: the queue's key prefix, the job's creation time and its attempts made tell
-- a reused custom job id, and a job retried by hand that fails again, from the failure
-- already recorded, while the worker's recorder and a sync that both see the same failure
-- write one row between them. Data that is not JSON (a foreign producer's) is kept as
-- text instead of being refused; the stored job options and stack trace come along for
-- `ferry dlq show` and the redrive.
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS prefix text NOT NULL DEFAULT 'bull';
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS job_timestamp bigint NOT NULL DEFAULT 0;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS data_text text;
ALTER TABLE @SCHEMA@.dead_letters ALTER COLUMN data DROP NOT NULL;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS opts text;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS stacktrace text;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS recorded_by text NOT NULL DEFAULT 'worker';
ALTER TABLE @SCHEMA@.dead_letters DROP CONSTRAINT IF EXISTS dead_letters_queue_job_id_key;
CREATE UNIQUE INDEX IF NOT EXISTS dead_letters_failure
  ON @SCHEMA@.dead_letters (prefix, queue, job_id, job_timestamp, attempts_made);
-- The audit says what was done (a redrive or a purge), under which prefix, and with which
-- filter the operator chose the rows.
ALTER TABLE @SCHEMA@.dead_letter_redrives ADD COLUMN IF NOT EXISTS action text NOT NULL DEFAULT 'redrive';
ALTER TABLE @SCHEMA@.dead_letter_redrives ADD COLUMN IF NOT EXISTS prefix text;
ALTER TABLE @SCHEMA@.dead_letter_redrives ADD COLUMN IF NOT EXISTS filter text;
