/* test_inbox_delivery.c - the inbox under the deliveries at-least-once makes, against a real
 * PostgreSQL: the same message delivered 10 times at once from 10 connections has one effect;
 * a real serialization failure inside the effect and a terminated backend come back as
 * transient outcomes with nothing kept; a process killed (SIGKILL) right after its effect committed, before it
 * could report, leaves a marker, so the redelivery is a duplicate and has no second effect. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ferry/inbox.h"
#include "support/ob.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

#define ID1 "0190b6a2-7c00-7abc-8def-0123456789ab"
#define ID2 "0190b6a2-7c00-7abc-8def-0123456789ac"

static const char *cur_schema;

/* Run SQL that may fail (the failure is what a test looks at): 1 when it succeeded. */
static int try_sql(PGconn *c, const char *fmt, ...) FERRY_PRINTF(2, 3);
static int try_sql(PGconn *c, const char *fmt, ...) {
    char sql[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    PQclear(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

static ferry_outcome effect_insert(PGconn *c, void *ud) {
    (void)ud;
    return try_sql(c, "INSERT INTO %s.effects VALUES (1)", cur_schema) ? FERRY_COMPLETED
                                                                       : FERRY_FAILED;
}

/* ---- 10 concurrent deliveries ------------------------------------------------------------ */

typedef struct deliv {
    pthread_barrier_t *go;
    ferry_outcome oc;
    int duplicate;
} deliv;

static void *deliver(void *arg) {
    deliv *d = arg;
    PGconn *c = ob_pg();
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = cur_schema;
    ferry_inbox_result res;
    pthread_barrier_wait(d->go);
    d->oc = ferry_inbox_run(c, &o, "loyalty", ID1, effect_insert, NULL, &res);
    d->duplicate = res.duplicate;
    PQfinish(c);
    return NULL;
}

static void test_ten_concurrent_deliveries_one_effect(void **state) {
    (void)state;
    cur_schema = ob_schema(db);
    PQclear(ob_sql(db, "CREATE TABLE %s.effects (n int)", cur_schema));
    enum { N = 10 };
    pthread_t th[N];
    deliv d[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
        d[i] = (deliv){.go = &go};
        assert_int_equal(pthread_create(&th[i], NULL, deliver, &d[i]), 0);
    }
    int dups = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(d[i].oc, FERRY_COMPLETED);
        dups += d[i].duplicate;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(dups, N - 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", cur_schema), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", cur_schema), 1);
}

/* ---- SQLSTATE mapping -------------------------------------------------------------------- */

static PGconn *other;

/* Reads the row, lets the other session change it and commit, then writes it: under
 * REPEATABLE READ (the session's default) the write is a serialization failure (40001). */
static ferry_outcome effect_conflicting(PGconn *c, void *ud) {
    (void)ud;
    try_sql(c, "SELECT points FROM %s.acct WHERE id = 1", cur_schema);
    PQclear(ob_sql(other, "UPDATE %s.acct SET points = points + 1 WHERE id = 1", cur_schema));
    /* fails with 40001; the effect, like a careless one, reports success anyway */
    try_sql(c, "UPDATE %s.acct SET points = points + 10 WHERE id = 1", cur_schema);
    return FERRY_COMPLETED;
}

static ferry_outcome effect_killed(PGconn *c, void *ud) {
    (void)ud;
    long long pid = PQbackendPID(c);
    PQclear(ob_sql(other, "SELECT pg_terminate_backend(%lld)", pid));
    effect_insert(c, NULL);
    return FERRY_COMPLETED;
}

static void test_sql_failures_are_transient(void **state) {
    (void)state;
    cur_schema = ob_schema(db);
    PQclear(ob_sql(db, "CREATE TABLE %s.effects (n int)", cur_schema));
    PQclear(ob_sql(db, "CREATE TABLE %s.acct (id int PRIMARY KEY, points int)", cur_schema));
    PQclear(ob_sql(db, "INSERT INTO %s.acct VALUES (1, 0)", cur_schema));
    other = ob_pg();
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = cur_schema;
    ferry_inbox_result res;

    PGconn *c = ob_pg();
    PQclear(ob_sql(c, "SET default_transaction_isolation = 'repeatable read'"));
    ferry_outcome oc = ferry_inbox_run(c, &o, "acct", ID1, effect_conflicting, NULL, &res);
    /* the failure is in the effect's statement: the inbox sees the aborted transaction */
    assert_int_equal(oc, FERRY_FAILED);
    assert_non_null(strstr(res.reason, "aborted"));
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", cur_schema), 0);
    assert_int_equal(ob_ll(db, "SELECT points FROM %s.acct", cur_schema), 1); /* other's only */
    PQfinish(c);

    /* the backend terminated under the effect: the connection is gone */
    c = ob_pg();
    oc = ferry_inbox_run(c, &o, "acct", ID2, effect_killed, NULL, &res);
    assert_int_equal(oc, FERRY_FAILED);
    assert_true(strlen(res.reason) > 0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", cur_schema), 0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", cur_schema), 0);
    PQfinish(c);
    PQfinish(other);
}

/* ---- SIGKILL after the commit --------------------------------------------------------- */

static void test_killed_after_commit_redelivery_is_a_duplicate(void **state) {
    (void)state;
    cur_schema = ob_schema(db);
    PQclear(ob_sql(db, "CREATE TABLE %s.effects (n int)", cur_schema));
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        PGconn *c = ob_pg();
        ferry_inbox_options o;
        ferry_inbox_options_init(&o);
        o.schema = cur_schema;
        ferry_outcome oc = ferry_inbox_run(c, &o, "mailer", ID1, effect_insert, NULL, NULL);
        /* committed: say so, then wait to be killed before "reporting" anything */
        char b = oc == FERRY_COMPLETED ? 'c' : 'x';
        if (write(pfd[1], &b, 1) != 1) _exit(3);
        for (;;)
            pause();
    }
    close(pfd[1]);
    char b = 0;
    assert_int_equal(read(pfd[0], &b, 1), 1);
    close(pfd[0]);
    assert_int_equal(b, 'c');
    kill(pid, SIGKILL);
    int st = 0;
    waitpid(pid, &st, 0);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = cur_schema;
    ferry_inbox_result res;
    assert_int_equal(ferry_inbox_run(db, &o, "mailer", ID1, effect_insert, NULL, &res),
                     FERRY_COMPLETED);
    assert_int_equal(res.duplicate, 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", cur_schema), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ten_concurrent_deliveries_one_effect),
        cmocka_unit_test(test_sql_failures_are_transient),
        cmocka_unit_test(test_killed_after_commit_redelivery_is_a_duplicate),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
