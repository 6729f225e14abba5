/* test_options_init.c - every option struct has an _init, and what it gives is the
 * documented default (all zero / NULL: "0 = default" throughout), whatever the memory held
 * before; options fresh from an init are accepted by the calls that take them; the public
 * limit macros are the limits the calls enforce (the largest value passes, one more is
 * refused). No servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/ferry.h"

#define CHECK_INIT(type, init)                                                                     \
    do {                                                                                           \
        type got, zero;                                                                            \
        memset(&got, 0xa5, sizeof got);                                                            \
        memset(&zero, 0, sizeof zero);                                                             \
        init(&got);                                                                                \
        if (memcmp(&got, &zero, sizeof got) != 0) fail_msg("%s left a field set", #init);          \
        init(NULL); /* accepted, does nothing */                                                   \
    } while (0)

static void test_all_zero(void **state) {
    (void)state;
    CHECK_INIT(ferry_redis_options, ferry_redis_options_init);
    CHECK_INIT(ferry_queue_options, ferry_queue_options_init);
    CHECK_INIT(ferry_scheduler_spec, ferry_scheduler_spec_init);
    CHECK_INIT(ferry_migrate_options, ferry_migrate_options_init);
    CHECK_INIT(ferry_outbox_options, ferry_outbox_options_init);
    CHECK_INIT(ferry_relay_options, ferry_relay_options_init);
    /* ferry_worker_options_init takes no NULL (documented "not NULL") */
    ferry_worker_options got, zero;
    memset(&got, 0xa5, sizeof got);
    memset(&zero, 0, sizeof zero);
    ferry_worker_options_init(&got);
    assert_memory_equal(&got, &zero, sizeof got);
}

static ferry_outcome noop(ferry_job *job, void *ud) {
    (void)job;
    (void)ud;
    return FERRY_COMPLETED;
}

static void count_migration(int version, const char *name, const char *sql, void *ud) {
    (void)version;
    (void)name;
    (void)sql;
    (*(int *)ud)++;
}

static void test_init_is_accepted(void **state) {
    (void)state;
    ferry_error err = {0};

    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    ferry_job_spec job = {"j", NULL, NULL};
    assert_int_equal(ferry_queue_check_jobs("q", &qo, &job, 1, &err), 0);

    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    ferry_worker *w = NULL;
    assert_int_equal(ferry_worker_create("q", &wo, noop, NULL, &w, &err), 0);
    ferry_worker_free(w);

    ferry_routes *routes = NULL;
    const char *text = "t.x q:j\n";
    assert_int_equal(ferry_routes_parse(text, strlen(text), NULL, &routes, &err), 0);
    ferry_relay_options ro;
    ferry_relay_options_init(&ro);
    ro.routes = routes;
    ferry_relay *r = NULL;
    assert_int_equal(ferry_relay_create(&ro, &r, &err), 0);
    ferry_relay_free(r);
    ferry_routes_free(routes);

    ferry_migrate_options mo;
    ferry_migrate_options_init(&mo);
    int n = 0;
    mo.fn = count_migration;
    mo.userdata = &n;
    assert_int_equal(ferry_outbox_migrations_sql(&mo, &err), 0);
    assert_int_equal(n, ferry_outbox_schema_version());
}

static int relay_with(void (*set)(ferry_relay_options *, long long), long long v) {
    ferry_routes *routes = NULL;
    ferry_error err = {0};
    const char *text = "t.x q:j\n";
    assert_int_equal(ferry_routes_parse(text, strlen(text), NULL, &routes, &err), 0);
    ferry_relay_options ro;
    ferry_relay_options_init(&ro);
    ro.routes = routes;
    set(&ro, v);
    ferry_relay *r = NULL;
    int rc = ferry_relay_create(&ro, &r, &err);
    ferry_relay_free(r);
    ferry_routes_free(routes);
    return rc;
}

#define RELAY_FIELD(field)                                                                         \
    static void set_##field(ferry_relay_options *o, long long v) {                                 \
        o->field = v;                                                                              \
    }
RELAY_FIELD(batch_size)
RELAY_FIELD(poll_interval_ms)
RELAY_FIELD(max_backoff_ms)
RELAY_FIELD(unknown_report_ms)
RELAY_FIELD(statement_timeout_ms)
RELAY_FIELD(connect_timeout_ms)
RELAY_FIELD(retention_s)
RELAY_FIELD(retention_interval_ms)
RELAY_FIELD(retention_batch)
RELAY_FIELD(max_envelope_bytes)

#define EDGE(field, max)                                                                           \
    do {                                                                                           \
        assert_int_equal(relay_with(set_##field, (long long)(max)), 0);                            \
        assert_int_equal(relay_with(set_##field, (long long)(max) + 1), FERRY_EINVAL);             \
    } while (0)

static void test_relay_limits(void **state) {
    (void)state;
    EDGE(batch_size, FERRY_RELAY_BATCH_SIZE_MAX);
    EDGE(poll_interval_ms, FERRY_RELAY_INTERVAL_MAX_MS);
    EDGE(max_backoff_ms, FERRY_RELAY_INTERVAL_MAX_MS);
    EDGE(unknown_report_ms, FERRY_RELAY_INTERVAL_MAX_MS);
    EDGE(statement_timeout_ms, FERRY_RELAY_TIMEOUT_MAX_MS);
    EDGE(connect_timeout_ms, FERRY_RELAY_TIMEOUT_MAX_MS);
    EDGE(retention_s, FERRY_RELAY_RETENTION_MAX_S);
    EDGE(retention_interval_ms, FERRY_RELAY_RETENTION_INTERVAL_MAX_MS);
    EDGE(retention_batch, FERRY_RELAY_RETENTION_BATCH_MAX);
    EDGE(max_envelope_bytes, FERRY_RELAY_MAX_ENVELOPE_LIMIT);
}

static int worker_with_lanes(int lanes) {
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.concurrency = 16;
    wo.lanes = lanes;
    ferry_worker *w = NULL;
    ferry_error err = {0};
    int rc = ferry_worker_create("q", &wo, noop, NULL, &w, &err);
    ferry_worker_free(w);
    return rc;
}

static void test_queue_limits(void **state) {
    (void)state;
    ferry_job_spec job = {"j", NULL, NULL};
    ferry_error err = {0};
    /* refused before any job is read */
    assert_int_equal(
        ferry_queue_check_jobs("q", NULL, &job, (size_t)FERRY_QUEUE_BULK_MAX + 1, &err),
        FERRY_ETOOBIG);
    char big[FERRY_QUEUE_NAME_MAX + 2];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(ferry_queue_check_jobs(big, NULL, &job, 1, &err), FERRY_EINVAL);
    big[FERRY_QUEUE_NAME_MAX] = '\0';
    assert_int_equal(ferry_queue_check_jobs(big, NULL, &job, 1, &err), 0);
}

static void test_worker_limits(void **state) {
    (void)state;
    assert_int_equal(worker_with_lanes(FERRY_WORKER_LANES_MAX), 0);
    assert_int_equal(worker_with_lanes(FERRY_WORKER_LANES_MAX + 1), FERRY_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_zero),      cmocka_unit_test(test_init_is_accepted),
        cmocka_unit_test(test_relay_limits),  cmocka_unit_test(test_queue_limits),
        cmocka_unit_test(test_worker_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
