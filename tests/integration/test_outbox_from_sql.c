/* test_outbox_from_sql.c - events written in plain SQL, as docs/outbox.md shows for
 * applications that do not call ferry_outbox_append: examples/outbox-sql/uuid7.sql makes
 * UUIDv7 ids (version 7, RFC 9562 variant, the creation time in the first 48 bits), and
 * examples/outbox-sql/append.sql, run by psql in an application transaction, gives a job with
 * the row's id and the envelope {eventId, traceId, payload} once the relay runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
OB_GROUP_FIXTURE(&db, &rds)

static char sql_dir[512];

static const char *sql_file(const char *name) {
    static char path[600];
    const char *src = getenv("FERRY_SOURCE_DIR");
    if (!src) fail_msg("FERRY_SOURCE_DIR is not set; run through ctest");
    snprintf(sql_dir, sizeof sql_dir, "%s/examples/outbox-sql", src);
    snprintf(path, sizeof path, "%s/%s", sql_dir, name);
    return path;
}

static long long now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Run psql on the test database with search_path set to `schema`, then `file` with the given
 * -v variables (NULL-terminated "name=value"). Returns psql's exit code. */
static int run_psql(const char *schema, const char *file, const char *const *vars) {
    char cmd[4096];
    int n =
        snprintf(cmd, sizeof cmd, "psql '%s' -X -q -v ON_ERROR_STOP=1 -c 'SET search_path = %s'",
                 th_env_require("DATABASE_URL"), schema);
    for (int i = 0; vars && vars[i]; i++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " -v '%s'", vars[i]);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " -f '%s' >/dev/null", file);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static void test_uuid7_from_sql(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    assert_int_equal(run_psql(schema, sql_file("uuid7.sql"), NULL), 0);
    long long before = now_ms();
    /* 200 ids from separate statements, each checked and compared with the previous one */
    char prev[37] = "";
    for (int i = 0; i < 200; i++) {
        PGresult *r = ob_sql(db, "SELECT %s.uuid7()::text", schema);
        const char *id = PQgetvalue(r, 0, 0);
        assert_int_equal(strlen(id), 36);
        assert_int_equal(id[14], '7');           /* version */
        assert_non_null(strchr("89ab", id[19])); /* variant 10xx */
        char hex[13];
        memcpy(hex, id, 8);
        memcpy(hex + 8, id + 9, 4);
        hex[12] = 0;
        long long ms = strtoll(hex, NULL, 16);
        long long after = now_ms();
        if (ms < before - 1000 || ms > after + 1000)
            fail_msg("id %s carries %lld ms, outside [%lld, %lld]", id, ms, before, after);
        /* later statements never sort before earlier milliseconds */
        if (prev[0] && strncmp(prev, id, 13) > 0) fail_msg("%s sorts before %s", id, prev);
        snprintf(prev, sizeof prev, "%s", id);
        PQclear(r);
    }
    /* distinct within one statement too (randomness in the low bits) */
    assert_int_equal(
        ob_ll(db, "SELECT count(DISTINCT %s.uuid7()) FROM generate_series(1, 5000)", schema), 5000);
}

static void test_append_sql_relayed(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    assert_int_equal(run_psql(schema, sql_file("uuid7.sql"), NULL), 0);
    PQclear(ob_sql(db,
                   "CREATE TABLE %s.orders (id uuid PRIMARY KEY, customer_id uuid, total bigint)",
                   schema));
    const char *order = "0b6f6e8c-7d1e-4a53-9c55-6a1a1f0e2b11";
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    char v1[80], v2[80], v3[120];
    snprintf(v1, sizeof v1, "order_id=%s", order);
    snprintf(v2, sizeof v2, "customer_id=%s", "5d2b7f0a-1c44-4e0b-8f7e-3a9d6c1b2e40");
    snprintf(v3, sizeof v3, "traceparent=%s", tp);
    const char *vars[] = {v1, v2, v3, NULL};
    assert_int_equal(run_psql(schema, sql_file("append.sql"), vars), 0);
    /* the order and its event committed together */
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.orders", schema), 1);
    PGresult *r = ob_sql(db, "SELECT id::text FROM %s.outbox_events WHERE aggregate_id = '%s'",
                         schema, order);
    assert_int_equal(PQntuples(r), 1);
    char id[37];
    snprintf(id, sizeof id, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    assert_int_equal(id[14], '7');

    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("sql.routes", "order.placed payments:capture-payment\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes, NULL, NULL);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema);
    long long done = 0;
    if (!ob_wait_count(db, sql, 1, 1, 15000, &done)) OB_FAIL_LOG(&rl, "row not published");
    ob_relay_stop(&rl);
    redisReply *rep = th_cmd(rds, "HGET %s:payments:%s data", prefix, id);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    char want[512];
    snprintf(
        want, sizeof want,
        "{\"eventId\":\"%s\",\"traceId\":\"%s\",\"payload\":{\"total\":250000,\"orderId\":\"%s\"}}",
        id, tp, order);
    assert_string_equal(rep->str, want);
    freeReplyObject(rep);
    rep = th_cmd(rds, "HGET %s:payments:%s name", prefix, id);
    assert_string_equal(rep->str, "capture-payment");
    freeReplyObject(rep);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid7_from_sql),
        cmocka_unit_test(test_append_sql_relayed),
    };
    return th_exit(cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown));
}
