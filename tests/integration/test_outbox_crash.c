/* test_outbox_crash.c - two `ferry relay` processes drain 20,000 rows fanned out to two
 * queues; one is SIGKILLed mid-run (its open batch rolls back when PostgreSQL sees the
 * connection drop; jobs it had already added are duplicates that the queues drop by jobId)
 * and a replacement starts. In the end every row is published and each queue holds exactly
 * one job per row, under the row's id: nothing lost, nothing doubled. */
#include "support/ob.h"

#define ROWS 20000

static void test_two_relays_one_killed(void **state) {
    (void)state;
    PGconn *db = ob_pg();
    ferry_conn *rds = th_conn();
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("fanout.routes", "order.placed qa:capture qb:notify\n");
    ob_insert_many(db, schema, "order.placed", ROWS);

    const char *const args[] = {"--batch", "100", "--poll-interval", "200", NULL};
    ob_relay a, b;
    ob_relay_start(&a, schema, prefix, routes, args, NULL);
    ob_relay_start(&b, schema, prefix, routes, args, NULL);

    char published[256], unpublished[256];
    snprintf(published, sizeof published,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema);
    snprintf(unpublished, sizeof unpublished,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL", schema);
    long long n = 0;
    if (!ob_wait_count(db, published, ROWS / 4, 0, 60000, &n))
        OB_FAIL_LOG(&a, "only %lld published", n);
    ob_relay_kill(&a); /* mid-run: it may be anywhere in a batch */
    long long at_kill = ob_ll(db, "%s", published);
    if (at_kill >= ROWS) fail_msg("the run finished before the kill; nothing was tested");
    ob_relay a2;
    ob_relay_start(&a2, schema, prefix, routes, args, NULL);
    if (!ob_wait_count(db, unpublished, 0, 1, 60000, &n))
        OB_FAIL_LOG(&b, "%lld rows left unpublished", n);
    ob_relay_stop(&a2);
    ob_relay_stop(&b);

    /* every row published once in PostgreSQL, every queue has one job per row */
    const char *const queues[] = {"qa", "qb"};
    ob_expect_one_job_per_row(db, schema, rds, prefix, queues, 2, ROWS);
    fprintf(stderr, "# killed relay A with %lld of %d rows published\n", at_kill, ROWS);
    ob_drop_schemas(db);
    PQfinish(db);
    ferry__conn_close(rds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_relays_one_killed),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return rc;
}
