/* test_outbox_retention.c - deleting old published outbox rows: the library call in
 * bounded batches, `ferry outbox cleanup`, and the relay's singleton retention task with
 * two relays running (old published rows go; recent ones and unpublished ones of any age
 * stay; one relay does the work per interval). */
#include "support/ob.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

/* n rows of topic, published `pub_days` ago (-1 = unpublished), created a day earlier. */
static void add_rows(const char *schema, const char *topic, int n, int pub_days) {
    char published[64];
    if (pub_days < 0)
        snprintf(published, sizeof published, "NULL");
    else
        snprintf(published, sizeof published, "now() - interval '%d days'", pub_days);
    PQclear(ob_sql(
        db,
        "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at, published_at) "
        "SELECT gen_random_uuid(), '%s', gen_random_uuid(), '{}', now() - interval '%d days', %s "
        "FROM generate_series(1, %d)",
        schema, topic, (pub_days < 0 ? 9 : pub_days) + 1, published, n));
}

static void test_cleanup_bounded_batches(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    add_rows(schema, "a", 250, 8);
    add_rows(schema, "a", 40, 1);
    add_rows(schema, "a", 30, -1);
    long long deleted = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_outbox_cleanup(db, &(ferry_outbox_options){.schema = schema}, 7 * 86400,
                                          100, 2, &deleted, &e),
                     0);
    assert_int_equal(deleted, 200); /* two statements of 100 */
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema), 120);
    assert_int_equal(ferry_outbox_cleanup(db, &(ferry_outbox_options){.schema = schema}, 7 * 86400,
                                          100, 0, &deleted, &e),
                     0);
    assert_int_equal(deleted, 50);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema), 70);
    assert_int_equal(
        ferry_outbox_cleanup(db, &(ferry_outbox_options){.schema = schema}, -1, 0, 0, &deleted, &e),
        FERRY_EINVAL);
    ob_exec(db, "BEGIN");
    assert_int_equal(
        ferry_outbox_cleanup(db, &(ferry_outbox_options){.schema = schema}, 1, 0, 0, &deleted, &e),
        FERRY_ESTATE);
    ob_exec(db, "ROLLBACK");

    /* the CLI */
    add_rows(schema, "a", 5, 30);
    char cmd[1024], out[300];
    snprintf(out, sizeof out, "%s/cleanup.out", th_tmpdir());
    snprintf(cmd, sizeof cmd,
             "'%s' outbox cleanup --older-than-days 7 --schema %s --database '%s' >'%s' 2>&1",
             getenv("FERRY_BIN"), schema, th_env_require("DATABASE_URL"), out);
    int rc = system(cmd);
    char *text = th_slurp(out);
    if (rc != 0 || !strstr(text, "deleted 5 published row(s)"))
        fail_msg("cleanup: %d %s", rc, text);
    free(text);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema), 70);
}

/* A row whose created_at is in the future (an application's clock ahead) is deleted once it
 * was published longer ago than the retention, like any other; ferry outbox status gives an
 * unpublished one the age 0, not a negative one. */
static void test_created_in_the_future(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at, "
                   "published_at) VALUES (gen_random_uuid(), 'a', gen_random_uuid(), '{}', now() + "
                   "interval '1 day', now() - interval '2 days'), (gen_random_uuid(), 'a', "
                   "gen_random_uuid(), '{}', now() + interval '1 hour', NULL)",
                   schema));
    long long deleted = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_outbox_cleanup(db, &(ferry_outbox_options){.schema = schema}, 86400, 100,
                                          0, &deleted, &e),
                     0);
    assert_int_equal(deleted, 1);
    ferry_outbox_status *st = NULL;
    assert_int_equal(
        ferry_outbox_status_get(db, &(ferry_outbox_options){.schema = schema}, NULL, &st, &e), 0);
    assert_int_equal(st->unpublished, 1);
    assert_true(st->oldest_age_s == 0);
    assert_true(st->ntopics == 1 && st->topics[0].oldest_age_s == 0);
    ferry_outbox_status_free(st);
}

/* Status ages are the oldest unpublished row's, overall and per topic: rows created 1 h and
 * 1 min ago in topic a, 2 h ago (published, so not counted) and 10 min ago in topic b. */
static void test_status_oldest_age(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at, "
                   "published_at) VALUES "
                   "(gen_random_uuid(), 'a', gen_random_uuid(), '{}', now() - interval '1 hour', "
                   "NULL), "
                   "(gen_random_uuid(), 'a', gen_random_uuid(), '{}', now() - interval '1 minute', "
                   "NULL), "
                   "(gen_random_uuid(), 'b', gen_random_uuid(), '{}', now() - interval '2 hours', "
                   "now()), "
                   "(gen_random_uuid(), 'b', gen_random_uuid(), '{}', now() - interval "
                   "'10 minutes', NULL)",
                   schema));
    ferry_outbox_status *st = NULL;
    ferry_error e = {0};
    assert_int_equal(
        ferry_outbox_status_get(db, &(ferry_outbox_options){.schema = schema}, NULL, &st, &e), 0);
    assert_int_equal(st->unpublished, 3);
    /* (slack for a slow box between the INSERT and the status query) */
    if (st->oldest_age_s < 3600 || st->oldest_age_s > 3600 + 120)
        fail_msg("oldest unpublished age %.1f s, want about 3600", st->oldest_age_s);
    assert_int_equal(st->ntopics, 2);
    for (size_t i = 0; i < st->ntopics; i++) {
        double want = !strcmp(st->topics[i].topic, "a") ? 3600 : 600;
        if (st->topics[i].oldest_age_s < want || st->topics[i].oldest_age_s > want + 120)
            fail_msg("topic %s: oldest age %.1f s, want about %.0f", st->topics[i].topic,
                     st->topics[i].oldest_age_s, want);
    }
    ferry_outbox_status_free(st);
}

static int sum_deleted(const char *path) {
    char *log = th_slurp(path);
    int total = 0;
    for (const char *p = log; (p = strstr(p, "retention: deleted ")); p++)
        total += atoi(p + strlen("retention: deleted "));
    free(log);
    return total;
}

static void test_relay_retention_singleton(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    add_rows(schema, "order.placed", 2500, 8);   /* old, published: go */
    add_rows(schema, "order.placed", 300, 2);    /* recent, published: stay */
    add_rows(schema, "unrouted.topic", 200, -1); /* unpublished, 10 days old: stay */
    const char *routes = ob_file("ret.routes", "order.placed q:job\n");
    const char *const args[] = {
        "--retention-days", "7", "--retention-interval", "1000", "--retention-batch", "100", NULL};
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ob_relay a, b;
    ob_relay_start(&a, schema, prefix, routes, args, NULL);
    ob_relay_start(&b, schema, prefix, routes, args, NULL);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at < now() - interval '7 days'",
             schema);
    long long n = 0;
    if (!ob_wait_count(db, sql, 0, 1, 30000, &n)) OB_FAIL_LOG(&a, "%lld old rows left", n);
    /* let a couple more intervals pass: later runs find nothing, and nothing else goes */
    PGresult *r = ob_sql(
        db, "SELECT last_run_at FROM %s.ferry_tasks WHERE name = 'outbox-retention'", schema);
    assert_int_equal(PQntuples(r), 1);
    PQclear(r);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.ferry_tasks WHERE name = 'outbox-retention' AND last_run_at "
             "> now() - "
             "interval '1 s' AND last_result = 'deleted 0 rows'",
             schema);
    if (!ob_wait_count(db, sql, 1, 1, 15000, &n)) OB_FAIL_LOG(&a, "no later (empty) retention run");
    ob_relay_stop(&a);
    ob_relay_stop(&b);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.outbox_events WHERE topic = 'order.placed'", schema),
        300);
    assert_int_equal(
        ob_ll(db,
              "SELECT count(*) FROM %s.outbox_events WHERE topic = 'unrouted.topic' AND "
              "published_at IS NULL",
              schema),
        200);
    /* the relays together deleted each old row once */
    assert_int_equal(sum_deleted(a.log) + sum_deleted(b.log), 2500);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cleanup_bounded_batches),
        cmocka_unit_test(test_created_in_the_future),
        cmocka_unit_test(test_status_oldest_age),
        cmocka_unit_test(test_relay_retention_singleton),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
