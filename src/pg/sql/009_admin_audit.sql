-- The audit of `ferry serve`: one row per request to an action endpoint (scope act or
-- redrive), refused ones included (401, 403, 4xx), written after the action with its
-- result. Who (the token's name, "unknown" when none was valid), what (method, path, a
-- one-line summary from the handler, never a payload), when, the HTTP status, and the
-- request's ids to find its log lines.
CREATE TABLE IF NOT EXISTS @SCHEMA@.admin_audit (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  actor text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  status int NOT NULL,
  summary text,
  request_id text NOT NULL,
  remote text,
  trace_id text
);
CREATE INDEX IF NOT EXISTS admin_audit_at ON @SCHEMA@.admin_audit (at);
