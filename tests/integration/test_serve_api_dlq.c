/* test_serve_api_dlq.c - the dead-letter and outbox endpoints of `ferry serve` over real HTTP
 * against the real binary, PostgreSQL and Redis:
 *  - list with filters (queue, errorContains, since / until, redriven, limit) and the total;
 *    one row with data and history; 404 / 400 for an unknown or malformed id;
 *  - a dry-run redrive (the default when dryRun is absent) changes no row and no queue and
 *    returns the plan; the execution then carries out exactly that plan (the same rows, the
 *    same job ids "dlq-<row>-1", jobs in Redis); executed twice it adds nothing; "again"
 *    gives "-2" ids; the actor in the audit is the token's name; ferry_redrives_total counts
 *    it on /metrics;
 *  - a typo ("dryrun"), a wrong type, a limit over 1000: 400 naming it and nothing changed; a
 *    read-only token: 403 and nothing changed;
 *  - purge dry run and execution; the audit history endpoint; a row kept as text is
 *    refused with its reason and left as it was;
 *  - GET /api/outbox counts the unpublished events, and with --routes the unrouted ones;
 *  - a server without a database: 503 for the dead letters and the outbox. */
#include <stdlib.h>

#include "ferry/deadletter.h"
#include "support/ob.h"
#include "support/sv.h"

#define ADMIN_SECRET "admin-secret-0123456789abcdefghijklmnop"
#define READER_SECRET "reader-secret-0123456789abcdefghijklmno"
#define ADMIN "Authorization: Bearer " ADMIN_SECRET
#define READER "Authorization: Bearer " READER_SECRET

static PGconn *db;
static const char *schema;
static char prefix[64];
static sv_server srv;
static ferry_conn *rds;

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    rds = th_conn();
    const char *tokens = sv_token_file("tokens",
                                       "admin read,act,redrive " ADMIN_SECRET "\n"
                                       "reader read,act " READER_SECRET "\n",
                                       0600);
    sv_start(&srv, SV_FLAGS("--prefix", prefix, "--token-file", tokens, "--database",
                            th_env_require("DATABASE_URL"), "--schema", schema));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    sv_stop(&srv);
    ferry__conn_close(rds);
    ob_close(db, NULL);
    return 0;
}

/* Record one failure under the test's prefix, failed at failed_ms (0 = now); its row id. */
static void record(const char *queue, const char *job_id, const char *error, long long failed_ms,
                   char id_out[40]) {
    ferry_dlq_failure f = {.prefix = prefix,
                           .queue = queue,
                           .job_id = job_id,
                           .job_name = "charge",
                           .data = "{\"order\":7}",
                           .error = error,
                           .attempts_made = 3,
                           .job_timestamp_ms = 1000,
                           .failed_at_ms = failed_ms};
    ob_dlq_record(db, schema, &f, id_out);
}

/* The table and the test's Redis keys as text, to compare before and after. */
static char *snapshot(void) {
    PGresult *r = ob_sql(db,
                         "SELECT coalesce(string_agg(d::text, '|' ORDER BY id), '') FROM "
                         "%s.dead_letters d",
                         schema);
    redisReply *k = th_cmd_ok(rds, "KEYS %s:*", prefix);
    size_t len = strlen(PQgetvalue(r, 0, 0)) + 64;
    for (size_t i = 0; i < k->elements; i++)
        len += strlen(k->element[i]->str) + 1;
    char *s = malloc(len);
    int o = snprintf(s, len, "%s#", PQgetvalue(r, 0, 0));
    /* KEYS order is not stable: sort */
    char **names = calloc(k->elements + 1, sizeof *names);
    for (size_t i = 0; i < k->elements; i++)
        names[i] = k->element[i]->str;
    qsort(names, k->elements, sizeof *names, th_cmp_str);
    for (size_t i = 0; i < k->elements; i++)
        o += snprintf(s + o, len - (size_t)o, "%s,", names[i]);
    free(names);
    freeReplyObject(k);
    PQclear(r);
    return s;
}

static long long audit_rows(void) {
    return ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", schema);
}

static char ids[4][40];

/* An admin_audit row of the framework with this status and summary (written after the
 * action; polled, not slept for). */
typedef struct audit_want {
    int status;
    const char *summary;
} audit_want;

static int audit_has(void *arg) {
    const audit_want *w = arg;
    return ob_ll(db,
                 "SELECT count(*) FROM %s.admin_audit WHERE actor = 'admin' AND status = %d AND "
                 "summary = '%s'",
                 schema, w->status, w->summary) > 0;
}

static void expect_audit(int status, const char *summary) {
    audit_want w = {status, summary};
    if (!th_wait_until(audit_has, &w, 10000)) {
        PGresult *r = ob_sql(db,
                             "SELECT coalesce(string_agg(actor || ' ' || status || ' ' || "
                             "coalesce(summary, '-'), E'\\n' ORDER BY id), '') FROM "
                             "%s.admin_audit",
                             schema);
        fail_msg("no audit row %d \"%s\"; have:\n%s", status, summary, PQgetvalue(r, 0, 0));
    }
}

static void test_list_and_show(void **state) {
    (void)state;
    long long day = 86400000LL, now = (long long)time(NULL) * 1000;
    record("pay", "1", "gateway TIMEOUT after 30s", now - 3 * day, ids[0]);
    record("pay", "2", "card declined", now - 2 * day, ids[1]);
    record("pay", "3", "gateway timeout", now - day, ids[2]);
    record("mail", "9", "smtp 550", now, ids[3]);

    sv_resp r = sv_call(&srv, "GET", "/api/dead-letters", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 4);
    json_t *rows = json_object_get(r.json, "deadLetters");
    assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "id")), ids[0]);
    assert_non_null(json_string_value(json_object_get(json_array_get(rows, 0), "failedAtIso")));
    sv_resp_free(&r);

    r = sv_call(&srv, "GET", "/api/dead-letters?queue=pay&errorContains=timeout", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 2);
    sv_resp_free(&r);

    char p[300], iso[40];
    time_t since = (time_t)((now - 2 * day - 60000) / 1000);
    struct tm tm;
    gmtime_r(&since, &tm);
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(p, sizeof p, "/api/dead-letters?since=%s&until=%lld", iso, now - day / 2);
    r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 2); /* rows 2 and 3 */
    sv_resp_free(&r);

    r = sv_call(&srv, "GET", "/api/dead-letters?limit=1&redriven=false", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "deadLetters")), 1);
    assert_int_equal(sv_jint(r.json, "total"), 4);
    sv_resp_free(&r);

    sv_expect_error(&srv, "GET", "/api/dead-letters?limit=1001", NULL, NULL, 400, "limit");
    sv_expect_error(&srv, "GET", "/api/dead-letters?limit=ten", NULL, NULL, 400, "limit");
    sv_expect_error(&srv, "GET", "/api/dead-letters?since=yesterday", NULL, NULL, 400, "since");
    sv_expect_error(&srv, "GET", "/api/dead-letters?redriven=maybe", NULL, NULL, 400, "redriven");
    snprintf(p, sizeof p, "/api/dead-letters?since=%lld&until=%lld", now, now - day);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "until");

    snprintf(p, sizeof p, "/api/dead-letters/%s", ids[3]);
    r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "queue"), "mail");
    assert_int_equal(sv_jint(json_object_get(r.json, "data"), "order"), 7);
    assert_true(json_is_true(json_object_get(r.json, "dataIsJson")));
    assert_int_equal(json_array_size(json_object_get(r.json, "history")), 0);
    sv_resp_free(&r);
    sv_expect_error(&srv, "GET", "/api/dead-letters/not-a-uuid", NULL, NULL, 400, "UUID");
    sv_expect_error(&srv, "GET", "/api/dead-letters/0192f7c4-8b2a-7d1e-9f00-1a2b3c4d5e6f", NULL,
                    NULL, 404, "0192f7c4");
}

/* The items' ids and new job ids as one text, in order. */
static char *plan_text(const sv_resp *r) {
    json_t *items = json_object_get(r->json, "items");
    char *s = calloc(1, 4096);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        const char *nj = json_string_value(json_object_get(it, "newJobId"));
        snprintf(s + strlen(s), 4096 - strlen(s), "%s>%s;",
                 json_string_value(json_object_get(it, "id")), nj ? nj : "-");
    }
    return s;
}

static void test_redrive(void **state) {
    (void)state;
    const char *path = "/api/dead-letters/redrive";
    const char *body = "{\"queue\":\"pay\",\"errorContains\":\"timeout\"}";
    char *before = snapshot();
    long long audits = audit_rows();

    /* refused before anything is done: nothing changes, not even the audit */
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"queue\":\"pay\",\"dryrun\":false}", 400,
                    "dryrun");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"dryRun\":\"false\"}", 400, "dryRun");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"limit\":1001,\"dryRun\":false}", 400, "limit");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"since\":\"soon\",\"dryRun\":false}", 400,
                    "since");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"queue\":7,\"dryRun\":false}", 400, "queue");
    sv_expect_error(&srv, "POST", path, READER, "{\"dryRun\":false}", 403, "");
    sv_expect_error(&srv, "POST", path, NULL, "{\"dryRun\":false}", 401, "");
    char *after = snapshot();
    assert_string_equal(before, after);
    free(after);
    assert_int_equal(audit_rows(), audits);

    /* the dry run: the plan, nothing changed but the audit's dry-run rows */
    sv_resp dry = sv_call(&srv, "POST", path, ADMIN, body);
    SV_EXPECT(dry, 200);
    assert_true(json_is_true(json_object_get(dry.json, "dryRun")));
    assert_int_equal(sv_jint(dry.json, "would"), 2);
    assert_int_equal(sv_jint(dry.json, "done"), 0);
    char *plan = plan_text(&dry);
    char want[300];
    snprintf(want, sizeof want, "%s>dlq-%s-1;%s>dlq-%s-1;", ids[0], ids[0], ids[2], ids[2]);
    assert_string_equal(plan, want);
    sv_resp_free(&dry);
    after = snapshot();
    assert_string_equal(before, after);
    free(after);
    free(before);
    assert_int_equal(audit_rows(), audits + 2);
    expect_audit(200, "dry run redrive: 2 rows would be redriven (2 matched)");

    /* executed: exactly that plan */
    char exec_body[200];
    snprintf(exec_body, sizeof exec_body,
             "{\"queue\":\"pay\",\"errorContains\":\"timeout\","
             "\"dryRun\":false}");
    sv_resp ex = sv_call(&srv, "POST", path, ADMIN, exec_body);
    SV_EXPECT(ex, 200);
    assert_int_equal(sv_jint(ex.json, "done"), 2);
    expect_audit(200, "redrive: 2 done, 0 skipped, 0 refused (2 matched)");
    char *done_plan = plan_text(&ex);
    assert_string_equal(done_plan, plan);
    free(done_plan);
    sv_resp_free(&ex);
    for (int i = 0; i < 3; i += 2) {
        redisReply *h = th_cmd_ok(rds, "HGET %s:pay:dlq-%s-1 data", prefix, ids[i]);
        assert_int_equal(h->type, REDIS_REPLY_STRING);
        assert_non_null(strstr(h->str, "\"order\""));
        freeReplyObject(h);
        assert_int_equal(
            ob_ll(db, "SELECT redrive_count FROM %s.dead_letters WHERE id = '%s'", schema, ids[i]),
            1);
    }
    PGresult *by =
        ob_sql(db, "SELECT redriven_by FROM %s.dead_letters WHERE id = '%s'", schema, ids[0]);
    assert_string_equal(PQgetvalue(by, 0, 0), "admin");
    PQclear(by);
    free(plan);

    /* twice: nothing more */
    before = snapshot();
    ex = sv_call(&srv, "POST", path, ADMIN, exec_body);
    SV_EXPECT(ex, 200);
    assert_int_equal(sv_jint(ex.json, "matched"), 0);
    assert_int_equal(sv_jint(ex.json, "done"), 0);
    sv_resp_free(&ex);
    after = snapshot();
    assert_string_equal(before, after);
    free(after);
    free(before);

    /* again: the next ids */
    ex = sv_call(&srv, "POST", path, ADMIN,
                 "{\"queue\":\"pay\",\"errorContains\":\"timeout\",\"again\":true,\"dryRun\":false,"
                 "\"redrivenFewerThan\":2}");
    SV_EXPECT(ex, 200);
    assert_int_equal(sv_jint(ex.json, "done"), 2);
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:pay:dlq-%s-2", prefix, ids[0]), 1);
    sv_resp_free(&ex);

    /* redriven=true lists them, /metrics counted them */
    sv_resp r = sv_call(&srv, "GET", "/api/dead-letters?redriven=true", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 2);
    sv_resp_free(&r);
    r = sv_call(&srv, "GET", "/metrics", NULL, NULL);
    SV_EXPECT(r, 200);
    if (!strstr(r.body, "ferry_redrives_total{mode=\"dry_run\",result=\"would\"} 2") ||
        !strstr(r.body, "ferry_redrives_total{mode=\"execute\",result=\"done\"} 4"))
        fail_msg("/metrics without the redrive counts:\n%s", r.body);
    sv_resp_free(&r);

    /* the audit: newest first, actor = the token's name */
    char p[200];
    snprintf(p, sizeof p, "/api/dead-letters/audit?deadLetterId=%s", ids[0]);
    r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 3); /* dry run, redrive, again */
    json_t *a0 = json_array_get(json_object_get(r.json, "audit"), 0);
    assert_string_equal(json_string_value(json_object_get(a0, "actor")), "admin");
    snprintf(want, sizeof want, "dlq-%s-2", ids[0]);
    assert_string_equal(json_string_value(json_object_get(a0, "newJobId")), want);
    assert_true(json_is_false(json_object_get(a0, "dryRun")));
    sv_resp_free(&r);
    snprintf(p, sizeof p, "/api/dead-letters/%s", ids[0]);
    r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "history")), 3);
    assert_int_equal(sv_jint(r.json, "redriveCount"), 2);
    sv_resp_free(&r);
    sv_expect_error(&srv, "GET", "/api/dead-letters/audit?deadLetterId=x", NULL, NULL, 400, "UUID");
    sv_expect_error(&srv, "GET", "/api/dead-letters/audit?limit=0", NULL, NULL, 400, "limit");
}

static void test_purge(void **state) {
    (void)state;
    const char *path = "/api/dead-letters/purge";
    long long rows = ob_ll(db, "SELECT count(*) FROM %s.dead_letters", schema);
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"again\":true}", 400, "again");
    sv_resp r = sv_call(&srv, "POST", path, ADMIN, "{\"queue\":\"mail\"}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "would"), 1);
    sv_resp_free(&r);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letters", schema), rows);
    r = sv_call(&srv, "POST", path, ADMIN, "{\"queue\":\"mail\",\"dryRun\":false}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "done"), 1);
    sv_resp_free(&r);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letters", schema), rows - 1);
    char p[200];
    snprintf(p, sizeof p, "/api/dead-letters/%s", ids[3]);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 404, "");
    snprintf(p, sizeof p, "/api/dead-letters/audit?deadLetterId=%s", ids[3]);
    r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 2); /* its dry run and its purge stay */
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(r.json, "audit"), 0), "action")),
                        "purge");
    sv_resp_free(&r);
}

static void test_outbox(void **state) {
    (void)state;
    char id[37];
    ob_append(db, schema, "order.placed", "{\"n\":1}", NULL, 1, id);
    ob_append(db, schema, "order.placed", "{\"n\":2}", NULL, 1, id);
    ob_append(db, schema, "order.placed", "{\"n\":3}", NULL, 0, id); /* rolled back */
    sv_resp r = sv_call(&srv, "GET", "/api/outbox", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "unpublished"), 2);
    json_t *t0 = json_array_get(json_object_get(r.json, "topics"), 0);
    assert_string_equal(json_string_value(json_object_get(t0, "topic")), "order.placed");
    assert_int_equal(sv_jint(t0, "unpublished"), 2);
    assert_true(json_is_null(json_object_get(t0, "routed")));
    assert_true(json_is_false(json_object_get(r.json, "routesGiven")));
    sv_resp_free(&r);

    /* with the relay's routes: a topic without a route is reported */
    ob_append(db, schema, "nobody.listens", "{\"n\":4}", NULL, 1, id);
    const char *routes = ob_file("routes", "order.placed payments:capture-payment\n");
    sv_server routed;
    sv_start(&routed, SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"),
                               "--schema", schema, "--routes", routes));
    sv_request(&routed, "GET", "/api/outbox", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "unpublished"), 3);
    assert_int_equal(sv_jint(r.json, "unroutedRows"), 1);
    assert_true(json_is_true(json_object_get(r.json, "routesGiven")));
    json_t *topics = json_object_get(r.json, "topics");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(topics); i++) {
        json_t *tp = json_array_get(topics, i);
        const char *name = json_string_value(json_object_get(tp, "topic"));
        json_t *known = json_object_get(tp, "routed");
        if (!strcmp(name, "order.placed")) seen += json_is_true(known);
        if (!strcmp(name, "nobody.listens")) seen += json_is_false(known);
    }
    assert_int_equal(seen, 2);
    sv_resp_free(&r);
    sv_stop(&routed);
}

/* a row whose data was kept as text cannot be redriven: refused with the reason, unchanged */
static void test_refused_row(void **state) {
    (void)state;
    char id[40];
    ferry_dlq_failure f = {.prefix = prefix,
                           .queue = "txt",
                           .job_id = "1",
                           .job_name = "x",
                           .data = "not json {",
                           .error = "bad",
                           .attempts_made = 1};
    ob_dlq_record(db, schema, &f, id);
    char p[200];
    snprintf(p, sizeof p, "/api/dead-letters/%s", id);
    sv_resp r = sv_call(&srv, "GET", p, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_true(json_is_false(json_object_get(r.json, "dataIsJson")));
    assert_string_equal(sv_json_str(&r, "data"), "not json {");
    sv_resp_free(&r);
    for (int exec = 0; exec < 2; exec++) {
        r = sv_call(&srv, "POST", "/api/dead-letters/redrive", ADMIN,
                    exec ? "{\"queue\":\"txt\",\"dryRun\":false}" : "{\"queue\":\"txt\"}");
        SV_EXPECT(r, 200);
        assert_int_equal(sv_jint(r.json, "refused"), 1);
        json_t *it = json_array_get(json_object_get(r.json, "items"), 0);
        assert_string_equal(json_string_value(json_object_get(it, "status")), "refused");
        assert_non_null(strstr(json_string_value(json_object_get(it, "reason")), "not JSON"));
        sv_resp_free(&r);
    }
    assert_int_equal(
        ob_ll(db, "SELECT redrive_count FROM %s.dead_letters WHERE id = '%s'", schema, id), 0);
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:txt:meta", prefix), 0);
}

static void test_without_database(void **state) {
    (void)state;
    unsetenv("DATABASE_URL");
    sv_server plain;
    sv_start(&plain, SV_FLAGS("--prefix", prefix));
    const char *paths[] = {"/api/dead-letters", "/api/dead-letters/audit",
                           "/api/dead-letters/0192f7c4-8b2a-7d1e-9f00-1a2b3c4d5e6f", "/api/outbox"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        sv_resp r;
        sv_request(&plain, "GET", paths[i], NULL, NULL, &r);
        SV_EXPECT(r, 503);
        assert_non_null(strstr(sv_json_str(&r, "error"), "database"));
        sv_resp_free(&r);
    }
    sv_stop(&plain);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_and_show), cmocka_unit_test(test_redrive),
        cmocka_unit_test(test_purge),         cmocka_unit_test(test_outbox),
        cmocka_unit_test(test_refused_row),   cmocka_unit_test(test_without_database),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}
