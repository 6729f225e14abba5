/* inbox_bench.c - what an idempotent consumer's inbox costs an effect: the same one-row
 * INSERT committed N times as a bare transaction (BEGIN; INSERT; COMMIT) and through
 * ferry_inbox_run (BEGIN; claim; INSERT; COMMIT) with a fresh message id each time,
 * alternating in one run on one connection. A third side re-delivers the ids the inbox run
 * just processed (the duplicate path: BEGIN; claim finds the marker; ROLLBACK). Prints
 * each run and the medians, and the ratios inbox/bare and duplicate/bare. Public API
 * only.
 *
 *   inbox_bench DATABASE_URL [OPS [ROUNDS]]   (defaults 5000 3)
 *
 * It owns the schema "bench_inbox": migrates it (ferry_outbox_migrate), creates
 * bench_inbox.effects, and empties both tables before each run. The URL is shown only
 * through ferry_outbox_database_url_display, never its password.
 *
 * Exit status: 0, 1 when a run or the set-up failed, 2 for bad arguments. */
#include <ferry/ferry.h>

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SCHEMA "bench_inbox"
#define CONSUMER "bench.effect"
#define OPS_MAX 10000000L
#define ROUNDS_MAX 50
#define WARMUP_MAX 500L
#define STATEMENT_TIMEOUT_MS 30000 /* no statement here should take a fraction of it */

enum side { SIDE_BARE, SIDE_INBOX, SIDE_DUP, SIDES };
static const char *const SIDE_NAME[SIDES] = {"bare", "inbox", "duplicate"};

static const char *db_url; /* for masking libpq's messages */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One line on stderr: `what`, then libpq's message with newlines flattened and any password
 * of the URL masked. */
static int fail_pg(const char *what, const char *pgmsg) {
    char line[1024];
    snprintf(line, sizeof line, "%s", pgmsg && *pgmsg ? pgmsg : "(no message)");
    for (char *c = line; *c; c++)
        if (*c == '\n' || *c == '\t') *c = ' ';
    for (size_t n = strlen(line); n > 0 && line[n - 1] == ' ';)
        line[--n] = '\0';
    ferry_outbox_database_url_mask(db_url, line);
    fprintf(stderr, "inbox_bench: %s: %s\n", what, line);
    return -1;
}

static int fail(const char *what) {
    fprintf(stderr, "inbox_bench: %s\n", what);
    return -1;
}

/* A statement without a result set; -1 (reported) unless it succeeded. */
static int exec_ok(PGconn *c, const char *sql) {
    PGresult *r = PQexec(c, sql);
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) fail_pg(sql, r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* SELECT count(*) FROM table into *n. */
static int count_rows(PGconn *c, const char *table, long *n) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM " SCHEMA ".%s", table);
    PGresult *r = PQexec(c, sql);
    int ok = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
    if (ok)
        *n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else
        fail_pg(sql, r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* The effect both sides commit: one row into bench_inbox.effects. userdata: a long counter
 * for the row's value. Runs inside the caller's transaction and does not end it. */
static ferry_outcome effect_insert(PGconn *c, void *userdata) {
    long *seq = userdata;
    char v[24];
    snprintf(v, sizeof v, "%ld", (*seq)++ % 1000000);
    const char *params[] = {v};
    PGresult *r = PQexecParams(c, "INSERT INTO " SCHEMA ".effects (v) VALUES ($1::int)", 1, NULL,
                               params, NULL, NULL, 0);
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) fail_pg("effect INSERT", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    return ok ? FERRY_COMPLETED : FERRY_FAILED;
}

/* Side A: BEGIN; effect; COMMIT. The same checks ferry_inbox_run makes on its own
 * statements, so neither side skips work the other does. */
static int bare_once(PGconn *c, long *seq) {
    if (exec_ok(c, "BEGIN")) return -1;
    if (effect_insert(c, seq) != FERRY_COMPLETED || PQtransactionStatus(c) != PQTRANS_INTRANS) {
        PQclear(PQexec(c, "ROLLBACK"));
        return fail("bare: the effect failed");
    }
    PGresult *r = PQexec(c, "COMMIT");
    int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK && !strcmp(PQcmdStatus(r), "COMMIT");
    if (!ok) fail_pg("bare COMMIT", r ? PQresultErrorMessage(r) : PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* Side B (want_dup 0) and the duplicate side (want_dup 1): ferry_inbox_run on ids[i]. */
static int inbox_once(PGconn *c, const char *id, int want_dup, long *seq) {
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = SCHEMA;
    ferry_inbox_result res;
    ferry_outcome oc = ferry_inbox_run(c, &o, CONSUMER, id, effect_insert, seq, &res);
    if (oc != FERRY_COMPLETED) {
        /* res.reason may quote a value of a statement; ours hold only counters */
        fprintf(stderr, "inbox_bench: ferry_inbox_run: outcome %d (SQLSTATE %s): %s\n", (int)oc,
                res.sqlstate[0] ? res.sqlstate : "none", res.reason);
        return -1;
    }
    if (res.duplicate != want_dup)
        return fail(want_dup ? "ferry_inbox_run ran the effect for an id already processed"
                             : "ferry_inbox_run took a fresh id for a duplicate");
    return 0;
}

/* Empty the tables (between runs, so their sizes do not drift). */
static int truncate_all(PGconn *c) {
    return exec_ok(c, "TRUNCATE " SCHEMA ".effects, " SCHEMA ".processed_messages");
}

/* Fresh UUIDv7 ids for one inbox run, made before the clock starts. */
static int make_ids(char (*ids)[FERRY_UUID_STRLEN + 1], long n) {
    for (long i = 0; i < n; i++) {
        int rc = ferry_uuid7(ids[i]);
        if (rc) {
            fprintf(stderr, "inbox_bench: ferry_uuid7: %s\n", ferry_strerror(rc));
            return -1;
        }
    }
    return 0;
}

/* `n` operations of `side`; ids: the n ids (fresh for SIDE_INBOX, processed for SIDE_DUP).
 * Returns ops/s, or -1 (reported). */
static double timed(PGconn *c, enum side side, char (*ids)[FERRY_UUID_STRLEN + 1], long n,
                    long *seq) {
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        int rc =
            side == SIDE_BARE ? bare_once(c, seq) : inbox_once(c, ids[i], side == SIDE_DUP, seq);
        if (rc) return -1;
    }
    double t1 = now_s();
    return (double)n / (t1 - t0);
}

/* What a run must leave: `effects` rows in effects, `markers` in processed_messages. */
static int check_rows(PGconn *c, const char *side, long effects, long markers) {
    long e = -1, m = -1;
    if (count_rows(c, "effects", &e) || count_rows(c, "processed_messages", &m)) return -1;
    if (e == effects && m == markers) return 0;
    fprintf(stderr,
            "inbox_bench: after the %s run: %ld effects and %ld markers, expected %ld and %ld\n",
            side, e, m, effects, markers);
    return -1;
}

/* One round: bare and inbox in the order `inbox_first` says, the duplicate run right after
 * the inbox run (it re-delivers that run's ids). rate[SIDES] gets ops/s. */
static int round_run(PGconn *c, long n, int inbox_first, char (*ids)[FERRY_UUID_STRLEN + 1],
                     double rate[SIDES], long *seq) {
    for (int k = 0; k < 2; k++) {
        int inbox = (k == 0) == (inbox_first != 0);
        if (truncate_all(c)) return -1;
        if (!inbox) {
            if ((rate[SIDE_BARE] = timed(c, SIDE_BARE, ids, n, seq)) < 0 ||
                check_rows(c, "bare", n, 0))
                return -1;
            continue;
        }
        if (make_ids(ids, n)) return -1;
        if ((rate[SIDE_INBOX] = timed(c, SIDE_INBOX, ids, n, seq)) < 0 ||
            check_rows(c, "inbox", n, n))
            return -1;
        if ((rate[SIDE_DUP] = timed(c, SIDE_DUP, ids, n, seq)) < 0 ||
            check_rows(c, "duplicate", n, n))
            return -1;
    }
    return 0;
}

static PGconn *connect_db(const char *url) {
    char user_timeout[24];
    snprintf(user_timeout, sizeof user_timeout, "%d", STATEMENT_TIMEOUT_MS + 2000);
    /* a server that stops answering ends the connection instead of hanging the benchmark */
    const char *keys[] = {"connect_timeout", "application_name", "tcp_user_timeout",
                          "dbname",          "client_encoding",  NULL};
    const char *vals[] = {"10", "inbox_bench", user_timeout, url, "UTF8", NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c) {
        fail("connect: out of memory");
        return NULL;
    }
    if (PQstatus(c) != CONNECTION_OK) {
        fail_pg("connect", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "SET statement_timeout = %d", STATEMENT_TIMEOUT_MS);
    if (exec_ok(c, sql) || exec_ok(c, "SET client_min_messages = warning")) {
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int setup_schema(PGconn *c) {
    ferry_migrate_options mo;
    ferry_migrate_options_init(&mo);
    mo.schema = SCHEMA;
    ferry_error e = {0};
    if (ferry_outbox_migrate(c, &mo, NULL, &e)) return fail_pg("migrate " SCHEMA, e.message);
    return exec_ok(c, "CREATE TABLE IF NOT EXISTS " SCHEMA
                      ".effects (id bigserial PRIMARY KEY, v int NOT NULL)");
}

/* Untimed: a few hundred of each kind, so the first round does not pay for the session's
 * caches and the tables' first pages. */
static int warm_up(PGconn *c, long n, char (*ids)[FERRY_UUID_STRLEN + 1], long *seq) {
    long w = n < WARMUP_MAX ? n : WARMUP_MAX;
    double ignored[SIDES];
    return round_run(c, w, 0, ids, ignored, seq);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4 || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: inbox_bench DATABASE_URL [OPS [ROUNDS]]   (defaults 5000 3)\n");
        return 2;
    }
    long ops = 5000, rounds = 3;
    if ((argc > 2 && parse_long(argv[2], 1, OPS_MAX, &ops)) ||
        (argc > 3 && parse_long(argv[3], 1, ROUNDS_MAX, &rounds))) {
        fprintf(stderr, "inbox_bench: OPS 1..%ld, ROUNDS 1..%d\n", OPS_MAX, ROUNDS_MAX);
        return 2;
    }
    db_url = argv[1];
    char shown[256];
    ferry_outbox_database_url_display(db_url, shown, sizeof shown);

    double *rate[SIDES];
    char(*ids)[FERRY_UUID_STRLEN + 1] = calloc((size_t)ops, sizeof *ids);
    int bad = !ids;
    for (int s = 0; s < SIDES; s++)
        bad |= !(rate[s] = calloc((size_t)rounds, sizeof *rate[s]));
    if (bad) {
        fail("out of memory");
        return 1;
    }
    PGconn *c = connect_db(db_url);
    long seq = 0;
    if (!c || setup_schema(c) || warm_up(c, ops, ids, &seq)) bad = 1;
    if (!bad)
        printf("inbox_bench: %ld ops per run, %ld rounds, database %s, schema " SCHEMA
               ", consumer " CONSUMER "\n",
               ops, rounds, shown);
    for (long r = 0; !bad && r < rounds; r++) {
        double v[SIDES] = {0};
        int inbox_first = (int)(r % 2); /* alternate which goes first */
        if (round_run(c, ops, inbox_first, ids, v, &seq)) {
            bad = 1;
            break;
        }
        static const enum side order[2][SIDES] = {{SIDE_BARE, SIDE_INBOX, SIDE_DUP},
                                                  {SIDE_INBOX, SIDE_DUP, SIDE_BARE}};
        for (int k = 0; k < SIDES; k++) {
            enum side s = order[inbox_first][k];
            rate[s][r] = v[s];
            printf("  round %ld %-9s %10.0f ops/s\n", r + 1, SIDE_NAME[s], v[s]);
        }
        fflush(stdout);
    }
    if (!bad) {
        double med[SIDES];
        for (int s = 0; s < SIDES; s++) {
            qsort(rate[s], (size_t)rounds, sizeof *rate[s], cmp);
            med[s] = rate[s][rounds / 2];
        }
        double mb = med[SIDE_BARE];
        printf("median: bare %.0f ops/s, inbox %.0f ops/s, ratio inbox/bare %.3f\n", mb,
               med[SIDE_INBOX], mb > 0 ? med[SIDE_INBOX] / mb : 0);
        printf("median: bare %.0f ops/s, duplicate %.0f ops/s, ratio duplicate/bare %.3f\n", mb,
               med[SIDE_DUP], mb > 0 ? med[SIDE_DUP] / mb : 0);
    }
    if (c && !bad && truncate_all(c)) bad = 1;
    PQfinish(c);
    for (int s = 0; s < SIDES; s++)
        free(rate[s]);
    free(ids);
    return bad;
}
