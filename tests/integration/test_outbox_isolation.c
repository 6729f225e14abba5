/* test_outbox_isolation.c - a database whose default_transaction_isolation is REPEATABLE READ
 * (ALTER DATABASE ... SET, as an operator may do; a private database dropped at the end),
 * against real PostgreSQL and Redis with the real `ferry` binary:
 *  - four `ferry migrate` started together on a new schema, all made to wait for the
 *    migration lock before the first gets it: one applies, the others find nothing to do
 *    (under REPEATABLE READ their snapshot would predate the first one's commit: "schema
 *    already exists");
 *  - two relays publishing one backlog: both claim rows, every row is published once, and
 *    no claim fails with 40001 (under REPEATABLE READ, FOR UPDATE SKIP LOCKED fails on a row
 *    the other relay published after the claim's snapshot instead of skipping it). */
#include "pg/migrations.h" /* FERRY__LOCK_CLASS_STR */
#include "support/ob.h"

#define MIGRATORS 4
#define ROWS 5000
#define SCHEMA "obiso"

static PGconn *db;
static ferry_conn *rds;

OB_GROUP_FIXTURE(&db, &rds)

/* A new database whose sessions default to REPEATABLE READ; its URL into url. */
static void make_iso_db(char *url, size_t cap) {
    const char *name = ob_scratch_create(db, "iso", url, cap);
    PQclear(ob_sql(db, "ALTER DATABASE %s SET default_transaction_isolation = 'repeatable read'",
                   name));
    PGconn *probe = ob_connect(url); /* the setting holds for new sessions */
    PGresult *r = ob_sql(probe, "SHOW default_transaction_isolation");
    assert_string_equal(PQgetvalue(r, 0, 0), "repeatable read");
    PQclear(r);
    PQfinish(probe);
}

/* ---- ferry migrate ------------------------------------------------------------------- */

static void migrate_all_at_once(PGconn *x, const char *url) {
    /* hold the schema's migration lock, so every migrator starts and then waits for it */
    PQclear(
        ob_sql(x, "SELECT pg_advisory_lock(" FERRY__LOCK_CLASS_STR ", hashtext('" SCHEMA "'))"));
    pid_t pids[MIGRATORS];
    char out[MIGRATORS][300], err[MIGRATORS][300];
    for (int i = 0; i < MIGRATORS; i++) {
        snprintf(out[i], sizeof out[i], "%s/migrate%d.out", th_tmpdir(), i);
        snprintf(err[i], sizeof err[i], "%s/migrate%d.err", th_tmpdir(), i);
        pids[i] = cli_start(CLI_ARGV("migrate", "--schema", SCHEMA, "--database", url), NULL, NULL,
                            out[i], err[i]);
    }
    char sql[400];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND "
             "classid = " FERRY__LOCK_CLASS_STR " AND database = (SELECT oid FROM pg_database "
             "WHERE datname = current_database())");
    long long waiting = 0;
    if (!ob_wait_count(x, sql, MIGRATORS, 1, 60000, &waiting))
        fail_msg("only %lld of %d migrators wait for the lock", waiting, MIGRATORS);
    PQclear(
        ob_sql(x, "SELECT pg_advisory_unlock(" FERRY__LOCK_CLASS_STR ", hashtext('" SCHEMA "'))"));
    int applied = 0, up_to_date = 0;
    for (int i = 0; i < MIGRATORS; i++) {
        int code = cli_wait(pids[i], 60000);
        char *o = th_slurp(out[i]), *e = th_slurp(err[i]);
        if (code != 0) fail_msg("migrator %d: exit %d\nstdout: %s\nstderr: %s", i, code, o, e);
        if (strstr(o, "applied ")) applied++;
        if (strstr(o, "up to date")) up_to_date++;
        free(o);
        free(e);
    }
    assert_int_equal(applied, 1);
    assert_int_equal(up_to_date, MIGRATORS - 1);
    assert_int_equal(ob_ll(x, "SELECT count(*) FROM " SCHEMA ".ferry_schema_migrations"),
                     ferry_outbox_schema_version());
}

/* ---- two relays ------------------------------------------------------------------------ */

/* Rows the relay said it published when it exited. */
static long long published_by(const ob_relay *rl) {
    char *log = th_slurp(rl->log);
    const char *p = strstr(log, "exiting: ");
    long long n = -1;
    if (!p || sscanf(p, "exiting: %lld row(s) published", &n) != 1) {
        ob_relay_dump(rl);
        fail_msg("no exit summary in the relay's log");
    }
    free(log);
    return n;
}

static void relays_share_the_work(PGconn *x, const char *url) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("iso.routes", "order.placed isoq:handle\n");
    const char *args[] = {"--database", url, "--batch", "5", "--retention-days", "0", NULL};
    ob_relay rl[2];
    for (int i = 0; i < 2; i++) {
        ob_relay_start(&rl[i], SCHEMA, prefix, routes, args, NULL);
        if (!ob_relay_wait_log(&rl[i], "ferry relay: info: started", 30000))
            OB_FAIL_LOG(&rl[i], "relay did not start");
    }
    /* one statement: one NOTIFY, which wakes both */
    ob_insert_many(x, SCHEMA, "order.placed", ROWS);
    long long left = -1;
    if (!ob_wait_count(x,
                       "SELECT count(*) FROM " SCHEMA ".outbox_events WHERE published_at IS NULL",
                       0, 1, 120000, &left)) {
        ob_relay_dump(&rl[0]);
        OB_FAIL_LOG(&rl[1], "%lld row(s) still unpublished", left);
    }
    ob_relay_stop(&rl[0]);
    ob_relay_stop(&rl[1]);
    long long a = published_by(&rl[0]), b = published_by(&rl[1]);
    for (int i = 0; i < 2; i++) {
        char *log = th_slurp(rl[i].log);
        int conflict = strstr(log, "40001") != NULL;
        free(log);
        if (conflict) OB_FAIL_LOG(&rl[i], "a claim failed with 40001 (serialization failure)");
    }
    print_message("the relays published %lld and %lld rows\n", a, b);
    if (a <= 0 || b <= 0 || a + b != ROWS)
        fail_msg("relays published %lld and %lld rows of %d: both should share them", a, b, ROWS);
    const char *queues[] = {"isoq"};
    ob_expect_one_job_per_row(x, SCHEMA, rds, prefix, queues, 1, ROWS);
}

static void test_repeatable_read_default(void **state) {
    (void)state;
    char url[512];
    make_iso_db(url, sizeof url);
    PGconn *x = ob_connect(url);
    migrate_all_at_once(x, url);
    relays_share_the_work(x, url);
    PQfinish(x);
    ob_scratch_drop(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeatable_read_default),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
