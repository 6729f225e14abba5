/* test_outbox_limits.c - the relay's limits against real PostgreSQL and Redis, through the
 * real `ferry relay` binary:
 *  - --batch-bytes: payloads of ~100 KiB under a 256 KiB budget go out a few rows per batch
 *    (every batch's payloads within the budget, a row larger than it alone), every row once
 *    and in order, with no poll to help (a batch cut short by the budget counts as full),
 *    also while the relay claims batches ahead on its second connection; bad values are
 *    refused by the CLI and the library;
 *  - idle_session_timeout set on the database (PostgreSQL 14+): the relay's sessions wait
 *    idle without being ended, so no reconnect and no warning. */
#include "support/ob.h"

#define BUDGET 262144 /* --batch-bytes of the budget tests */

static PGconn *db;
static ferry_conn *rds;

OB_GROUP_FIXTURE(&db, &rds)

static int log_contains(const ob_relay *rl, const char *needle) {
    char *log = th_slurp(rl->log);
    int found = strstr(log, needle) != NULL;
    free(log);
    return found;
}

/* ---- the byte budget ------------------------------------------------------------------ */

/* n rows of order.placed, created_at 1 ms apart in row order, payload {"n": g, "blob":
 * "xxx..."} with blob_len (an SQL expression of g) x's, inserted in one statement (one
 * NOTIFY, which the relay has already missed when it starts). */
static void insert_sized(const char *schema, int n, const char *blob_len) {
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at) "
                   "SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(), "
                   "jsonb_build_object('n', g, 'blob', repeat('x', %s)), "
                   "timestamptz '2030-01-01' + g * interval '1 ms' "
                   "FROM generate_series(1, %d) g",
                   schema, blob_len, n));
}

/* Run a relay with `args` (and a poll interval of an hour: nothing but the drain itself
 * moves the rows) until every row is published, then stop it. */
static void drain(ob_relay *rl, const char *schema, const char *prefix, const char *const *args) {
    const char *routes = ob_file("limits.routes", "order.placed qa:capture qb:notify\n");
    const char *argv[16] = {"--poll-interval", "3600000", "--retention-days", "0"};
    int n = 4;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    ob_relay_start(rl, schema, prefix, routes, argv, NULL);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    long long left = -1;
    if (!ob_wait_count(db, sql, 0, 1, 30000, &left))
        OB_FAIL_LOG(rl, "%lld row(s) still unpublished", left);
    ob_relay_stop(rl);
}

/* Both queues hold exactly the outbox's rows, added in created_at, id order (the wait
 * list is LPUSHed: oldest last). */
static void expect_queues_in_order(const char *schema, const char *prefix) {
    PGresult *rows = ob_sql(db, "SELECT id FROM %s.outbox_events ORDER BY created_at, id", schema);
    const char *queues[] = {"qa", "qb"};
    for (int q = 0; q < 2; q++) {
        redisReply *rep = th_cmd(rds, "LRANGE %s:%s:wait 0 -1", prefix, queues[q]);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        if (rep->elements != (size_t)PQntuples(rows))
            fail_msg("queue %s holds %zu jobs for %d rows", queues[q], rep->elements,
                     PQntuples(rows));
        for (size_t i = 0; i < rep->elements; i++) {
            const char *job = rep->element[rep->elements - 1 - i]->str;
            if (strcmp(job, PQgetvalue(rows, (int)i, 0)))
                fail_msg("queue %s: job %zu is %s, row %zu in outbox order is %s", queues[q], i,
                         job, i, PQgetvalue(rows, (int)i, 0));
        }
        freeReplyObject(rep);
    }
    PQclear(rows);
}

/* The batches as the server saw them: each batch is one transaction, so its rows share
 * published_at (now()). Fails when a batch of several rows exceeded the budget; returns
 * the number of batches. */
static long long expect_batches_within_budget(const char *schema) {
    PGresult *r = ob_sql(db,
                         "SELECT count(*), count(*) FILTER (WHERE n > 1 AND bytes > %d), "
                         "coalesce(max(bytes) FILTER (WHERE n > 1), 0) FROM (SELECT "
                         "count(*) AS n, sum(octet_length(payload::text)) AS bytes FROM "
                         "%s.outbox_events GROUP BY published_at) b",
                         BUDGET, schema);
    long long batches = atoll(PQgetvalue(r, 0, 0)), over = atoll(PQgetvalue(r, 0, 1));
    if (over)
        fail_msg("%lld of %lld batches of several rows took more than %d payload bytes "
                 "(largest %s)",
                 over, batches, BUDGET, PQgetvalue(r, 0, 2));
    PQclear(r);
    return batches;
}

/* 20 rows of ~100 KiB and, in the middle, one of ~300 KiB (over the budget): --batch 100
 * would take them all at once; the budget makes it two rows per batch and the big row
 * alone: 11 batches. The first drain finds every row already there and no NOTIFY comes:
 * only counting a cut batch as full gets past the first two rows. */
static void test_batch_bytes_splits_batches(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    insert_sized(schema, 21, "CASE WHEN g = 11 THEN 300000 ELSE 100000 END");
    ob_relay rl;
    drain(&rl, schema, prefix,
          (const char *const[]){"--batch", "100", "--batch-bytes", "262144", NULL});
    expect_queues_in_order(schema, prefix);
    assert_int_equal(expect_batches_within_budget(schema), 11);
    /* the big row went, in a batch of its own */
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.outbox_events WHERE published_at = (SELECT "
                           "published_at FROM %s.outbox_events WHERE payload->>'n' = '11')",
                           schema, schema),
                     1);
    /* the relay's own count agrees */
    if (!log_contains(&rl, "21 row(s) published in 11 batch(es)"))
        OB_FAIL_LOG(&rl, "the relay did not report 21 rows in 11 batches");
    if (!log_contains(&rl, "batch 100 rows / 262144 bytes"))
        OB_FAIL_LOG(&rl, "the start line does not show the budget");
}

/* Runs of small rows (full batches, claimed ahead on the second connection) alternate with
 * runs of big ones (batches cut by the budget, whose left-behind rows stay locked until
 * they commit): the queues still get every row in outbox order. */
static void test_batch_bytes_keeps_order_claiming_ahead(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    insert_sized(schema, 60, "CASE WHEN g % 10 < 5 THEN 10 ELSE 100000 END");
    ob_relay rl;
    drain(&rl, schema, prefix,
          (const char *const[]){"--batch", "5", "--batch-bytes", "262144", NULL});
    expect_queues_in_order(schema, prefix);
    long long batches = expect_batches_within_budget(schema);
    /* 30 big rows, at most two per batch */
    if (batches < 15) fail_msg("only %lld batches", batches);
}

/* Values outside 64 KiB .. 1 GiB: the CLI exits 2 naming the option, the library returns
 * FERRY_EINVAL naming the field; 0 is the default. */
static void test_batch_bytes_out_of_range(void **state) {
    (void)state;
    const char *routes = ob_file("range.routes", "order.placed qa:capture\n");
    const char *bad[] = {"65535", "1073741825", "-1", "16MiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ob_relay rl;
        ob_relay_start(&rl, "public", th_prefix(), routes,
                       (const char *const[]){"--batch-bytes", bad[i], NULL}, NULL);
        assert_int_equal(ob_relay_wait(&rl, 20000), 2);
        char want[160];
        snprintf(want, sizeof want,
                 "ferry relay: --batch-bytes: expected an integer from 65536 to 1073741824, got "
                 "'%s'\n",
                 bad[i]);
        char *log = th_slurp(rl.log);
        /* one timestamped line (every relay line has its time) */
        if (cli_skip_timestamp(log) == log || strcmp(cli_skip_timestamp(log), want))
            OB_FAIL_LOG(&rl, "expected exactly: <time> %s", want);
        free(log);
    }

    ferry_routes *parsed = NULL;
    ferry_error e = {0};
    const char *text = "order.placed qa:capture\n";
    assert_int_equal(ferry_routes_parse(text, strlen(text), NULL, &parsed, &e), 0);
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.routes = parsed;
    size_t values[] = {1, FERRY_RELAY_BATCH_BYTES_MIN - 1, FERRY_RELAY_BATCH_BYTES_MAX + 1};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        ferry_relay *relay = NULL;
        o.batch_bytes = values[i];
        assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
        assert_null(relay);
        if (!strstr(e.message, "batch_bytes")) fail_msg("message: %s", e.message);
    }
    size_t good[] = {0, FERRY_RELAY_BATCH_BYTES_MIN, FERRY_RELAY_BATCH_BYTES_MAX};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ferry_relay *relay = NULL;
        o.batch_bytes = good[i];
        if (ferry_relay_create(&o, &relay, &e)) fail_msg("%zu: %s", good[i], e.message);
        ferry_relay_free(relay);
    }
    ferry_routes_free(parsed);
}

/* ---- idle_session_timeout --------------------------------------------------------------- */

/* A database whose sessions end after 300 ms idle (as a server-wide setting would do):
 * the relay's LISTEN connection and its retention connection (which runs every second)
 * must outlive that many times over, and the relay then publishes on them with nothing to
 * report. */
static void test_idle_session_timeout(void **state) {
    (void)state;
    if (ob_ll(db, "SELECT current_setting('server_version_num')::int") < 140000) {
        th_skip("test_idle_session_timeout: PostgreSQL < 14 has no idle_session_timeout");
    }
    char url[512];
    const char *idle_db = ob_scratch_create(db, "idle", url, sizeof url);
    PGconn *x = ob_connect(url); /* before the setting: this session keeps no timeout */
    ferry_migrate_options mo = {.schema = "obidle"};
    ferry_error e = {0};
    int applied = 0;
    if (ferry_outbox_migrate(x, &mo, &applied, &e)) fail_msg("migrate: %s", e.message);
    PQclear(ob_sql(db, "ALTER DATABASE %s SET idle_session_timeout = '300ms'", idle_db));
    PGconn *probe = ob_connect(url); /* the setting holds for new sessions */
    assert_int_equal(ob_ll(probe, "SELECT (current_setting('idle_session_timeout')::interval = "
                                  "interval '300 ms')::int"),
                     1);
    PQfinish(probe);

    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("idle.routes", "order.placed idleq:handle\n");
    ob_relay rl;
    /* NOTIFY only (poll an hour), retention every second on its own connection */
    ob_relay_start(&rl, "obidle", prefix, routes,
                   (const char *const[]){"--database", url, "--poll-interval", "3600000",
                                         "--retention-interval", "1000", NULL},
                   NULL);
    /* Idle for 1.5 s, five timeouts' worth: the main session idle all along, the retention
     * session alive across idle gaps of a second. Without the relay's SET neither lives
     * past 300 ms idle. */
    char sql[768];
    snprintf(sql, sizeof sql,
             "SELECT (count(*) FILTER (WHERE application_name = 'ferry relay' AND state = "
             "'idle' AND state_change < now() - interval '1500 ms') > 0 AND count(*) FILTER "
             "(WHERE application_name = 'ferry relay retention' AND backend_start < now() - "
             "interval '1500 ms') > 0)::int FROM pg_stat_activity WHERE datname = '%s'",
             idle_db);
    long long ok = 0;
    if (!ob_wait_count(db, sql, 1, 1, 20000, &ok))
        OB_FAIL_LOG(&rl, "the relay's sessions did not stay connected through idle time");
    long long pid = ob_ll(db,
                          "SELECT pid FROM pg_stat_activity WHERE datname = '%s' AND "
                          "application_name = 'ferry relay'",
                          idle_db);

    char id[37];
    ob_append(x, "obidle", "order.placed", "{\"n\":1}", NULL, 1, id);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM obidle.outbox_events WHERE id = '%s' AND published_at IS "
             "NOT NULL",
             id);
    if (!ob_wait_count(x, sql, 1, 1, 10000, &ok)) OB_FAIL_LOG(&rl, "the event was not published");
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:idleq:%s", prefix, id), 1);
    /* published on the session that waited, which never had to be replaced */
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s' AND "
                           "application_name = 'ferry relay' AND pid = %lld",
                           idle_db, pid),
                     1);
    ob_relay_stop(&rl);
    if (log_contains(&rl, ": warning: ") || log_contains(&rl, ": error: "))
        OB_FAIL_LOG(&rl, "the relay reported a problem");
    PQfinish(x);
    ob_scratch_drop(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_bytes_splits_batches),
        cmocka_unit_test(test_batch_bytes_keeps_order_claiming_ahead),
        cmocka_unit_test(test_batch_bytes_out_of_range),
        cmocka_unit_test(test_idle_session_timeout),
    };
    return th_exit(cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown));
}
