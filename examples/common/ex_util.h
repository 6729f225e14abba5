/* ex_util.h - what every example process shares: stopping on SIGTERM, log lines, option
 * values from flags or the environment, PostgreSQL connections (one, or a small pool) and
 * W3C trace ids. Built on ferry's public API and libpq only. */
#ifndef EX_UTIL_H
#define EX_UTIL_H

#include <libpq-fe.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- stopping ------------------------------------------------------------------------ */

/* Install SIGTERM/SIGINT handlers that ask the process to stop (and ignore SIGPIPE).
 * Returns 0, -1 when a handler or the wake-up pipe cannot be set up. Call once from main. */
int ex_signals_install(void);
/* 1 once SIGTERM/SIGINT arrived (or ex_request_stop was called), else 0. Any thread. */
int ex_stopping(void);
/* Ask the process to stop, as a signal would. Any thread, and signal-safe. */
void ex_request_stop(void);
/* Block until a stop is asked, or timeout_ms passes (-1 = no bound). Returns 1 when a stop
 * was asked, 0 on timeout. */
int ex_wait_stop(int timeout_ms);
/* Sleep up to ms, returning early (1) when a stop is asked; 0 after the full sleep. */
int ex_sleep_ms(long ms);

/* ---- log lines ----------------------------------------------------------------------- */

/* Set the program name shown in log lines (a static string). */
void ex_log_init(const char *prog);
/* One line to stderr: "2026-12-02T18:00:00.123Z PROG: MESSAGE". Whole lines, thread-safe. */
void ex_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A ferry_log_fn (ferry/common.h) writing through ex_log, with the level in front when it
 * is WARN or ERROR; userdata (a static string or NULL) is shown as a tag. */
void ex_ferry_log(int level, const char *message, void *userdata);

/* ---- option values ------------------------------------------------------------------- */

/* flag when not NULL, else getenv(env) when set and not empty, else dflt. */
const char *ex_opt(const char *flag, const char *env, const char *dflt);
/* Parse a whole decimal integer within [min, max]. Returns 0, -1 (not a number, out of
 * range) with a message in err[cap] naming `what`. */
int ex_parse_long(const char *s, long min, long max, const char *what, long *out, char *err,
                  size_t cap);
/* Parse a probability 0..1 ("0.25"). Returns 0, -1 with a message naming `what`. */
int ex_parse_rate(const char *s, const char *what, double *out, char *err, size_t cap);

/* ---- PostgreSQL ---------------------------------------------------------------------- */

/* Connect to url (libpq URL or conninfo; NULL/"" = libpq defaults) within timeout_ms (0 =
 * 5000), then SET search_path TO schema (NULL = "public") and statement_timeout to
 * statement_timeout_ms (0 = 10000).
 * Returns the connection, or NULL with a message in err[cap] that never holds the password
 * (ferry_outbox_database_url_mask). Blocks: up to the timeout plus two statements. */
PGconn *ex_pg_connect(const char *url, const char *schema, int timeout_ms, int statement_timeout_ms,
                      char *err, size_t cap);

/* PQexecParams with a client-side deadline: the session's statement_timeout plus 2 s (the
 * largest one ex_pg_connect was asked for). A server that accepts the statement and then
 * never answers (stopped, or gone without the network telling) is not waited for beyond it:
 * the connection's socket is shut down, so libpq marks it broken (a pool then reopens it), the
 * result is an error, and a log line says so. Same arguments and result as PQexecParams (free
 * it with PQclear; NULL on out of memory or when the statement could not be sent).
 * Blocks: up to the deadline. Threads: libpq's rule on c. */
PGresult *ex_pg_exec_params(PGconn *c, const char *sql, int nparams, const Oid *types,
                            const char *const *params, const int *lengths, const int *formats,
                            int result_format);

/* Run one statement with text parameters and no result rows wanted (BEGIN, COMMIT, UPDATE
 * ...), with ex_pg_exec_params' deadline. Returns the affected row count (>= 0), or -1 with
 * "SQLSTATE: message" in err[cap]. The message is PostgreSQL's primary message only. */
long ex_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params, char *err,
                size_t cap);
/* The SQLSTATE of res ("" when none). */
const char *ex_pg_sqlstate(const PGresult *res);

/* Make sure `schema` is ready for an example application: ferry's tables migrated to this
 * library's version (`ferry migrate` does that; this call does not) and the application's
 * own tables created by running `sql` (several statements; idempotent, IF NOT EXISTS) in one
 * transaction under a transaction-scoped advisory lock named by `app`, so that processes
 * starting together do not race. Unqualified names in `sql` go to the session's search_path
 * (ex_pg_connect sets it to the schema).
 * Returns: 0, or -1 with a message in err[cap]: ferry's tables missing or older (naming the
 *   `ferry migrate` to run), or the SQL failing (SQLSTATE and PostgreSQL's primary message,
 *   naming `app`). Blocks: a few statements under the session's statement_timeout.
 * Threads: libpq's rule on c, which must be idle; it is left idle. */
int ex_schema_ensure(PGconn *c, const char *schema, const char *app, const char *sql, char *err,
                     size_t cap);

/* A fixed-size pool of connections with the same settings, for handler threads. */
typedef struct ex_pgpool ex_pgpool;
/* Make a pool of up to size connections (opened on first use). Returns NULL on OOM. */
ex_pgpool *ex_pgpool_new(const char *url, const char *schema, int size, int statement_timeout_ms);
/* Take a connection: an idle one, or a new one while fewer than size exist, else wait up
 * to wait_ms for one to come back. A connection found broken is reopened.
 * Returns the connection, or NULL with a message in err[cap] (cannot connect, timed out
 * waiting). Threads: any. */
PGconn *ex_pgpool_get(ex_pgpool *p, int wait_ms, char *err, size_t cap);
/* Give a connection back. One left inside a transaction is rolled back; a broken one is
 * closed (the next get opens another). NULL accepted. */
void ex_pgpool_put(ex_pgpool *p, PGconn *c);
/* Close every connection and free the pool (none may be out). NULL accepted. */
void ex_pgpool_free(ex_pgpool *p);

/* ---- trace ids ----------------------------------------------------------------------- */

#define EX_TRACEPARENT_LEN 55 /* "00-<32 hex>-<16 hex>-01" */
/* Write a new random W3C traceparent into out. */
void ex_traceparent_new(char out[EX_TRACEPARENT_LEN + 1]);
/* Predicate: 1 when s is a well-formed traceparent (version 00, non-zero ids), else 0. */
int ex_traceparent_valid(const char *s);

#ifdef __cplusplus
}
#endif

#endif
