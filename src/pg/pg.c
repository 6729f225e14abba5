/* pg.c - PostgreSQL plumbing for the outbox (see pg.h): quoting, error text, and the
 * deadline-bounded connect/exec the relay uses, built on libpq's non-blocking API
 * (PQconnectPoll, PQsendQuery*, PQconsumeInput) with poll(2) on the socket. */
#include "pg/pg.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "util/clock.h"
#include "util/error.h"

int ferry__pg_quote_schema(const char *schema, char out[FERRY__QSCHEMA_MAX], ferry_error *err) {
    if (!schema) schema = FERRY_OUTBOX_DEFAULT_SCHEMA;
    size_t n = strnlen(schema, FERRY_OUTBOX_SCHEMA_MAX + 1);
    if (n == 0) return ferry__err(err, FERRY_EINVAL, "schema name is empty");
    if (n > FERRY_OUTBOX_SCHEMA_MAX)
        return ferry__err(err, FERRY_EINVAL, "schema name is longer than %d bytes",
                          FERRY_OUTBOX_SCHEMA_MAX);
    if (!ferryx_utf8_valid(schema, n))
        return ferry__err(err, FERRY_EINVAL, "schema name is not UTF-8");
    size_t k = 0;
    out[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (schema[i] == '"') out[k++] = '"';
        out[k++] = schema[i];
    }
    out[k++] = '"';
    out[k] = '\0';
    return 0;
}

/* Copy s into one line: newlines and tabs become spaces, trailing blanks go. */
static void one_line(char *dst, size_t cap, const char *s) {
    size_t k = 0;
    for (; s && *s && k + 1 < cap; s++)
        dst[k++] = (*s == '\n' || *s == '\r' || *s == '\t') ? ' ' : *s;
    while (k > 0 && dst[k - 1] == ' ')
        k--;
    dst[k] = '\0';
}

int ferry__pg_error(PGconn *conn, const PGresult *res, const char *what, ferry_error *err) {
    char msg[400];
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!primary && res) primary = PQresultErrorMessage(res);
    if (!primary || !*primary) primary = conn ? PQerrorMessage(conn) : "no connection";
    one_line(msg, sizeof msg, primary && *primary ? primary : "unknown error");
    int gone = !conn || PQstatus(conn) != CONNECTION_OK;
    int code = gone ? FERRY_EIO : FERRY__EDB;
    if (state && *state) return ferry__err(err, code, "%s: %s (SQLSTATE %s)", what, msg, state);
    return ferry__err(err, code, "%s: %s", what, msg);
}

static int result_ok(const PGresult *r) {
    ExecStatusType st = PQresultStatus(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Keep a failed result's SQLSTATE on the connection, for callers that act on one. */
static void keep_sqlstate(ferry__pgc *c, const PGresult *r) {
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    size_t n = st && strlen(st) == 5 ? 5 : 0;
    if (n) memcpy(c->sqlstate, st, n);
    c->sqlstate[n] = '\0';
}

int ferry__pg_run(PGconn *conn, const char *what, const char *sql, int nparams,
                  const char *const *params, PGresult **out, ferry_error *err) {
    if (out) *out = NULL;
    PGresult *r =
        nparams ? PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0) : PQexec(conn, sql);
    if (!r || !result_ok(r)) {
        int rc = ferry__pg_error(conn, r, what, err);
        PQclear(r);
        return rc;
    }
    if (out)
        *out = r;
    else
        PQclear(r);
    return 0;
}

/* ---- owned connections with deadlines ------------------------------------------------ */

/* Wait for `events` on the connection's socket until deadline. 1 ready, 0 timeout, -1 error. */
static int wait_socket(PGconn *conn, short events, int64_t deadline) {
    int fd = PQsocket(conn);
    if (fd < 0) return -1;
    for (;;) {
        int64_t left = deadline - ferry__mono_ms();
        if (left <= 0) return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0) return 1;
        if (n < 0 && errno != EINTR) return -1;
    }
}

void ferry__pgc_close(ferry__pgc *c) {
    if (!c) return;
    if (c->conn) PQfinish(c->conn);
    c->conn = NULL;
    c->broken = 0;
}

static int session_setup(ferry__pgc *c, const ferry__pg_session *s, int64_t deadline,
                         ferry_error *err) {
    char sql[400];
    /* idle_session_timeout (PostgreSQL 14+; older servers reject the name): a server, database
     * or role setting would end the relay's sessions while they wait for NOTIFY or the next
     * retention run, and every wait would end in a reconnect and a warning. The relay's
     * sessions are meant to be idle; they bound their transactions themselves (above). */
    /* default_transaction_isolation: the claim's FOR UPDATE SKIP LOCKED and the other
     * relays' updates need READ COMMITTED. Under REPEATABLE READ or SERIALIZABLE (a server,
     * database or role default) a row another relay published after our snapshot fails the
     * claim with 40001 instead of being skipped, and several relays work as one. */
    /* lock_timeout a little under statement_timeout: a statement that waits for a lock
     * (DDL holding the table, say) ends with 55P03, so 57014 (statement timeout) means the
     * statement's own work took too long, which the relay acts on for its claim
     * (relay_claim_limit.c). The claim's lock waits, on the table, start at once. */
    int lock_ms = s->statement_timeout_ms -
                  (s->statement_timeout_ms / 4 < 1000 ? s->statement_timeout_ms / 4 : 1000);
    snprintf(sql, sizeof sql,
             "SET statement_timeout = %d; SET lock_timeout = %d; "
             "SET idle_in_transaction_session_timeout = %d; "
             "SET default_transaction_isolation = 'read committed'%s",
             s->statement_timeout_ms, lock_ms, s->idle_in_tx_timeout_ms,
             PQserverVersion(c->conn) >= 140000 ? "; SET idle_session_timeout = 0" : "");
    return ferry__pgc_exec(c, deadline, "session setup", NULL, sql, 0, NULL, NULL, err);
}

static void ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static int connect_session(ferry__pgc *c, const ferry__pg_session *s, ferry_error *err) {
    ferry__pgc_close(c);
    char user_timeout[24], keepidle[8] = "10", keepintvl[8] = "5", keepcnt[8] = "3";
    /* A peer that stops acknowledging data ends the connection after this long. */
    snprintf(user_timeout, sizeof user_timeout, "%d", s->statement_timeout_ms + 2000);
    /* Entries before dbname may be overridden by the URL; client_encoding after it may not:
     * the relay copies text into JSON and relies on UTF-8. */
    const char *keys[] = {"application_name",
                          "keepalives",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "tcp_user_timeout",
                          "dbname",
                          "client_encoding",
                          NULL};
    const char *vals[] = {s->application_name ? s->application_name : "ferry",
                          "1",
                          keepidle,
                          keepintvl,
                          keepcnt,
                          user_timeout,
                          s->url ? s->url : "",
                          "UTF8",
                          NULL};
    int64_t deadline =
        ferry__mono_ms() + (s->connect_timeout_ms > 0 ? s->connect_timeout_ms : 5000);
    PGconn *conn = PQconnectStartParams(keys, vals, 1);
    if (!conn) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (PQstatus(conn) == CONNECTION_BAD) {
        int rc = ferry__pg_error(conn, NULL, "connect", err);
        PQfinish(conn);
        return rc;
    }
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK) {
        if (st == PGRES_POLLING_FAILED) {
            int rc = ferry__pg_error(conn, NULL, "connect", err);
            PQfinish(conn);
            return rc;
        }
        int w = wait_socket(conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (w <= 0) {
            PQfinish(conn);
            return w == 0 ? ferry__err(err, FERRY_ETIMEDOUT, "connect: no answer within %d ms",
                                       s->connect_timeout_ms)
                          : ferry__err(err, FERRY_EIO, "connect: poll failed: %s", strerror(errno));
        }
        st = PQconnectPoll(conn);
    }
    PQsetNoticeProcessor(conn, ignore_notice, NULL); /* the library never prints */
    if (PQsetnonblocking(conn, 1) != 0) {
        int rc = ferry__pg_error(conn, NULL, "connect", err);
        PQfinish(conn);
        return rc;
    }
    c->conn = conn;
    c->broken = 0;
    int rc = session_setup(c, s, deadline + s->statement_timeout_ms, err);
    if (rc) ferry__pgc_close(c);
    return rc;
}

int ferry__pgc_connect(ferry__pgc *c, const ferry__pg_session *s, ferry_error *err) {
    int rc = connect_session(c, s, err);
    /* libpq's and the server's texts quote parts of the conninfo (a host, a port, a
     * database name) that a misread password can end up in */
    if (rc && err) ferry__pg_url_mask(s->url, err->message);
    return rc;
}

/* The connection failed under us: libpq's text, always FERRY_EIO. */
static int lost(PGconn *conn, const char *what, ferry_error *err) {
    ferry__pg_error(conn, NULL, what, err);
    if (err) err->code = FERRY_EIO;
    return FERRY_EIO;
}

/* Flush the send buffer and collect every result of the statement sent; keep the first
 * failed result, else the last one. */
static int collect(ferry__pgc *c, int64_t deadline, const char *what, PGresult **out,
                   ferry_error *err) {
    PGconn *conn = c->conn;
    for (;;) {
        int f = PQflush(conn);
        if (f == 0) break;
        if (f < 0) goto transport;
        int w = wait_socket(conn, POLLOUT | POLLIN, deadline);
        if (w == 0) goto timeout;
        if (w < 0 || !PQconsumeInput(conn)) goto transport;
    }
    PGresult *keep = NULL;
    for (;;) {
        while (PQisBusy(conn)) {
            int w = wait_socket(conn, POLLIN, deadline);
            if (w == 0) {
                PQclear(keep);
                goto timeout;
            }
            if (w < 0 || !PQconsumeInput(conn)) {
                PQclear(keep);
                goto transport;
            }
        }
        PGresult *r = PQgetResult(conn);
        if (!r) break;
        if (keep && !result_ok(keep)) {
            PQclear(r); /* keep the first failure */
        } else {
            PQclear(keep);
            keep = r;
        }
    }
    if (!keep) {
        if (PQstatus(conn) != CONNECTION_OK) goto transport;
        return ferry__err(err, FERRY_EPROTO, "%s: no result", what);
    }
    if (!result_ok(keep)) {
        keep_sqlstate(c, keep);
        int rc = ferry__pg_error(conn, keep, what, err);
        PQclear(keep);
        if (PQstatus(conn) != CONNECTION_OK) c->broken = 1;
        return rc;
    }
    if (out)
        *out = keep;
    else
        PQclear(keep);
    return 0;
timeout:
    c->broken = 1;
    return ferry__err(err, FERRY_ETIMEDOUT, "%s: no answer from PostgreSQL in time", what);
transport:
    c->broken = 1;
    return lost(conn, what, err);
}

int ferry__pgc_exec(ferry__pgc *c, int64_t deadline, const char *what, const char *stmt_name,
                    const char *sql, int nparams, const char *const *params, PGresult **out,
                    ferry_error *err) {
    if (out) *out = NULL;
    c->sqlstate[0] = '\0';
    if (!c->conn || c->broken)
        return ferry__err(err, FERRY_EIO, "%s: not connected to PostgreSQL", what);
    int sent = stmt_name ? PQsendQueryPrepared(c->conn, stmt_name, nparams, params, NULL, NULL, 0)
               : nparams ? PQsendQueryParams(c->conn, sql, nparams, NULL, params, NULL, NULL, 0)
                         : PQsendQuery(c->conn, sql);
    if (!sent) {
        c->broken = 1;
        return lost(c->conn, what, err);
    }
    return collect(c, deadline, what, out, err);
}

/* Wait until a result (or the NULL that ends one statement's results) is ready. */
static int next_result(ferry__pgc *c, int64_t deadline, const char *what, PGresult **r,
                       ferry_error *err) {
    while (PQisBusy(c->conn)) {
        int w = wait_socket(c->conn, POLLIN, deadline);
        if (w == 0) {
            c->broken = 1;
            return ferry__err(err, FERRY_ETIMEDOUT, "%s: no answer from PostgreSQL in time", what);
        }
        if (w < 0 || !PQconsumeInput(c->conn)) {
            c->broken = 1;
            return lost(c->conn, what, err);
        }
    }
    *r = PQgetResult(c->conn);
    return 0;
}

/* Whether a segment ends after statement i of n. */
static int seg_end(ferry__pg_segs segs, size_t i, size_t n) {
    return i + 1 == n || (i < 32 && (segs >> i) & 1u);
}

int ferry__pgc_send(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                    ferry__pg_segs segs, ferry_error *err) {
    c->sqlstate[0] = '\0';
    if (n == 0) return ferry__err(err, FERRY_EINVAL, "pipeline: no statement");
    if (!c->conn || c->broken)
        return ferry__err(err, FERRY_EIO, "%s: not connected to PostgreSQL", st[0].what);
    if (!PQenterPipelineMode(c->conn)) {
        c->broken = 1;
        return lost(c->conn, st[0].what, err);
    }
    for (size_t i = 0; i < n; i++) {
        int sent = st[i].stmt_name ? PQsendQueryPrepared(c->conn, st[i].stmt_name, st[i].nparams,
                                                         st[i].params, NULL, NULL, 0)
                                   : PQsendQueryParams(c->conn, st[i].sql, st[i].nparams, NULL,
                                                       st[i].params, NULL, NULL, 0);
        if (!sent || (seg_end(segs, i, n) && !PQpipelineSync(c->conn))) {
            c->broken = 1;
            return lost(c->conn, st[i].what, err);
        }
    }
    for (;;) { /* everything out before anyone waits for answers */
        int f = PQflush(c->conn);
        if (f == 0) return 0;
        int w = f < 0 ? -1 : wait_socket(c->conn, POLLOUT | POLLIN, deadline);
        if (w == 0) {
            c->broken = 1;
            return ferry__err(err, FERRY_ETIMEDOUT, "%s: no answer from PostgreSQL in time",
                              st[0].what);
        }
        if (w < 0 || !PQconsumeInput(c->conn)) {
            c->broken = 1;
            return lost(c->conn, st[0].what, err);
        }
    }
}

int ferry__pgc_recv(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                    ferry__pg_segs segs, PGresult **out, size_t *failed, ferry_error *err) {
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    *failed = n;
    if (!c->conn || c->broken) {
        *failed = 0;
        return ferry__err(err, FERRY_EIO, "%s: not connected to PostgreSQL", st[0].what);
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        PGresult *r = NULL, *end = NULL;
        ferry_error scratch = {0}; /* after the first failure, keep its text */
        ferry_error *e = rc ? &scratch : err;
        int trc = next_result(c, deadline, st[i].what, &r, e);
        if (!trc && !r) {
            c->broken = 1;
            trc = ferry__err(e, FERRY_EPROTO, "%s: no result", st[i].what);
        }
        if (trc) { /* broken: nothing more can be read */
            if (!rc) *failed = i;
            return rc ? rc : trc;
        }
        ExecStatusType s = PQresultStatus(r);
        if (s == PGRES_PIPELINE_ABORTED) { /* skipped: an earlier statement of its segment failed */
            PQclear(r);
        } else if (!result_ok(r)) {
            if (!rc) keep_sqlstate(c, r);
            int erc = ferry__pg_error(c->conn, r, st[i].what, e);
            PQclear(r);
            if (!rc) {
                rc = erc;
                *failed = i;
            }
        } else {
            out[i] = r;
        }
        /* the NULL that ends statement i's results, then its segment's sync */
        trc = next_result(c, deadline, st[i].what, &end, e);
        if (!trc && end) {
            PQclear(end);
            c->broken = 1;
            trc = ferry__err(e, FERRY_EPROTO, "%s: pipeline out of step", st[i].what);
        }
        if (!trc && seg_end(segs, i, n)) {
            PGresult *sync = NULL;
            trc = next_result(c, deadline, st[i].what, &sync, e);
            if (!trc && (!sync || PQresultStatus(sync) != PGRES_PIPELINE_SYNC)) {
                c->broken = 1;
                trc = ferry__err(e, FERRY_EPROTO, "%s: pipeline out of step", st[i].what);
            }
            PQclear(sync);
        }
        if (trc) {
            if (!rc) *failed = i;
            return rc ? rc : trc;
        }
    }
    if (!PQexitPipelineMode(c->conn)) {
        c->broken = 1;
        if (!rc) {
            *failed = n - 1;
            rc = lost(c->conn, st[n - 1].what, err);
        }
    }
    return rc;
}

int ferry__pgc_pipeline(ferry__pgc *c, int64_t deadline, const ferry__pg_stmt *st, size_t n,
                        PGresult **out, ferry_error *err) {
    for (size_t i = 0; out && i < n; i++)
        out[i] = NULL;
    PGresult **res = out ? out : calloc(n ? n : 1, sizeof *res); /* results to discard */
    if (!res) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    size_t failed = 0;
    int rc = ferry__pgc_send(c, deadline, st, n, 0, err);
    if (!rc) rc = ferry__pgc_recv(c, deadline, st, n, 0, res, &failed, err);
    if (rc || !out)
        for (size_t i = 0; i < n; i++) {
            PQclear(res[i]);
            res[i] = NULL;
        }
    if (!out) free(res);
    return rc;
}

int ferry__pgc_prepare(ferry__pgc *c, int64_t deadline, const char *name, const char *sql,
                       int nparams, ferry_error *err) {
    c->sqlstate[0] = '\0';
    if (!c->conn || c->broken) return ferry__err(err, FERRY_EIO, "prepare: not connected");
    if (!PQsendPrepare(c->conn, name, sql, nparams, NULL)) {
        c->broken = 1;
        return lost(c->conn, name, err);
    }
    return collect(c, deadline, name, NULL, err);
}

int ferry__pgc_consume(ferry__pgc *c, ferry_error *err) {
    if (!c->conn || c->broken) return ferry__err(err, FERRY_EIO, "not connected to PostgreSQL");
    if (!PQconsumeInput(c->conn) || PQstatus(c->conn) != CONNECTION_OK) {
        c->broken = 1;
        return lost(c->conn, "PostgreSQL connection", err);
    }
    return 0;
}
