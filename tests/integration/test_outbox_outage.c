/* test_outbox_outage.c - the relay under outages, with real servers and the real binary:
 *  - Redis down for 10 s: batches roll back, attempts/last_error are recorded, the relay
 *    keeps retrying with capped backoff and drains the backlog when Redis returns;
 *  - Redis hung (SIGSTOP): the command deadline ends the batch, nothing stays locked or
 *    open in a transaction, delivery resumes after SIGCONT;
 *  - PostgreSQL crashed and restarted (immediate mode) mid-run: the relay reconnects and
 *    every row ends up with exactly one job per queue. */
#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;

static int setup(void **state) {
    (void)state;
    ob_open(&db, &rds);
    /* The test's own inserts must survive a server crash (the cluster runs with
     * synchronous_commit=off for speed). */
    ob_exec(db, "SET synchronous_commit = on");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ob_close(db, rds);
    return 0;
}

/* Reopen the test's Redis connection after a restart. */
static void redis_reconnect(void) {
    ferry__conn_close(rds);
    rds = th_conn();
}

typedef struct alive_wait {
    ob_relay *rl;
    long long until;
} alive_wait;

static int exited_or_time_up(void *arg) {
    alive_wait *w = arg;
    return ob_relay_exited(w->rl) || th_mono_ms() >= w->until;
}

static long long count_in_tx(void) {
    return ob_ll(
        db, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ferry relay' "
            "AND state LIKE 'idle in transaction%%' AND now() - state_change > interval '3 s'");
}

static void test_redis_down_10s(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64], sql[512];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("down.routes", "order.placed q1:capture q2:notify\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes,
                   (const char *const[]){"--poll-interval", "200", "--max-backoff", "1000",
                                         "--timeout", "1000", NULL},
                   NULL);
    ob_insert_many(db, schema, "order.placed", 20);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    long long n = 0;
    if (!ob_wait_count(db, sql, 0, 1, 15000, &n))
        OB_FAIL_LOG(&rl, "relay not publishing before the outage");

    th_redis_ctl("stop");
    long long down_at = th_mono_ms();
    ob_insert_many(db, schema, "order.placed", 300);
    PQclear(ob_sql(db,
                   "CREATE TEMP TABLE outage_rows AS SELECT id FROM %s.outbox_events "
                   "WHERE published_at IS NULL",
                   schema));
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM outage_rows"), 300);
    /* failed batches are recorded on the rows, and retried */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE attempts >= 2 AND last_error IS NOT NULL",
             schema);
    if (!ob_wait_count(db, sql, 1, 0, 15000, &n)) OB_FAIL_LOG(&rl, "no failed attempts recorded");
    /* keep Redis down for 10 s in all; the relay must stay up */
    alive_wait aw = {&rl, down_at + 10000};
    th_wait_until(exited_or_time_up, &aw, 20000);
    if (ob_relay_exited(&rl))
        OB_FAIL_LOG(&rl, "relay exited (status %d) while Redis was down", rl.status);
    assert_int_equal(
        ob_ll(db,
              "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL AND id IN "
              "(SELECT id FROM outage_rows)",
              schema),
        0);
    assert_int_equal(count_in_tx(), 0);
    PGresult *r = ob_sql(db, "SELECT max(attempts), min(last_error) FROM %s.outbox_events", schema);
    long long max_attempts = atoll(PQgetvalue(r, 0, 0));
    fprintf(stderr, "# after 10 s down: max attempts %lld, last_error: %s\n", max_attempts,
            PQgetvalue(r, 0, 1));
    assert_true(max_attempts >= 3);
    assert_non_null(strstr(PQgetvalue(r, 0, 1), "queue q"));
    PQclear(r);

    th_redis_ctl("start");
    redis_reconnect();
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    if (!ob_wait_count(db, sql, 0, 1, 30000, &n))
        OB_FAIL_LOG(&rl, "%lld rows left after Redis returned", n);
    ob_relay_stop(&rl);
    /* every row of the outage has its job in both queues (the first 20 were in the Redis
     * that was stopped; this test Redis keeps no data across restarts) */
    r = ob_sql(db, "SELECT id FROM outage_rows");
    for (int i = 0; i < PQntuples(r); i++) {
        assert_int_equal(th_cmd_int(rds, "EXISTS %s:q1:%s", prefix, PQgetvalue(r, i, 0)), 1);
        assert_int_equal(th_cmd_int(rds, "EXISTS %s:q2:%s", prefix, PQgetvalue(r, i, 0)), 1);
    }
    PQclear(r);
    long long survivors = 0;
    r = ob_sql(db, "SELECT id FROM %s.outbox_events WHERE id NOT IN (SELECT id FROM outage_rows)",
               schema);
    for (int i = 0; i < PQntuples(r); i++)
        survivors += th_cmd_int(rds, "EXISTS %s:q1:%s", prefix, PQgetvalue(r, i, 0));
    PQclear(r);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:q1:wait", prefix), 300 + survivors);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:q2:wait", prefix), 300 + survivors);
    ob_exec(db, "DROP TABLE outage_rows");
}

static void test_redis_hung(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64], sql[512];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("hung.routes", "order.placed q1:capture\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes,
                   (const char *const[]){"--poll-interval", "200", "--max-backoff", "500",
                                         "--timeout", "500", NULL},
                   NULL);
    char first[37];
    ob_append(db, schema, "order.placed", "{\"n\":0}", NULL, 1, first);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    long long n = 0;
    if (!ob_wait_count(db, sql, 0, 1, 15000, &n)) OB_FAIL_LOG(&rl, "relay not publishing");
    pid_t rp = th_redis_pid();
    kill(rp, SIGSTOP); /* connections stay open, nothing answers */
    ob_insert_many(db, schema, "order.placed", 10);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE attempts >= 2", schema);
    int recorded = ob_wait_count(db, sql, 10, 0, 20000, &n);
    /* each attempt ended by its deadline: no relay transaction stays open */
    long long open_tx = count_in_tx();
    kill(rp, SIGCONT);
    if (!recorded) OB_FAIL_LOG(&rl, "only %lld rows with attempts >= 2 while Redis hung", n);
    assert_int_equal(open_tx, 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    if (!ob_wait_count(db, sql, 0, 1, 30000, &n))
        OB_FAIL_LOG(&rl, "%lld rows left after SIGCONT", n);
    ob_relay_stop(&rl);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:q1:wait", prefix), 11);
}

/* ---- PostgreSQL restart --------------------------------------------------------------- */

static void pg_restart(void) {
    ob_pg_ctl("restart", "immediate");
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_postgres_restart_mid_run(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64], sql[512];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("pg.routes", "order.placed q1:capture\n");
    ob_insert_many(db, schema, "order.placed", 1000);
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes,
                   (const char *const[]){"--batch", "5", "--poll-interval", "200", "--max-backoff",
                                         "500", NULL},
                   NULL);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema);
    long long n = 0;
    if (!ob_wait_count(db, sql, 100, 0, 20000, &n)) OB_FAIL_LOG(&rl, "relay not publishing");
    pg_restart();
    PQreset(db);
    if (PQstatus(db) != CONNECTION_OK) fail_msg("reconnect: %s", PQerrorMessage(db));
    ob_exec(db, "SET synchronous_commit = on");
    ob_insert_many(db, schema, "order.placed", 1000);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    if (!ob_wait_count(db, sql, 0, 1, 60000, &n))
        OB_FAIL_LOG(&rl, "%lld rows left after the restart", n);
    if (ob_relay_exited(&rl)) OB_FAIL_LOG(&rl, "relay exited");
    char *log = th_slurp(rl.log);
    int reconnected = strstr(log, "database connection restored") != NULL;
    free(log);
    if (!reconnected) OB_FAIL_LOG(&rl, "no reconnect in the relay's log");
    ob_relay_stop(&rl);

    PGresult *res = ob_sql(db, "SELECT id FROM %s.outbox_events ORDER BY id::text", schema);
    assert_int_equal(PQntuples(res), 2000);
    redisReply *rep = th_cmd(rds, "LRANGE %s:q1:wait 0 -1", prefix);
    assert_int_equal(rep->elements, 2000);
    char **ids = calloc(rep->elements, sizeof *ids);
    for (size_t i = 0; i < rep->elements; i++)
        ids[i] = rep->element[i]->str;
    qsort(ids, rep->elements, sizeof *ids, cmp_str);
    for (size_t i = 0; i < rep->elements; i++)
        if (strcmp(ids[i], PQgetvalue(res, (int)i, 0)))
            fail_msg("job %s vs row %s", ids[i], PQgetvalue(res, (int)i, 0));
    free(ids);
    freeReplyObject(rep);
    PQclear(res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redis_down_10s),
        cmocka_unit_test(test_redis_hung),
        cmocka_unit_test(test_postgres_restart_mid_run),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
