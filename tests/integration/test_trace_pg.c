/* test_trace_pg.c - the PostgreSQL side of ferry_trace_get (src/admin/trace.c) against the
 * real server:
 *  - a trace finds an event's dead letter (recorded with the event id as job id);
 *  - every statement ends by its deadline whatever the server does: with the trace's
 *    backend stopped (SIGSTOP) just before its BEGIN, and just before the ROLLBACK that
 *    ends its snapshot, ferry_trace_get returns FERRY_ETIMEDOUT naming the statement
 *    within the deadline (ferry__trace_pg_ms shortens it) instead of hanging;
 *  - migration 010 creates dead_letters (prefix, job_id), applying it again changes
 *    nothing, and the trace's first lookup (prefix, job_id) is planned on it (EXPLAIN). */
#include <signal.h>
#include <stdlib.h>

#include "ferry/trace.h"
#include "support/ob.h"
#include "util/clock.h"

/* src/admin/trace.c's test hooks (tests only) */
extern int ferry__trace_pg_ms;
extern void (*ferry__trace_pg_hook)(PGconn *conn, const char *what);

#define EVENT "0190a5c4-7b1e-7c3d-9f00-00000000f00d"

static PGconn *db;
static const char *schema;
static char prefix[64];
static ferry_redis_options rro;
static char dl_id[40];

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    ferry_dlq_failure f = {.prefix = prefix,
                           .queue = "pay",
                           .job_id = EVENT,
                           .job_name = "capture",
                           .error = "card declined",
                           .attempts_made = 1,
                           .job_timestamp_ms = 1000};
    ob_dlq_record(db, schema, &f, dl_id);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ob_close(db, NULL);
    return 0;
}

static int trace_on(PGconn *conn, ferry_trace **t, ferry_error *e) {
    ferry_trace_options o;
    ferry_trace_options_init(&o);
    o.schema = schema;
    o.redis = &rro;
    o.prefix = prefix;
    return ferry_trace_get(conn, &o, EVENT, t, e);
}

static void test_trace_finds_dead_letter(void **state) {
    (void)state;
    ferry_trace *t = NULL;
    ferry_error e = {0};
    if (trace_on(db, &t, &e)) fail_msg("trace: %s", e.message);
    assert_int_equal(t->ndead_letters, 1);
    assert_string_equal(t->dead_letters[0].id, dl_id);
    assert_null(t->outbox);
    ferry_trace_free(t);
    assert_int_equal(PQtransactionStatus(db), PQTRANS_IDLE); /* the snapshot was ended */
}

/* ---- deadlines ----------------------------------------------------------------------- */

static const char *stop_before; /* the `what` of the statement to stop the backend before */
static volatile pid_t stopped;  /* the backend stopped, 0 when none */

static void stop_hook(PGconn *conn, const char *what) {
    if (stopped || strcmp(what, stop_before)) return;
    pid_t pid = (pid_t)PQbackendPID(conn);
    if (pid <= 0 || kill(pid, SIGSTOP) != 0) fail_msg("cannot stop backend %d", (int)pid);
    stopped = pid;
}

static void resume_backend(void) {
    if (stopped) kill(stopped, SIGCONT);
    stopped = 0;
}

/* Before the fix the trace waited forever on the stopped backend: end the test instead. */
static void on_alarm(int sig) {
    (void)sig;
    if (stopped) kill(stopped, SIGCONT);
    static const char msg[] = "test_trace_pg: the trace did not return by its deadline\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(1);
    _exit(1);
}

static void expect_deadline(const char *before, const char *named) {
    PGconn *c = ob_pg();
    stop_before = before;
    ferry__trace_pg_hook = stop_hook;
    ferry__trace_pg_ms = 500;
    signal(SIGALRM, on_alarm);
    alarm(30);
    ferry_trace *t = NULL;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    int rc = trace_on(c, &t, &e);
    int64_t took = ferry__mono_ms() - t0;
    alarm(0);
    ferry__trace_pg_hook = NULL;
    ferry__trace_pg_ms = 0;
    int was_stopped = stopped != 0;
    resume_backend();
    PQfinish(c); /* a statement is still in flight on it: closed, as the contract says */
    assert_true(was_stopped);
    if (rc != FERRY_ETIMEDOUT) fail_msg("rc %d, want FERRY_ETIMEDOUT: %s", rc, e.message);
    assert_null(t);
    assert_non_null(strstr(e.message, named));
    if (took < 450 || took > 5000)
        fail_msg("returned after %lld ms (deadline 500)", (long long)took);
}

static void test_begin_deadline(void **state) {
    (void)state;
    expect_deadline("trace", "trace: no answer");
}

static void test_rollback_deadline(void **state) {
    (void)state;
    expect_deadline("trace: rollback", "trace: rollback: no answer");
}

/* ---- the (prefix, job_id) index ------------------------------------------------------ */

typedef struct mig {
    char *sql; /* migration 10's text */
} mig;

static void keep_010(int version, const char *name, const char *sql, void *ud) {
    mig *m = ud;
    if (version == 10 && !strcmp(name, "dead_letters_job_id")) m->sql = strdup(sql);
}

static void test_prefix_job_id_index(void **state) {
    (void)state;
    assert_true(ferry_outbox_schema_version() >= 10);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM pg_indexes WHERE schemaname = '%s' AND "
                           "indexname = 'dead_letters_prefix_job_id' AND indexdef LIKE "
                           "'%%(prefix, job_id)'",
                           schema),
                     1);
    /* applying the migrations again applies nothing; the migration's text runs twice */
    ferry_migrate_options mo = {.schema = schema};
    ferry_error e = {0};
    int applied = -1;
    if (ferry_outbox_migrate(db, &mo, &applied, &e)) fail_msg("migrate: %s", e.message);
    assert_int_equal(applied, 0);
    mig m = {0};
    mo.fn = keep_010;
    mo.userdata = &m;
    if (ferry_outbox_migrations_sql(&mo, &e)) fail_msg("migrations sql: %s", e.message);
    assert_non_null(m.sql);
    ob_exec(db, m.sql);
    free(m.sql);
    /* enough rows under many prefixes and job ids that a scan would be the wrong plan */
    PQclear(ob_sql(db,
                   "INSERT INTO %s.dead_letters (prefix, queue, job_name, job_id, data, error, "
                   "attempts_made, job_timestamp) SELECT 'p' || (g %% 50), 'q' || (g %% 7), 'n', "
                   "'j' || g, '{}', 'e', 1, g FROM generate_series(1, 20000) g",
                   schema));
    PQclear(ob_sql(db, "ANALYZE %s.dead_letters", schema));
    PGresult *r = ob_sql(db,
                         "EXPLAIN SELECT d.id FROM %s.dead_letters d WHERE d.prefix = '%s' AND "
                         "d.job_id = '%s'",
                         schema, prefix, EVENT);
    int uses = 0;
    for (int i = 0; i < PQntuples(r); i++)
        uses |= strstr(PQgetvalue(r, i, 0), "dead_letters_prefix_job_id") != NULL;
    if (!uses) {
        for (int i = 0; i < PQntuples(r); i++)
            fprintf(stderr, "%s\n", PQgetvalue(r, i, 0));
        fail_msg("the (prefix, job_id) lookup is not planned on dead_letters_prefix_job_id");
    }
    PQclear(r);
    /* the trace still finds its one dead letter among them */
    ferry_trace *t = NULL;
    if (trace_on(db, &t, &e)) fail_msg("trace: %s", e.message);
    assert_int_equal(t->ndead_letters, 1);
    ferry_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_finds_dead_letter),
        cmocka_unit_test(test_begin_deadline),
        cmocka_unit_test(test_rollback_deadline),
        cmocka_unit_test(test_prefix_job_id_index),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    resume_backend();
    th_tmpdir_remove();
    return th_exit(rc);
}
