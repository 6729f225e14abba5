/* ex_util.c - stopping on signals, log lines, option values, PostgreSQL connections and a
 * small pool, W3C trace ids: what every example process shares. */
#include "ex_util.h"

#include <ferry/common.h>
#include <ferry/outbox.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- stopping ------------------------------------------------------------------------ */

static atomic_int g_stop;
static int g_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    (void)sig;
    ex_request_stop();
}

int ex_signals_install(void) {
    if (g_pipe[0] < 0) {
        if (pipe(g_pipe) != 0) return -1;
        for (int i = 0; i < 2; i++) {
            fcntl(g_pipe[i], F_SETFD, FD_CLOEXEC);
            fcntl(g_pipe[i], F_SETFL, O_NONBLOCK);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) return -1;
    sa.sa_handler = SIG_IGN;
    return sigaction(SIGPIPE, &sa, NULL) == 0 ? 0 : -1;
}

int ex_stopping(void) {
    return atomic_load(&g_stop);
}

void ex_request_stop(void) {
    int saved = errno;
    atomic_store(&g_stop, 1);
    if (g_pipe[1] >= 0) {
        ssize_t n = write(g_pipe[1], "x", 1);
        (void)n; /* a full pipe is already readable */
    }
    errno = saved;
}

int ex_wait_stop(int timeout_ms) {
    long long deadline = 0;
    struct timespec ts;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        deadline = ts.tv_sec * 1000LL + ts.tv_nsec / 1000000 + timeout_ms;
    }
    while (!ex_stopping()) {
        int wait = -1;
        if (timeout_ms >= 0) {
            clock_gettime(CLOCK_MONOTONIC, &ts);
            long long left = deadline - (ts.tv_sec * 1000LL + ts.tv_nsec / 1000000);
            if (left <= 0) return 0;
            wait = left > 1000 ? 1000 : (int)left;
        } else {
            wait = 1000;
        }
        if (g_pipe[0] >= 0) {
            struct pollfd p = {.fd = g_pipe[0], .events = POLLIN};
            poll(&p, 1, wait); /* the pipe stays readable: every waiter wakes */
        } else {
            struct timespec d = {wait / 1000, (wait % 1000) * 1000000L};
            nanosleep(&d, NULL);
        }
    }
    return 1;
}

int ex_sleep_ms(long ms) {
    if (ms < 0) ms = 0;
    return ex_wait_stop(ms > 0x7fffffff ? 0x7fffffff : (int)ms);
}

/* ---- log lines ----------------------------------------------------------------------- */

static const char *g_prog = "example";
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;

void ex_log_init(const char *prog) {
    if (prog) g_prog = prog;
}

void ex_log(const char *fmt, ...) {
    char msg[2048], line[2200], ts[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' '; /* one line per message */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    int n =
        snprintf(line, sizeof line, "%s.%03ldZ %s: %s\n", ts, now.tv_nsec / 1000000, g_prog, msg);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    pthread_mutex_lock(&g_log_mu);
    fwrite(line, 1, len, stderr);
    fflush(stderr);
    pthread_mutex_unlock(&g_log_mu);
}

void ex_ferry_log(int level, const char *message, void *userdata) {
    const char *tag = userdata ? (const char *)userdata : NULL;
    const char *lv = level >= FERRY_LOG_ERROR ? "ERROR " : level == FERRY_LOG_WARN ? "WARN " : "";
    if (level < FERRY_LOG_INFO) return;
    if (tag)
        ex_log("%s[%s] %s", lv, tag, message);
    else
        ex_log("%s%s", lv, message);
}

/* ---- option values ------------------------------------------------------------------- */

const char *ex_opt(const char *flag, const char *env, const char *dflt) {
    if (flag) return flag;
    const char *v = env ? getenv(env) : NULL;
    return v && *v ? v : dflt;
}

int ex_parse_long(const char *s, long min, long max, const char *what, long *out, char *err,
                  size_t cap) {
    char *end = NULL;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || errno || *end || v < min || v > max) {
        snprintf(err, cap, "%s: expected a whole number from %ld to %ld", what, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int ex_parse_rate(const char *s, const char *what, double *out, char *err, size_t cap) {
    char *end = NULL;
    errno = 0;
    double v = s && *s ? strtod(s, &end) : -1;
    if (!s || !*s || errno || *end || !(v >= 0.0 && v <= 1.0)) {
        snprintf(err, cap, "%s: expected a probability from 0 to 1", what);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- PostgreSQL ---------------------------------------------------------------------- */

const char *ex_pg_sqlstate(const PGresult *res) {
    const char *s = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return s ? s : "";
}

/* "SQLSTATE: primary message" of a failed result, or libpq's own text. */
static void pg_error_text(PGconn *c, const PGresult *res, char *err, size_t cap) {
    const char *st = ex_pg_sqlstate(res);
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg) msg = PQerrorMessage(c);
    snprintf(err, cap, "%s%s%s", st, *st ? ": " : "", msg && *msg ? msg : "connection lost");
    for (char *p = err; *p; p++)
        if (*p == '\n') *p = ' ';
    size_t n = strlen(err);
    while (n && err[n - 1] == ' ')
        err[--n] = '\0';
}

/* Client deadline of one statement (ms): the largest statement_timeout asked of
 * ex_pg_connect, plus 2 s for the answer to come back. */
static atomic_int g_pg_deadline_ms = 12000;

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

PGresult *ex_pg_exec_params(PGconn *c, const char *sql, int nparams, const Oid *types,
                            const char *const *params, const int *lengths, const int *formats,
                            int result_format) {
    if (!PQsendQueryParams(c, sql, nparams, types, params, lengths, formats, result_format))
        return NULL; /* PQerrorMessage says why; the caller reads it as a failed result */
    int limit = atomic_load(&g_pg_deadline_ms);
    long long deadline = mono_ms() + limit;
    int sock = PQsocket(c), timed_out = 0;
    for (;;) {
        int flush = PQflush(c); /* 1: more to send (a large statement) */
        if (flush < 0) break;
        if (flush == 0 && !PQisBusy(c)) break;
        long long left = deadline - mono_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = sock, .events = (short)(POLLIN | (flush ? POLLOUT : 0))};
        int n = poll(&p, 1, left > 1000 ? 1000 : (int)left);
        if (n < 0 && errno != EINTR) break;
        if (n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(c)) break;
    }
    if (timed_out) {
        /* libpq offers no way to abandon a statement on a connection; shutting its socket
         * down makes the next read fail, which marks the connection broken */
        ex_log("PostgreSQL gave no answer within %d ms: closing that connection", limit);
        shutdown(sock, SHUT_RDWR);
    }
    PGresult *last = NULL, *r;
    while ((r = PQgetResult(c)) != NULL) { /* as PQexecParams: the last result counts */
        PQclear(last);
        last = r;
        if (PQstatus(c) == CONNECTION_BAD && PQresultStatus(r) == PGRES_FATAL_ERROR) break;
    }
    return last;
}

long ex_pg_exec(PGconn *c, const char *sql, int nparams, const char *const *params, char *err,
                size_t cap) {
    PGresult *r = ex_pg_exec_params(c, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        pg_error_text(c, r, err, cap);
        PQclear(r);
        return -1;
    }
    const char *n = PQcmdTuples(r);
    long rows = n && *n ? atol(n) : 0;
    PQclear(r);
    return rows;
}

PGconn *ex_pg_connect(const char *url, const char *schema, int timeout_ms, int statement_timeout_ms,
                      char *err, size_t cap) {
    ferry_error fe = {0};
    if (ferry_outbox_database_url_check(url, &fe) != 0) {
        snprintf(err, cap, "database URL: %s", fe.message);
        return NULL;
    }
    char tmo[16];
    snprintf(tmo, sizeof tmo, "%d", ((timeout_ms > 0 ? timeout_ms : 5000) + 999) / 1000);
    /* keepalives and tcp_user_timeout: a server the network lost is noticed in seconds, not
     * after the kernel's two hours (a stopped one is ex_pg_exec_params' deadline's job) */
    const char *keys[] = {"dbname",           "connect_timeout",  "application_name",
                          "keepalives",       "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", NULL};
    const char *vals[] = {url ? url : "", tmo, "ferry-example", "1", "10", "5", "3", "20000", NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    char shown[256];
    ferry_outbox_database_url_display(url, shown, sizeof shown);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", c ? PQerrorMessage(c) : "out of memory");
        for (char *p = msg; *p; p++)
            if (*p == '\n') *p = ' ';
        ferry_outbox_database_url_mask(url, msg);
        snprintf(err, cap, "cannot connect to PostgreSQL at %s: %s", shown, msg);
        PQfinish(c);
        return NULL;
    }
    char st[32];
    int stmt_ms = statement_timeout_ms > 0 ? statement_timeout_ms : 10000;
    snprintf(st, sizeof st, "%d", stmt_ms);
    for (int cur = atomic_load(&g_pg_deadline_ms);
         stmt_ms + 2000 > cur &&
         !atomic_compare_exchange_weak(&g_pg_deadline_ms, &cur, stmt_ms + 2000);)
        ;
    const char *p1[] = {schema && *schema ? schema : "public"};
    const char *p2[] = {st};
    char e[512];
    /* set_config quotes nothing: the schema goes through quote_ident on the server */
    if (ex_pg_exec(c, "SELECT set_config('search_path', quote_ident($1), false)", 1, p1, e,
                   sizeof e) < 0 ||
        ex_pg_exec(c, "SELECT set_config('statement_timeout', $1, false)", 1, p2, e, sizeof e) <
            0) {
        ferry_outbox_database_url_mask(url, e);
        snprintf(err, cap, "PostgreSQL at %s: session setup: %s", shown, e);
        PQfinish(c);
        return NULL;
    }
    return c;
}

int ex_schema_ensure(PGconn *c, const char *schema, const char *app, const char *sql, char *err,
                     size_t cap) {
    if (!schema || !*schema) schema = "public";
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = schema;
    ferry_error fe = {0};
    int version = 0;
    if (ferry_outbox_schema_applied(c, &oo, &version, &fe) != 0) {
        snprintf(err, cap, "cannot read ferry's schema version: %s", fe.message);
        return -1;
    }
    if (version < ferry_outbox_schema_version()) {
        snprintf(err, cap,
                 "schema '%s' has ferry's tables at version %d, this build needs %d: run "
                 "`ferry migrate --schema %s` (with the same database URL) first",
                 schema, version, ferry_outbox_schema_version(), schema);
        return -1;
    }
    char e[512], lock[160];
    snprintf(lock, sizeof lock, "ferry-examples.%s.schema", app);
    const char *p[] = {lock};
    if (ex_pg_exec(c, "BEGIN", 0, NULL, e, sizeof e) < 0 ||
        ex_pg_exec(c, "SET LOCAL client_min_messages = warning", 0, NULL, e, sizeof e) < 0 ||
        ex_pg_exec(c, "SELECT pg_advisory_xact_lock(hashtext($1))", 1, p, e, sizeof e) < 0) {
        snprintf(err, cap, "%s schema: %s", app, e);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    PGresult *r = PQexec(c, sql); /* several statements: the simple query protocol */
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        pg_error_text(c, r, e, sizeof e);
        snprintf(err, cap, "%s schema (its SQL file): %s", app, e);
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    PQclear(r);
    if (ex_pg_exec(c, "COMMIT", 0, NULL, e, sizeof e) < 0) {
        snprintf(err, cap, "%s schema: %s", app, e);
        return -1;
    }
    return 0;
}

struct ex_pgpool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *url, *schema;
    int size, open, statement_timeout_ms;
    int nidle;
    PGconn **idle;
};

ex_pgpool *ex_pgpool_new(const char *url, const char *schema, int size, int statement_timeout_ms) {
    if (size < 1) size = 1;
    ex_pgpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->url = strdup(url ? url : "");
    p->schema = strdup(schema && *schema ? schema : "public");
    p->idle = calloc((size_t)size, sizeof *p->idle);
    if (!p->url || !p->schema || !p->idle) {
        free(p->url);
        free(p->schema);
        free(p->idle);
        free(p);
        return NULL;
    }
    p->size = size;
    p->statement_timeout_ms = statement_timeout_ms;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    return p;
}

PGconn *ex_pgpool_get(ex_pgpool *p, int wait_ms, char *err, size_t cap) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    long long ns = dl.tv_nsec + (long long)(wait_ms > 0 ? wait_ms : 0) * 1000000LL;
    dl.tv_sec += ns / 1000000000LL;
    dl.tv_nsec = ns % 1000000000LL;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->nidle > 0) {
            PGconn *c = p->idle[--p->nidle];
            pthread_mutex_unlock(&p->mu);
            if (PQstatus(c) == CONNECTION_OK) return c;
            PQfinish(c); /* broken while idle: open another in its place */
            pthread_mutex_lock(&p->mu);
            p->open--;
            continue;
        }
        if (p->open < p->size) {
            p->open++;
            pthread_mutex_unlock(&p->mu);
            PGconn *c = ex_pg_connect(p->url, p->schema, 5000, p->statement_timeout_ms, err, cap);
            if (!c) {
                pthread_mutex_lock(&p->mu);
                p->open--;
                pthread_cond_signal(&p->cv);
                pthread_mutex_unlock(&p->mu);
            }
            return c;
        }
        if (pthread_cond_timedwait(&p->cv, &p->mu, &dl) == ETIMEDOUT && p->nidle == 0 &&
            p->open >= p->size) {
            pthread_mutex_unlock(&p->mu);
            snprintf(err, cap, "no database connection free within %d ms (pool of %d)", wait_ms,
                     p->size);
            return NULL;
        }
    }
}

void ex_pgpool_put(ex_pgpool *p, PGconn *c) {
    if (!p || !c) return;
    if (PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) != PQTRANS_IDLE) {
        PGresult *r = ex_pg_exec_params(c, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0);
        PQclear(r);
    }
    pthread_mutex_lock(&p->mu);
    if (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) {
        PQfinish(c);
        p->open--;
    } else {
        p->idle[p->nidle++] = c;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void ex_pgpool_free(ex_pgpool *p) {
    if (!p) return;
    for (int i = 0; i < p->nidle; i++)
        PQfinish(p->idle[i]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->idle);
    free(p->url);
    free(p->schema);
    free(p);
}

/* ---- trace ids ----------------------------------------------------------------------- */

static int all_zero(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != '0') return 0;
    return 1;
}

void ex_traceparent_new(char out[EX_TRACEPARENT_LEN + 1]) {
    unsigned char b[24];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) { /* never in practice: a clock-based id */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long x =
            (unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20);
        for (size_t i = 0; i < sizeof b; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            b[i] = (unsigned char)(x >> 56);
        }
    }
    b[0] |= 1;  /* a trace id of all zeros is invalid */
    b[16] |= 1; /* so is a parent id of all zeros */
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    memcpy(p, "00-", 3);
    p += 3;
    for (int i = 0; i < 16; i++) {
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    *p++ = '-';
    for (int i = 16; i < 24; i++) {
        *p++ = hex[b[i] >> 4];
        *p++ = hex[b[i] & 15];
    }
    memcpy(p, "-01", 4);
}

int ex_traceparent_valid(const char *s) {
    if (!s || strlen(s) != EX_TRACEPARENT_LEN) return 0;
    if (s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' || s[52] != '-') return 0;
    for (int i = 0; i < EX_TRACEPARENT_LEN; i++) {
        if (i == 2 || i == 35 || i == 52) continue;
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return 0;
    }
    return !all_zero(s + 3, 32) && !all_zero(s + 36, 16);
}
