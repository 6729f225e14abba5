/* pg.h - PostgreSQL helpers for the outbox: schema quoting, error text with SQLSTATE, and
 * for connections ferry owns (the relay's) a connect and an exec that both end by a
 * deadline whatever the peer does (libpq's blocking calls have none: a half-dead server
 * would hang them until TCP gives up).
 *
 * Thread-safety: a ferry__pgc is used by one thread at a time. */
#ifndef FERRY_PG_PG_H
#define FERRY_PG_PG_H

#include <libpq-fe.h>
#include <stdint.h>

#include "ferry/outbox.h"

/* The code for "PostgreSQL reported an error" (SQLSTATE in the message). */
#define FERRY__EDB FERRY_EDB

/* Room for a quoted schema: two quotes, every byte doubled at worst, NUL. */
#define FERRY__QSCHEMA_MAX (2 * FERRY_OUTBOX_SCHEMA_MAX + 3)

/* Validate a schema name (1..63 bytes, UTF-8, NUL-free; NULL = "public") and write it as a
 * quoted identifier ("name", with " doubled) into out. Pure. Returns 0 or FERRY_EINVAL.
 * The one internal form of the schema: every public entry point takes the unquoted name
 * from its options (outbox.h, "Naming the schema"), quotes it here once, and passes only
 * the quoted text (`qs`, `qschema`) on to the SQL it builds; the unquoted name is used only
 * as a parameter value (the advisory-lock hash, the NOTIFY payload) and, made printable,
 * in messages. */
int ferry__pg_quote_schema(const char *schema, char out[FERRY__QSCHEMA_MAX], ferry_error *err);

/* Fill *err from a failed result (or, with res NULL, from the connection): "<what>:
 * <primary message> (SQLSTATE xxxxx)", one line. Returns FERRY__EDB, or FERRY_EIO when
 * the connection is gone. */
int ferry__pg_error(PGconn *conn, const PGresult *res, const char *what, ferry_error *err);

/* A PostgreSQL text[] literal ({"a","b"}) of items[0..n), each double-quoted with '"' and
 * '\\' escaped. malloc'd (caller frees); NULL when out of memory. Pure. */
char *ferry__pg_text_array(const char *const *items, size_t n);

/* Run one statement (params as text, may be NULL when nparams is 0) on a caller's blocking
 * connection. On success *out (may be NULL to discard) holds the result (PQclear it). */
int ferry__pg_run(PGconn *conn, const char *what, const char *sql, int nparams,
                  const char *const *params, PGresult **out, ferry_error *err);

/* The part of a database URL or conninfo (url, NULL or "" = libpq defaults) that is safe to
 * show, built from what libpq parses: "[user@]host[:port][/dbname]", each part made
 * printable, "(default host)" without a host, "(libpq defaults)" for "", "(not parsable)"
 * when libpq cannot parse it. Never the password, whatever its characters. Writes out[cap]
 * (cap >= 16) and returns out. Pure, thread-safe. */
const char *ferry__pg_url_display(const char *url, char *out, size_t cap);

/* Replace in msg (NUL-terminated, changed in place, never longer) by "***" every
 * occurrence of a password url holds or libpq would use: password= and sslpassword= as
 * libpq parses them, every such key of a conninfo or URL query (also the first of two), a
 * URL's password as written (percent-encoded) and decoded, and the PGPASSWORD environment
 * variable's value; each also with its line breaks and tabs flattened to spaces and as
 * ferryx_printable shows it. url may be NULL (PGPASSWORD still masked). Passwords of fewer
 * than 3 bytes are left alone (masking them would garble any text). For texts from libpq
 * or the server about a connection to url. No I/O (reads the environment); thread-safe
 * while nothing changes the environment. */
void ferry__pg_url_mask(const char *url, char *msg);

/* A connection ferry owns. `broken` is set once a call failed in a way that leaves the
 * connection unusable (lost, or a deadline passed with a query in flight): the owner
 * closes it and reconnects. */
typedef struct ferry__pgc {
    PGconn *conn;
    int broken;
    /* SQLSTATE of the error the last exec/prepare/recv returned when the server reported
     * one (for recv: the first failure's), else "" */
    char sqlstate[6];
} ferry__pgc;

/* Connect (URL or conninfo; "" = libpq defaults) within timeout_ms, with TCP keepalives,
 * tcp_user_timeout and client_encoding UTF8, then set statement_timeout, lock_timeout
 * and idle_in_transaction_session_timeout for the session (so the server also ends a
 * transaction left open by a stuck or dead relay), and on PostgreSQL 14+ turn
 * idle_session_timeout off (the session may wait idle for NOTIFY as long as it likes,
 * whatever the server, database or role sets). Error texts are masked for the URL's
 * password (ferry__pg_url_mask). */
typedef struct ferry__pg_session {
    const char *url;
    const char *application_name;
    int connect_timeout_ms;
    int statement_timeout_ms;
    int idle_in_tx_timeout_ms;
} ferry__pg_session;

int ferry__pgc_connect(ferry__pgc *c, const ferry__pg_session *s, ferry_error *err);
void ferry__pgc_close(ferry__pgc *c);

/* Send a statement (stmt_name non-NULL = a prepared statement of that name, sql ignored)
 * and wait for its result until deadline (ferry__mono_ms clock). On success *out (may be
 * NULL) holds the result. A server error returns FERRY__EDB with the connection still
 * usable; a transport failure or the deadline marks it broken. */
int ferry__pgc_exec(ferry__pgc *c, int64_t deadline, const char *what, const char *stmt_name,
                    const char *sql, int nparams, const char *const *params, PGresult **out,
                    ferry_error *err);

/* One statement of a pipeline: a prepared statement (stmt_name) or SQL with parameters. */
typedef struct ferry__pg_stmt {
    const char *what; /* names it in errors */
    const char *stmt_name, *sql;
    int nparams;
    const char *const *params;
} ferry__pg_stmt;

/* Segments of a pipeline: bit i of a ferry__pg_segs set = a segment ends after statement i
 * (i < 32; the last statement always ends one). An error skips the rest of its own segment
 * only, so a COMMIT in one segment and the next BEGIN in another succeed or fail
 * independently. */
typedef uint32_t ferry__pg_segs;

/* Send n statements in one round trip (libpq pipeline mode) and wait for all results until
 * deadline. When out is non-NULL, out[i] receives statement i's result (the caller PQclears
 * each) on success; on failure nothing is left in out. The first failure is returned;
 * inside an explicit transaction the server leaves the transaction aborted (the caller
 * rolls back). */
int ferry__pgc_pipeline(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                        PGresult **out, ferry_error *err);

/* The two halves of ferry__pgc_pipeline, so the caller can work while the server runs the
 * statements: ferry__pgc_send writes them all (waiting only while the socket is full);
 * ferry__pgc_recv, with the same st, n and segs, reads their results. Until ferry__pgc_recv
 * returns, nothing else may be sent on c. The parameters need to live only during
 * ferry__pgc_send (recv reads only st[i].what).
 *
 * ferry__pgc_recv stores every successful result in out[i] (the caller PQclears each; NULL
 * for a statement that failed or was skipped), returns 0 when all succeeded, else the first
 * failure's code with *err filled and *failed = its index; statements in later segments
 * still ran and their results are in out. After a transport failure or the deadline the
 * connection is broken and the results not read are NULL. */
int ferry__pgc_send(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                    ferry__pg_segs segs, ferry_error *err);
int ferry__pgc_recv(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                    ferry__pg_segs segs, PGresult **out, size_t *failed, ferry_error *err);

/* Prepare a named statement (deadline as above). */
int ferry__pgc_prepare(ferry__pgc *c, int64_t deadline, const char *name, const char *sql,
                       int nparams, ferry_error *err);

/* Read what the server sent without blocking (notifications); marks the connection broken
 * and returns FERRY_EIO when it is gone. */
int ferry__pgc_consume(ferry__pgc *c, ferry_error *err);

#endif
