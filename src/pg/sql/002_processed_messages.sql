-- The inbox of idempotent consumers: a consumer claims a message id in the same transaction
-- as its effect; a redelivered message finds the row and does nothing.
CREATE TABLE IF NOT EXISTS @SCHEMA@.processed_messages (
  consumer      text        NOT NULL,
  message_id    uuid        NOT NULL,
  processed_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, message_id)
);
