/* test_serve_trace.c - GET /api/trace/{eventId} and the dead-letter plan additions (body
 * member "ids", the dry run's "groups") of `ferry serve` over real HTTP, against the real
 * binary, PostgreSQL and Redis, on state built by the real pipeline (trace_fixture.h):
 *  - the trace answers every section as the contract names it: outbox, routes (from
 *    --routes), the three jobs with redriveOf, the inbox marker, both dead letters, both
 *    redrive rows; the payload appears nowhere in the answer;
 *  - an id nothing knows: 404; not a UUID: 400 naming it; a server without a database: 503;
 *  - a dry-run redrive groups its rows by queue, name and the error's first line; executing
 *    with "ids" redrives exactly those rows; executed again, a row that stopped matching
 *    comes back "skipped" with its reason; an id that never had a row is "not found (never
 *    existed or deleted since)", a purged one "deleted since it was chosen (purged)"; bad
 *    "ids" (not an array, empty, over 1000, a non-UUID item): 400 naming the member,
 *    nothing changed. */
#include <stdlib.h>

#include "support/ob.h"
#include "support/sv.h"
#include "trace_fixture.h"

#define ADMIN_SECRET "admin-secret-0123456789abcdefghijklmnop"
#define READER_SECRET "reader-secret-0123456789abcdefghijklmno"
#define ADMIN "Authorization: Bearer " ADMIN_SECRET
#define READER "Authorization: Bearer " READER_SECRET

static PGconn *db;
static const char *schema;
static char prefix[64];
static sv_server srv;
static tf_state st;

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    tf_build(db, schema, prefix, &st);
    const char *tokens = sv_token_file("tokens",
                                       "admin read,act,redrive " ADMIN_SECRET "\n"
                                       "reader read " READER_SECRET "\n",
                                       0600);
    sv_start(&srv, SV_FLAGS("--prefix", prefix, "--token-file", tokens, "--database",
                            th_env_require("DATABASE_URL"), "--schema", schema, "--routes",
                            st.routes_path));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    sv_stop(&srv);
    ob_close(db, NULL);
    return 0;
}

static json_t *get(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!v) fail_msg("no member %s", key);
    return v;
}

static const char *str(json_t *o, const char *key) {
    const char *s = json_string_value(get(o, key));
    if (!s) fail_msg("member %s is not a string", key);
    return s;
}

static json_t *job_in(json_t *jobs, const char *queue, const char *id) {
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        if (!strcmp(str(j, "queue"), queue) && !strcmp(str(j, "id"), id)) return j;
    }
    fail_msg("no job %s in %s", id, queue);
    return NULL;
}

static void test_trace_every_section(void **state) {
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "/api/trace/%s", st.event_id);
    sv_resp r = sv_call(&srv, "GET", path, READER, NULL);
    SV_EXPECT(r, 200);
    json_t *o = r.json;
    assert_string_equal(str(o, "eventId"), st.event_id);
    assert_true(json_is_true(get(o, "found")));
    json_t *ob = get(o, "outbox");
    assert_string_equal(str(ob, "id"), st.event_id);
    assert_string_equal(str(ob, "topic"), "order.placed");
    assert_string_equal(str(ob, "aggregateId"), "6f9619ff-8b86-d011-b42d-00cf4fc964ff");
    assert_string_equal(str(ob, "traceId"), TF_TRACE_ID);
    assert_true(json_integer_value(get(ob, "publishedAt")) > 0);
    assert_true(json_is_null(get(ob, "quarantinedAt")));
    assert_true(json_is_null(get(ob, "lastError")));
    assert_int_equal(sv_jint(ob, "attempts"), 0);
    json_t *routes = get(o, "routes");
    assert_int_equal(json_array_size(routes), 2);
    assert_string_equal(str(json_array_get(routes, 0), "queue"), "pay");
    assert_string_equal(str(json_array_get(routes, 0), "name"), "capture");
    assert_string_equal(str(json_array_get(routes, 1), "queue"), "notify");
    json_t *jobs = get(o, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    json_t *j = job_in(jobs, "notify", st.event_id);
    assert_string_equal(str(j, "state"), "completed");
    assert_string_equal(str(j, "name"), "confirm");
    assert_true(json_is_null(get(j, "redriveOf")));
    assert_true(json_integer_value(get(j, "finishedOn")) > 0);
    j = job_in(jobs, "pay", st.event_id);
    assert_string_equal(str(j, "state"), "failed");
    assert_non_null(strstr(str(j, "failedReason"), TF_REASON));
    assert_int_equal(sv_jint(j, "attemptsMade"), 1);
    j = job_in(jobs, "pay", st.redrive_job);
    assert_string_equal(str(j, "redriveOf"), st.dl1);
    assert_string_equal(str(j, "state"), "failed");
    json_t *inbox = get(o, "inbox");
    assert_int_equal(json_array_size(inbox), 1);
    assert_string_equal(str(json_array_get(inbox, 0), "consumer"), TF_CONSUMER);
    assert_non_null(strstr(str(json_array_get(inbox, 0), "processedAt"), "T"));
    json_t *dls = get(o, "deadLetters");
    assert_int_equal(json_array_size(dls), 2);
    json_t *d0 = json_array_get(dls, 0);
    assert_string_equal(str(d0, "id"), st.dl1);
    assert_string_equal(str(d0, "queue"), "pay");
    assert_string_equal(str(d0, "jobId"), st.event_id);
    assert_string_equal(str(d0, "redriveJobId"), st.redrive_job);
    assert_string_equal(str(d0, "redrivenBy"), "tracer");
    assert_int_equal(sv_jint(d0, "redriveCount"), 1);
    assert_string_equal(str(json_array_get(dls, 1), "jobId"), st.redrive_job);
    json_t *rds = get(o, "redrives");
    assert_int_equal(json_array_size(rds), 2);
    assert_true(json_is_true(get(json_array_get(rds, 0), "dryRun")));
    json_t *x = json_array_get(rds, 1);
    assert_true(json_is_false(get(x, "dryRun")));
    assert_string_equal(str(x, "deadLetterId"), st.dl1);
    assert_string_equal(str(x, "newJobId"), st.redrive_job);
    assert_string_equal(str(x, "action"), "redrive");
    /* job data (the payload) is not part of a trace */
    assert_null(strstr(r.body, "4111-secret"));
    sv_resp_free(&r);
}

static void test_trace_errors(void **state) {
    (void)state;
    sv_expect_error(&srv, "GET", "/api/trace/0190a5c4-7b1e-7c3d-9f00-1234567890ab", READER, NULL,
                    404, "no outbox event");
    sv_expect_error(&srv, "GET", "/api/trace/not-a-uuid", READER, NULL, 400, "not a UUID");
    sv_expect_error(&srv, "GET", "/api/trace/%27%3B%20DROP", READER, NULL, 400, "event id");
    /* a server without a database */
    sv_server nodb;
    sv_start(&nodb, SV_FLAGS("--prefix", prefix));
    char path[128];
    snprintf(path, sizeof path, "/api/trace/%s", st.event_id);
    sv_expect_error(&nodb, "GET", path, NULL, NULL, 503, "no database");
    sv_expect_error(&nodb, "GET", "/api/trace/bad", NULL, NULL, 400, "not a UUID");
    sv_stop(&nodb);
}

/* ---- the dead-letter plan --------------------------------------------------------------- */

static void record(const char *job_id, const char *error, char id_out[40]) {
    ferry_dlq_failure f = {.prefix = prefix,
                           .queue = "qx",
                           .job_id = job_id,
                           .job_name = "charge",
                           .data = "{\"order\":7}",
                           .error = error,
                           .attempts_made = 1,
                           .job_timestamp_ms = 1000};
    ob_dlq_record(db, schema, &f, id_out);
}

static json_t *group_of(json_t *groups, const char *reason) {
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) {
        if (!strcmp(str(g, "reason"), reason)) return g;
    }
    fail_msg("no group %s", reason);
    return NULL;
}

static const char *item_status(json_t *items, const char *id) {
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) {
        if (!strcmp(str(it, "id"), id)) return str(it, "status");
    }
    return NULL;
}

static long long redrives_of(const char *id) {
    return ob_ll(db, "SELECT redrive_count FROM %s.dead_letters WHERE id = '%s'", schema, id);
}

static void test_plan_groups_and_ids(void **state) {
    (void)state;
    char a[40], b[40], c[40];
    record("x1", "timeout after 30 s\n    at gateway.js:12", a);
    record("x2", "timeout after 30 s\n    at gateway.js:40", b);
    record("x3", "connection refused", c);
    /* the dry run: grouped by the error's first line */
    sv_resp r = sv_call(&srv, "POST", "/api/dead-letters/redrive", ADMIN, "{\"queue\":\"qx\"}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "would"), 3);
    json_t *groups = get(r.json, "groups");
    assert_int_equal(json_array_size(groups), 2);
    json_t *g = group_of(groups, "timeout after 30 s");
    assert_int_equal(sv_jint(g, "count"), 2);
    assert_string_equal(str(g, "queue"), "qx");
    assert_string_equal(str(g, "name"), "charge");
    assert_int_equal(sv_jint(group_of(groups, "connection refused"), "count"), 1);
    assert_int_equal(json_array_size(get(r.json, "items")), 3);
    sv_resp_free(&r);
    /* execute the plan for a and b only */
    char body[512];
    snprintf(body, sizeof body, "{\"queue\":\"qx\",\"dryRun\":false,\"ids\":[\"%s\",\"%s\"]}", a,
             b);
    r = sv_call(&srv, "POST", "/api/dead-letters/redrive", ADMIN, body);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "done"), 2);
    assert_int_equal(sv_jint(r.json, "matched"), 2);
    assert_null(json_object_get(r.json, "groups")); /* groups are the dry run's */
    sv_resp_free(&r);
    assert_int_equal(redrives_of(a), 1);
    assert_int_equal(redrives_of(b), 1);
    assert_int_equal(redrives_of(c), 0);
    /* the same plan again: both rows stopped matching (redriven) */
    r = sv_call(&srv, "POST", "/api/dead-letters/redrive", ADMIN, body);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "done"), 0);
    assert_int_equal(sv_jint(r.json, "skipped"), 2);
    json_t *items = get(r.json, "items");
    assert_string_equal(item_status(items, a), "skipped");
    assert_non_null(strstr(str(json_array_get(items, 0), "reason"), "no longer matches"));
    sv_resp_free(&r);
    assert_int_equal(redrives_of(a), 1);
}

/* A dry run naming ids that never had a row, and one a purge deleted: each "skipped" with
 * what the server can truly tell ("not found ..." vs "deleted ... (purged)"). */
static void test_plan_missing_ids(void **state) {
    (void)state;
    char a[40];
    record("x9", "gone soon", a);
    char body[512];
    snprintf(body, sizeof body, "{\"dryRun\":false,\"ids\":[\"%s\"]}", a);
    sv_resp r = sv_call(&srv, "POST", "/api/dead-letters/purge", ADMIN, body);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "done"), 1);
    sv_resp_free(&r);
    const char *ghost = "0190a5c4-7b1e-7c3d-9f00-0000000000ee";
    for (int purge = 0; purge < 2; purge++) {
        snprintf(body, sizeof body, "{\"ids\":[\"%s\",\"%s\"]}", ghost, a);
        r = sv_call(&srv, "POST", purge ? "/api/dead-letters/purge" : "/api/dead-letters/redrive",
                    ADMIN, body);
        SV_EXPECT(r, 200);
        assert_int_equal(sv_jint(r.json, "matched"), 0);
        assert_int_equal(sv_jint(r.json, "skipped"), 2);
        json_t *items = get(r.json, "items");
        assert_int_equal(json_array_size(items), 2);
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) {
            assert_string_equal(str(it, "status"), "skipped");
            if (!strcmp(str(it, "id"), ghost))
                assert_string_equal(str(it, "reason"),
                                    "not found (never existed or deleted since)");
            else
                assert_string_equal(str(it, "reason"), "deleted since it was chosen (purged)");
        }
        assert_null(strstr(r.body, "deleted since it was chosen\""));
        sv_resp_free(&r);
    }
}

static void test_bad_ids(void **state) {
    (void)state;
    long long before = ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", schema);
    sv_expect_error(&srv, "POST", "/api/dead-letters/redrive", ADMIN, "{\"ids\":\"x\"}", 400,
                    "ids");
    /* null is not "no ids": a client bug must not widen a plan to the whole filter */
    sv_expect_error(&srv, "POST", "/api/dead-letters/redrive", ADMIN, "{\"ids\":null}", 400, "ids");
    sv_expect_error(&srv, "POST", "/api/dead-letters/redrive", ADMIN, "{\"ids\":[]}", 400,
                    "body member ids: must hold 1..1000");
    sv_expect_error(&srv, "POST", "/api/dead-letters/purge", ADMIN,
                    "{\"dryRun\":false,\"ids\":[\"0190a5c4-7b1e-7c3d-9f00-1234567890ab\",7]}", 400,
                    "item 1");
    sv_expect_error(&srv, "POST", "/api/dead-letters/redrive", ADMIN,
                    "{\"dryRun\":false,\"ids\":[\"nope\"]}", 400, "item 0 is not a dead letter id");
    size_t cap = 1001 * 40 + 64, o = 0;
    char *big = malloc(cap);
    o += (size_t)snprintf(big + o, cap - o, "{\"ids\":[");
    for (int i = 0; i < 1001; i++)
        o += (size_t)snprintf(big + o, cap - o, "%s\"0190a5c4-7b1e-7c3d-9f00-1234567890ab\"",
                              i ? "," : "");
    snprintf(big + o, cap - o, "]}");
    sv_expect_error(&srv, "POST", "/api/dead-letters/redrive", ADMIN, big, 400, "got 1001");
    free(big);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", schema), before);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_every_section),
        cmocka_unit_test(test_trace_errors),
        cmocka_unit_test(test_plan_groups_and_ids),
        cmocka_unit_test(test_plan_missing_ids),
        cmocka_unit_test(test_bad_ids),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(rc);
}
