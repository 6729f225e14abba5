-- Final job failures (one row per queue and job id).
CREATE TABLE IF NOT EXISTS @SCHEMA@.dead_letters (
  id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
  queue         text        NOT NULL,
  job_name      text        NOT NULL,
  job_id        text        NOT NULL,
  data          jsonb       NOT NULL,
  error         text        NOT NULL,
  attempts_made int         NOT NULL,
  failed_at     timestamptz NOT NULL DEFAULT now(),
  redriven_at   timestamptz,
  UNIQUE (queue, job_id)
);
-- Redrive audit on the row: who redrove it last, the fresh job id it got, how many times.
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS redriven_by text;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS redrive_job_id text;
ALTER TABLE @SCHEMA@.dead_letters ADD COLUMN IF NOT EXISTS redrive_count int NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS dead_letters_failed_at ON @SCHEMA@.dead_letters (failed_at);
-- Every redrive (dry runs included), kept even when the dead letter row is deleted.
CREATE TABLE IF NOT EXISTS @SCHEMA@.dead_letter_redrives (
  id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  dead_letter_id  uuid        NOT NULL,
  queue           text        NOT NULL,
  job_id          text        NOT NULL,
  new_job_id      text,
  redriven_by     text        NOT NULL,
  redriven_at     timestamptz NOT NULL DEFAULT now(),
  dry_run         boolean     NOT NULL DEFAULT false,
  note            text
);
CREATE INDEX IF NOT EXISTS dead_letter_redrives_dead_letter
  ON @SCHEMA@.dead_letter_redrives (dead_letter_id);
