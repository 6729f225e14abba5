/* test_inbox.c - idempotent consumers against a real PostgreSQL: claims, ferry_inbox_run
 * with effects that succeed and fail, retention in bounded batches and status counts. */
#include "ferry/inbox.h"
#include "support/ob.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

#define ID1 "6f9619ff-8b86-d011-b42d-00cf4fc964ff"

static const char *cur_schema;

static ferry_outcome effect_insert(PGconn *c, void *ud) {
    (void)ud;
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO %s.effects VALUES (1)", cur_schema);
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? FERRY_COMPLETED : FERRY_FAILED;
}

static ferry_outcome effect_fail(PGconn *c, void *ud) {
    (void)ud;
    effect_insert(c, NULL);
    return FERRY_FAILED;
}

static ferry_outcome effect_bad_sql(PGconn *c, void *ud) {
    (void)ud;
    PQclear(PQexec(c, "SELECT 1/0"));
    return FERRY_COMPLETED; /* ignores its own error: the inbox must notice */
}

static const char *setup(void) {
    const char *s = ob_schema(db);
    cur_schema = s;
    PQclear(ob_sql(db, "CREATE TABLE %s.effects (n int)", s));
    return s;
}

static void test_claim(void **state) {
    (void)state;
    const char *s = setup();
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = s;
    ferry_error e = {0};
    int claimed = -1;
    assert_int_equal(ferry_inbox_claim(db, &o, "c1", ID1, &claimed, &e), FERRY_ESTATE);
    ob_exec(db, "BEGIN");
    assert_int_equal(ferry_inbox_claim(db, &o, "c1", "not-a-uuid", &claimed, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "not a UUID"));
    assert_null(strstr(e.message, "not-a-uuid"));
    assert_int_equal(ferry_inbox_claim(db, &o, "", ID1, &claimed, &e), FERRY_EINVAL);
    assert_int_equal(ferry_inbox_claim(db, &o, "c\n1", ID1, &claimed, &e), FERRY_EINVAL);
    assert_int_equal(ferry_inbox_claim(db, &o, "c1", ID1, &claimed, &e), 0);
    assert_int_equal(claimed, 1);
    assert_int_equal(ferry_inbox_claim(db, &o, "c1", ID1, &claimed, &e), 0);
    assert_int_equal(claimed, 0);
    assert_int_equal(ferry_inbox_claim(db, &o, "c2", ID1, &claimed, &e), 0);
    assert_int_equal(claimed, 1);
    ob_exec(db, "COMMIT");
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", s), 2);
}

static void test_run_sequential_and_failures(void **state) {
    (void)state;
    const char *s = setup();
    ferry_inbox_options o = {.schema = s};
    ferry_inbox_result res;
    int dups = 0;
    for (int i = 0; i < 10; i++) {
        assert_int_equal(ferry_inbox_run(db, &o, "c", ID1, effect_insert, NULL, &res),
                         FERRY_COMPLETED);
        dups += res.duplicate;
    }
    assert_int_equal(dups, 9);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", s), 1);
    const char *id2 = "11111111-2222-4333-8444-555555555555";
    assert_int_equal(ferry_inbox_run(db, &o, "c", id2, effect_fail, NULL, &res), FERRY_FAILED);
    assert_int_equal(ferry_inbox_run(db, &o, "c", id2, effect_bad_sql, NULL, &res), FERRY_FAILED);
    assert_non_null(strstr(res.reason, "aborted"));
    assert_int_equal(PQtransactionStatus(db), PQTRANS_IDLE);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", s), 1);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.processed_messages WHERE message_id = '%s'", s, id2), 0);
}

static void test_cleanup_and_status(void **state) {
    (void)state;
    const char *s = setup();
    PQclear(ob_sql(db,
                   "INSERT INTO %s.processed_messages SELECT 'old', gen_random_uuid(), now() - "
                   "interval '10 days' FROM generate_series(1, 2500)",
                   s));
    PQclear(ob_sql(db,
                   "INSERT INTO %s.processed_messages SELECT 'new', gen_random_uuid() FROM "
                   "generate_series(1, 30)",
                   s));
    ferry_inbox_options o = {.schema = s};
    ferry_inbox_status *st = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_inbox_status_get(db, &o, &st, &e), 0);
    assert_int_equal(st->n, 2);
    assert_int_equal(st->total_rows, 2530);
    assert_string_equal(st->consumers[0].consumer, "old");
    assert_int_equal(st->consumers[0].rows, 2500);
    assert_true(st->now_epoch_ms - st->consumers[0].oldest_epoch_ms > 9LL * 86400000);
    ferry_inbox_status_free(st);
    long long deleted = -1;
    assert_int_equal(ferry_inbox_cleanup(db, &o, 7 * 86400, 100001, &deleted, &e), FERRY_EINVAL);
    assert_int_equal(ferry_inbox_cleanup(db, &o, 7 * 86400, 1000, &deleted, &e), 0);
    assert_int_equal(deleted, 2500);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", s), 30);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim),
        cmocka_unit_test(test_run_sequential_and_failures),
        cmocka_unit_test(test_cleanup_and_status),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
