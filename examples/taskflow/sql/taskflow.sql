-- taskflow's own tables, beside ferry's (outbox_events, processed_messages, dead_letters,
-- made by `ferry migrate --schema taskflow`) in the same schema. Applied by taskflow-api and
-- taskflow-worker at start (idempotent: IF NOT EXISTS, under an advisory lock so that
-- processes starting together do not race).

-- A task of a tenant. version counts the changes (1 at creation); assignment_message_id is
-- the messageId of the task.assigned.v1 event of the latest assignment, written in the
-- same transaction as that event's outbox row.
CREATE TABLE IF NOT EXISTS tasks (
    id                    uuid PRIMARY KEY,
    tenant_id             uuid        NOT NULL,
    title                 text        NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    assignee_id           uuid,
    assignment_message_id uuid,
    version               integer     NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS tasks_tenant ON tasks (tenant_id, created_at);

-- The emails the notifications worker handed to the mailer: one row per event messageId
-- (the mailer's Idempotency-Key), written after the mailer accepted it. An email is an
-- external effect that cannot commit with this row, so the row is not a claim taken before
-- sending (which a crash could leave without its email): the worker checks for the row,
-- sends with the messageId as the idempotency key, then inserts the row; a resend after a
-- crash between the two is absorbed by the mailer's key. duplicates counts the deliveries
-- of the same message that found it handled already (the row, or a racing insert).
CREATE TABLE IF NOT EXISTS notification_deliveries (
    message_id          uuid PRIMARY KEY,
    task_id             uuid        NOT NULL,
    tenant_id           uuid        NOT NULL,
    assignee_id         uuid        NOT NULL,
    template            text        NOT NULL,
    provider_message_id text        NOT NULL,
    duplicates          integer     NOT NULL DEFAULT 0,
    sent_at             timestamptz NOT NULL DEFAULT now()
);
