/* test_inbox_job.c - ferry_inbox_run_job in a real worker (real Redis and PostgreSQL): the
 * same outbox event delivered as several jobs (a relay republishing it, a redrive) has one
 * effect and every job completes; a job whose data has no usable eventId fails for good with
 * a reason saying so and no effect. */
#include "ferry/inbox.h"
#include "support/ob.h"
#include "support/wt.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

#define EV "0190b6a2-7c00-7abc-8def-0123456789ab"

typedef struct hx {
    PGconn *conn; /* the handler's own: concurrency 1 */
    const char *schema;
} hx;

static ferry_outcome effect(PGconn *c, void *ud) {
    const hx *h = ud;
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO %s.points VALUES (10)", h->schema);
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? FERRY_COMPLETED : FERRY_FAILED;
}

static ferry_outcome handler(ferry_job *job, void *ud) {
    hx *h = ud;
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = h->schema;
    return ferry_inbox_run_job(h->conn, &o, "loyalty", job, effect, h);
}

static void test_redelivered_event_has_one_effect(void **state) {
    (void)state;
    hx h = {.conn = ob_pg(), .schema = ob_schema(db)};
    PQclear(ob_sql(db, "CREATE TABLE %s.points (n int)", h.schema));
    wt t;
    wt_init(&t);
    const char *data = "{\"eventId\":\"" EV "\",\"traceId\":\"r-1\",\"payload\":{\"amount\":1}}";
    for (int i = 0; i < 3; i++)
        free(wt_add(&t, "award-points", data, NULL));
    char *bad = wt_add(&t, "award-points", "{\"payload\":{\"amount\":1}}", "{\"attempts\":3}");
    ferry_worker_options wo;
    ferry_redis_options ro;
    wt_options(&t, &wo, &ro);
    ferry_worker *w = wt_start(&wo, handler, &h);
    WT_WAIT_COUNT(&t, completed, 3);
    WT_WAIT_COUNT(&t, failed_final, 1);
    wt_stop(w);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.points", h.schema), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", h.schema), 1);
    char *reason = wt_hget(&t, bad, "failedReason");
    assert_non_null(reason);
    if (!strstr(reason, "eventId")) fail_msg("reason: %s", reason);
    free(reason);
    wt_expect_field(&t, bad, "atm", "1"); /* permanent: no retry */
    free(bad);
    PQfinish(h.conn);
    wt_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redelivered_event_has_one_effect),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
