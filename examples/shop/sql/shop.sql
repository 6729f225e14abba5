-- The shop's own tables, beside ferry's (outbox_events, processed_messages, dead_letters,
-- made by `ferry migrate`) in the same schema. Applied by shop-api and shop-worker at start
-- (idempotent: IF NOT EXISTS, under an advisory lock so that replicas starting together do
-- not race). Amounts are integers in the currency's smallest unit (VND has no minor unit).
CREATE TABLE IF NOT EXISTS orders (
    id           uuid PRIMARY KEY,
    customer_id  uuid        NOT NULL,
    status       text        NOT NULL CHECK (status IN ('placed', 'cancelled')),
    total        bigint      NOT NULL CHECK (total >= 0),
    items        jsonb       NOT NULL,
    trace_id     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    cancelled_at timestamptz
);

-- One payment per order. status moves authorized -> capturing -> captured (capture job),
-- authorized -> voiding -> voided (cancellation), capturing -> failed (the gateway says the
-- authorization is voided or expired). 'capturing' is the capture job's claim: once it is
-- set a cancellation is refused (409), so an order is never both captured and cancelled.
CREATE TABLE IF NOT EXISTS payments (
    order_id         uuid PRIMARY KEY REFERENCES orders (id),
    customer_id      uuid        NOT NULL,
    amount           bigint      NOT NULL CHECK (amount >= 0),
    status           text        NOT NULL
        CHECK (status IN ('authorized', 'capturing', 'captured', 'voiding', 'voided', 'failed')),
    authorization_id text        NOT NULL,
    capture_id       text,
    failure          text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    captured_at      timestamptz,
    voided_at        timestamptz
);

CREATE TABLE IF NOT EXISTS shipments (
    order_id        uuid PRIMARY KEY REFERENCES orders (id), -- UNIQUE per order
    tracking_number text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS loyalty_accounts (
    customer_id uuid PRIMARY KEY,
    points      bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Order confirmations handed to the mailer: one row per order.placed event (its id).
CREATE TABLE IF NOT EXISTS order_notifications (
    message_id          uuid PRIMARY KEY,
    order_id            uuid        NOT NULL,
    provider_message_id text        NOT NULL,
    sent_at             timestamptz NOT NULL DEFAULT now()
);

-- Duplicates the consumers absorbed (a delivery that found its work already done), one row
-- each, written after the fact and outside the effect's transaction: for the demo's
-- reconciliation and for an operator's curiosity, never read by the processing itself.
CREATE TABLE IF NOT EXISTS shop_duplicates (
    id         bigserial PRIMARY KEY,
    consumer   text        NOT NULL, -- 'payments.capture', 'loyalty.award-points', ...
    message_id text        NOT NULL, -- the job's event id
    how        text        NOT NULL, -- 'inbox', 'stored-result', 'remote-state', 'lookup', ...
    at         timestamptz NOT NULL DEFAULT now()
);
