/* test_outbox_lanes.c - one `ferry relay` alone on its schema claims the next batch on a
 * second connection while the current batch's jobs are added (relay_batch.c):
 *  - it still adds jobs batch after batch, oldest first: each queue's jobs are in the
 *    outbox's created_at order across many batches;
 *  - rows that cannot become jobs (over the relay's limit or the default sizeLimit) are set
 *    aside in small full batches without stopping it; one transaction's events go out in
 *    id order;
 *  - SIGKILLed mid-run (batches claimed ahead and not committed roll back), a new relay
 *    publishes the rest and every queue holds exactly one job per row. */
#include "support/ob.h"

#define ROWS 20000

/* n rows with created_at one millisecond apart and payload {"n": i}, i = 1..n in order. */
static void insert_ordered(PGconn *db, const char *schema, int n) {
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at) "
                   "SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(), "
                   "jsonb_build_object('n', g), timestamptz '2030-01-01' + g * interval '1 ms' "
                   "FROM generate_series(1, %d) g",
                   schema, n));
}

/* The queue's waiting job ids in the order they were added (LPUSH: oldest last). */
static char **added_order(ferry_conn *r, const char *prefix, const char *queue, size_t *n) {
    redisReply *rep = th_cmd(r, "LRANGE %s:%s:wait 0 -1", prefix, queue);
    assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    *n = rep->elements;
    char **ids = calloc(*n ? *n : 1, sizeof *ids);
    for (size_t i = 0; i < *n; i++)
        ids[*n - 1 - i] = strdup(rep->element[i]->str);
    freeReplyObject(rep);
    return ids;
}

/* Each of the queues holds exactly the rows of `res` (ids in column 0), added in its order. */
static void expect_added_in_order(ferry_conn *r, const char *prefix, const char *const *queues,
                                  int nqueues, PGresult *res) {
    for (int q = 0; q < nqueues; q++) {
        size_t count = 0;
        char **ids = added_order(r, prefix, queues[q], &count);
        if (count != (size_t)PQntuples(res))
            fail_msg("queue %s holds %zu jobs for %d rows", queues[q], count, PQntuples(res));
        for (size_t i = 0; i < count; i++) {
            if (strcmp(ids[i], PQgetvalue(res, (int)i, 0)))
                fail_msg("queue %s: job %zu is %s, the row %zu in order is %s", queues[q], i,
                         ids[i], i, PQgetvalue(res, (int)i, 0));
            free(ids[i]);
        }
        free(ids);
    }
}

/* One test's servers and names. */
typedef struct lt {
    PGconn *db;
    ferry_conn *rds;
    const char *schema;
    char prefix[64];
} lt;

static void lt_init(lt *t) {
    t->db = ob_pg();
    t->rds = th_conn();
    t->schema = ob_schema(t->db);
    snprintf(t->prefix, sizeof t->prefix, "%s", th_prefix());
}

static void lt_fini(lt *t) {
    PQfinish(t->db);
    ferry__conn_close(t->rds);
}

/* Run one relay (extra arguments `args`) until every row is published or set aside, then
 * stop it (which fails the test if the relay died on the way). */
static void lt_drain(lt *t, const char *routes, const char *const *args) {
    ob_relay rl;
    ob_relay_start(&rl, t->schema, t->prefix, routes, args, NULL);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL "
             "AND quarantined_at IS NULL",
             t->schema);
    long long n = 0;
    if (!ob_wait_count(t->db, sql, 0, 1, 60000, &n)) OB_FAIL_LOG(&rl, "%lld rows left", n);
    ob_relay_stop(&rl);
}

/* Rows set aside, tried once, whose last_error contains `reason` (SQL LIKE escaping). */
static long long lt_set_aside(lt *t, const char *reason) {
    return ob_ll(t->db,
                 "SELECT count(*) FROM %s.outbox_events WHERE quarantined_at IS NOT NULL "
                 "AND published_at IS NULL AND attempts = 1 AND last_error LIKE '%%%s%%'",
                 t->schema, reason);
}

/* The `n` published rows, in outbox order (created_at, then id), are exactly the jobs of
 * each queue, added in that order. */
static void lt_expect_published_in_order(lt *t, const char *const *queues, int nqueues,
                                         long long n) {
    PGresult *res = ob_sql(t->db,
                           "SELECT id FROM %s.outbox_events WHERE published_at IS NOT NULL "
                           "ORDER BY created_at, id",
                           t->schema);
    assert_int_equal(PQntuples(res), n);
    expect_added_in_order(t->rds, t->prefix, queues, nqueues, res);
    PQclear(res);
}

static void test_one_relay_keeps_order(void **state) {
    (void)state;
    lt t;
    lt_init(&t);
    insert_ordered(t.db, t.schema, ROWS / 4);
    lt_drain(&t, ob_file("order.routes", "order.placed qa:capture qb:notify\n"),
             (const char *const[]){"--batch", "100", "--retention-days", "0", NULL});
    lt_expect_published_in_order(&t, (const char *const[]){"qa", "qb"}, 2, ROWS / 4);
    lt_fini(&t);
}

/* A row that cannot become a job in the middle of full batches claimed ahead: set aside in
 * its batch's transaction, everything else published in order. */
static void test_quarantine_while_claiming_ahead(void **state) {
    (void)state;
    lt t;
    lt_init(&t);
    insert_ordered(t.db, t.schema, 1000);
    PQclear(ob_sql(t.db,
                   "UPDATE %s.outbox_events SET payload = jsonb_build_object('blob', "
                   "repeat('x', 3000)) WHERE payload->>'n' IN ('150', '777')",
                   t.schema));
    lt_drain(&t, ob_file("q.routes", "order.placed qa:capture qb:notify\n"),
             (const char *const[]){"--batch", "100", "--retention-days", "0", "--max-envelope",
                                   "2048", NULL});
    assert_int_equal(lt_set_aside(&t, "over the relay''s limit of 2048"), 2);
    lt_expect_published_in_order(&t, (const char *const[]){"qa"}, 1, 998);
    lt_fini(&t);
}

/* Many rows set aside in small full batches (every commit then carries the set-aside
 * statements while the next batch is claimed and the relay probes for company): rows over
 * the relay's limit and rows over the default job options' sizeLimit are set aside
 * with their reason, the relay keeps running, everything else is published in order. */
static void test_many_rows_set_aside_in_small_batches(void **state) {
    (void)state;
    lt t;
    lt_init(&t);
    insert_ordered(t.db, t.schema, 3000);
    /* every 37th row over --max-envelope, every 41st (not also a 37th) over sizeLimit only */
    PQclear(ob_sql(t.db,
                   "UPDATE %s.outbox_events SET payload = jsonb_build_object('blob', repeat('x', "
                   "CASE WHEN (payload->>'n')::int %% 37 = 0 THEN 3000 ELSE 1800 END)) "
                   "WHERE (payload->>'n')::int %% 37 = 0 OR (payload->>'n')::int %% 41 = 0",
                   t.schema));
    long long over_relay = 3000 / 37, over_size = 3000 / 41 - 3000 / (37 * 41);
    lt_drain(&t, ob_file("small.routes", "order.placed qa:capture qb:notify\n"),
             (const char *const[]){"--batch", "10", "--retention-days", "0", "--max-envelope",
                                   "2048", "--default-job-options", "{\"sizeLimit\":1500}", NULL});
    assert_int_equal(lt_set_aside(&t, "over the relay''s limit of 2048"), over_relay);
    assert_int_equal(lt_set_aside(&t, "over the default job options'' sizeLimit of 1500"),
                     over_size);
    lt_expect_published_in_order(&t, (const char *const[]){"qa", "qb"}, 2,
                                 3000 - over_relay - over_size);
    lt_fini(&t);
}

/* Events of one transaction share created_at (now() is the transaction's start): they are
 * published in id order (ferry_outbox_append's UUIDv7 ids sort in append order), not in
 * the order their rows happen to lie in the table. */
static void test_one_transaction_in_id_order(void **state) {
    (void)state;
    lt t;
    lt_init(&t);
    /* one statement, so one transaction and one created_at; the rows lie in the table
     * (and in the created_at index's ties) in the reverse of their id order */
    PQclear(ob_sql(t.db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload) "
                   "SELECT ('01900000-0000-7000-8000-' || lpad(g::text, 12, '0'))::uuid, "
                   "'order.placed', gen_random_uuid(), jsonb_build_object('n', g) "
                   "FROM generate_series(20, 1, -1) g",
                   t.schema));
    lt_drain(&t, ob_file("tx.routes", "order.placed qa:capture\n"),
             (const char *const[]){"--batch", "7", "--retention-days", "0", NULL});
    size_t count = 0;
    char **ids = added_order(t.rds, t.prefix, "qa", &count);
    assert_int_equal(count, 20);
    for (size_t i = 0; i < count; i++) {
        char want[64];
        snprintf(want, sizeof want, "01900000-0000-7000-8000-%012d", (int)i + 1);
        if (strcmp(ids[i], want)) fail_msg("job %zu is %s, want %s", i, ids[i], want);
        free(ids[i]);
    }
    free(ids);
    lt_fini(&t);
}

static void test_one_relay_killed(void **state) {
    (void)state;
    PGconn *db = ob_pg();
    ferry_conn *rds = th_conn();
    const char *schema = ob_schema(db);
    char prefix[64], published[256], unpublished[256];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("kill.routes", "order.placed qa:capture qb:notify\n");
    insert_ordered(db, schema, ROWS);
    snprintf(published, sizeof published,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema);
    snprintf(unpublished, sizeof unpublished,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL", schema);
    const char *const args[] = {"--batch", "100", "--retention-days", "0", NULL};
    ob_relay a, b;
    ob_relay_start(&a, schema, prefix, routes, args, NULL);
    long long n = 0;
    if (!ob_wait_count(db, published, ROWS / 4, 0, 60000, &n))
        OB_FAIL_LOG(&a, "only %lld published", n);
    ob_relay_kill(&a);
    long long at_kill = ob_ll(db, "%s", published);
    if (at_kill >= ROWS) fail_msg("the run finished before the kill; nothing was tested");
    ob_relay_start(&b, schema, prefix, routes, args, NULL);
    if (!ob_wait_count(db, unpublished, 0, 1, 60000, &n))
        OB_FAIL_LOG(&b, "%lld rows left unpublished", n);
    ob_relay_stop(&b);
    const char *const queues[] = {"qa", "qb"};
    ob_expect_one_job_per_row(db, schema, rds, prefix, queues, 2, ROWS);
    fprintf(stderr, "# killed the relay with %lld of %d rows published\n", at_kill, ROWS);
    ob_drop_schemas(db);
    PQfinish(db);
    ferry__conn_close(rds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_relay_keeps_order),
        cmocka_unit_test(test_quarantine_while_claiming_ahead),
        cmocka_unit_test(test_many_rows_set_aside_in_small_batches),
        cmocka_unit_test(test_one_transaction_in_id_order),
        cmocka_unit_test(test_one_relay_killed),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return rc;
}
