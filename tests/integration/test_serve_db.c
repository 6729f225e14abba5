/* test_serve_db.c - `ferry serve` with PostgreSQL, over real HTTP against the real binary
 * and the fixture's Redis and PostgreSQL: /readyz checks PostgreSQL (ready; 503 naming it
 * when the database does not answer); every request to an action route is a row of
 * <schema>.admin_audit with its actor, method, path, status, request id, remote and trace
 * id, refused ones too (401 "unknown", 403), reads none; an audit row that cannot be
 * written (schema not migrated) leaves the action done and its audit in the log with the
 * reason; the backlog SLO makes /readyz "degraded" (200) while a queue's oldest ready job
 * is older than it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ob.h"
#include "support/sv.h"

static const char *prefix;
static PGconn *db;

#define OPS_SECRET "ops-0123456789abcdef0123456789abcdef"
#define RO_SECRET "ro-0123456789abcdef0123456789abcdef-x"
#define AUTH(secret) "Authorization: Bearer " secret

static const char *token_file(void) {
    return sv_token_file("tokens",
                         "ops read,act " OPS_SECRET "\n"
                         "ro read " RO_SECRET "\n",
                         0600);
}

static int queue_paused(const char *name) {
    ferry_conn *c = th_conn();
    long long n = th_cmd_int(c, "HEXISTS %s:%s:meta paused", prefix, name);
    ferry__conn_close(c);
    return (int)n;
}

static void test_readyz_postgres(void **state) {
    (void)state;
    const char *url = th_env_require("DATABASE_URL");
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--database", url));
    sv_resp r;
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    json_t *pg = json_object_get(json_object_get(r.json, "checks"), "postgres");
    assert_true(json_is_true(json_object_get(pg, "ok")));
    sv_resp_free(&r);
    sv_stop(&s);

    /* a database that accepts connections and never answers: 503 within the deadline */
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    assert_true(fd >= 0);
    char bad[128];
    snprintf(bad, sizeof bad, "postgresql://ferry:sekrit-pw@127.0.0.1:%d/ferry", port);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--database", bad, "--ready-timeout", "400"));
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 503);
    assert_string_equal(sv_json_str(&r, "status"), "unready");
    json_t *checks = json_object_get(r.json, "checks");
    assert_true(json_is_true(json_object_get(json_object_get(checks, "redis"), "ok")));
    pg = json_object_get(checks, "postgres");
    assert_true(json_is_false(json_object_get(pg, "ok")));
    assert_non_null(json_string_value(json_object_get(pg, "error")));
    assert_null(strstr(r.body, "sekrit-pw"));
    sv_resp_free(&r);
    sv_stop(&s);
    char *log = sv_log(&s);
    assert_null(strstr(log, "sekrit-pw"));
    free(log);
    close(fd);
}

static void test_audit_rows(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    ferry_queue_close(th_queue_open(prefix, "aq", NULL, 0));
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"),
                          "--schema", schema, "--token-file", token_file()));
    sv_resp r;
    sv_request(&s, "POST", "/api/queues/aq/pause",
               SV_HEADERS(AUTH(OPS_SECRET), "X-Request-Id: audit-1",
                          "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
               NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_request(&s, "POST", "/api/queues/aq/resume",
               SV_HEADERS(AUTH(RO_SECRET), "X-Request-Id: audit-2"), NULL, &r);
    SV_EXPECT(r, 403);
    sv_resp_free(&r);
    sv_request(&s, "POST", "/api/queues/aq/resume", SV_HEADERS("X-Request-Id: audit-3"), NULL, &r);
    SV_EXPECT(r, 401);
    sv_resp_free(&r);
    sv_request(&s, "POST", "/api/queues/aq/resume",
               SV_HEADERS(AUTH(OPS_SECRET), "X-Request-Id: audit-4"), "{bad", &r);
    SV_EXPECT(r, 400);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/api/queues/aq", NULL, NULL, &r); /* a read: no row */
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("aq"), 1); /* only the first one acted */

    /* the rows are written before the answers were sent */
    PGresult *res = ob_sql(db,
                           "SELECT actor, method, path, status, request_id, remote, "
                           "coalesce(trace_id, '-'), at > now() - interval '1 minute' "
                           "FROM %s.admin_audit ORDER BY id",
                           schema);
    assert_int_equal(PQntuples(res), 4);
    const char *want[4][5] = {{"ops", "POST", "/api/queues/aq/pause", "200", "audit-1"},
                              {"ro", "POST", "/api/queues/aq/resume", "403", "audit-2"},
                              {"unknown", "POST", "/api/queues/aq/resume", "401", "audit-3"},
                              {"ops", "POST", "/api/queues/aq/resume", "400", "audit-4"}};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 5; k++)
            assert_string_equal(PQgetvalue(res, i, k), want[i][k]);
        assert_non_null(strstr(PQgetvalue(res, i, 5), "127.0.0.1:"));
        assert_string_equal(PQgetvalue(res, i, 7), "t");
    }
    assert_string_equal(PQgetvalue(res, 0, 6), "0af7651916cd43dd8448eb211c80319c");
    assert_string_equal(PQgetvalue(res, 1, 6), "-");
    PQclear(res);
    sv_stop(&s);
}

static void test_audit_row_fails(void **state) {
    (void)state;
    ferry_queue_close(th_queue_open(prefix, "fq", NULL, 0));
    /* a schema without ferry's tables: the row cannot be written */
    ob_exec(db, "DROP SCHEMA IF EXISTS serve_unmigrated CASCADE");
    ob_exec(db, "CREATE SCHEMA serve_unmigrated");
    sv_server s;
    sv_start(&s,
             SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"), "--schema",
                      "serve_unmigrated", "--token-file", token_file(), "--log-format", "json"));
    sv_resp r;
    sv_request(&s, "POST", "/api/queues/fq/pause",
               SV_HEADERS(AUTH(OPS_SECRET), "X-Request-Id: audit-fail-1"), NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("fq"), 1);
    sv_stop(&s);
    ob_exec(db, "DROP SCHEMA serve_unmigrated CASCADE");
    char *log = sv_log(&s);
    int found = 0, started = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) fail_msg("not JSON: %s", line);
        const char *ev = json_string_value(json_object_get(j, "event"));
        const char *msg = json_string_value(json_object_get(j, "msg"));
        if (ev && !strcmp(ev, "serve.event") && msg && strstr(msg, "action started") &&
            strstr(msg, "audit-fail-1"))
            started = 1;
        if (ev && !strcmp(ev, "serve.audit")) {
            found = 1;
            assert_string_equal(json_string_value(json_object_get(j, "actor")), "ops");
            assert_int_equal(json_integer_value(json_object_get(j, "status")), 200);
            assert_string_equal(json_string_value(json_object_get(j, "request_id")),
                                "audit-fail-1");
            assert_string_equal(json_string_value(json_object_get(j, "level")), "error");
            assert_non_null(
                strstr(json_string_value(json_object_get(j, "audit_error")), "admin_audit"));
        }
        json_decref(j);
    }
    free(log);
    assert_true(found);
    assert_true(started);
}

/* The most significant digits of any number with a fraction in a JSON text: reals are
 * written with 15 at most, so a computed age does not read 3600.1230000000001. */
static int most_fraction_digits(const char *text) {
    int most = 0;
    for (const char *p = text; *p; p++) {
        if (!(*p >= '0' && *p <= '9') ||
            (p > text && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
            continue;
        int digits = 0, lead = 1, fraction = 0;
        const char *q = p;
        for (; (*q >= '0' && *q <= '9') || *q == '.'; q++) {
            if (*q == '.') {
                fraction = 1;
                continue;
            }
            if (lead && *q == '0') continue;
            lead = 0;
            digits++;
        }
        if (fraction && digits > most) most = digits;
        p = q - 1;
    }
    return most;
}

static void test_backlog_slo(void **state) {
    (void)state;
    /* jobs that have been ready for an hour (their timestamps set back), in queue "slo" and
     * in seven more whose ages differ by some ms, so their ages are not all round numbers */
    ferry_conn *c = th_conn();
    long long now = (long long)time(NULL) * 1000;
    for (int k = 0; k < 8; k++) {
        char qname[16];
        snprintf(qname, sizeof qname, k ? "slo%d" : "slo", k);
        ferry_queue *q = th_queue_open(prefix, qname, NULL, 0);
        ferry_job_spec job = {.name = "old", .data_json = "{}"};
        char *id = NULL;
        ferry_error e = {0};
        if (ferry_queue_add(q, &job, &id, &e)) fail_msg("add: %s", e.message);
        ferry_queue_close(q);
        freeReplyObject(th_cmd_ok(c, "HSET %s:%s:%s timestamp %lld", prefix, qname, id,
                                  now - 3600 * 1000 - k * 1237));
        free(id);
    }
    ferry__conn_close(c);

    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--slo-backlog-age", "10m"));
    sv_resp r;
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "status"), "degraded");
    json_t *b = json_object_get(json_object_get(r.json, "checks"), "backlog");
    assert_true(json_is_false(json_object_get(b, "ok")));
    json_t *breaches = json_object_get(b, "breaches"), *first = NULL, *x;
    size_t i;
    json_array_foreach(breaches, i, x) {
        if (strcmp(json_string_value(json_object_get(x, "queue")), "slo") == 0) first = x;
    }
    assert_non_null(first);
    assert_true(json_real_value(json_object_get(first, "oldestReadyAgeSeconds")) > 3500);
    assert_in_range(most_fraction_digits(r.body), 1, 15);
    sv_resp_free(&r);
    sv_stop(&s);

    sv_start(&s, SV_FLAGS("--prefix", prefix, "--slo-backlog-age", "2h"));
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "status"), "ready");
    b = json_object_get(json_object_get(r.json, "checks"), "backlog");
    assert_true(json_is_true(json_object_get(b, "ok")));
    assert_true(json_integer_value(json_object_get(b, "queuesChecked")) >= 1);
    sv_resp_free(&r);
    sv_stop(&s);
}

static int group_setup(void **state) {
    (void)state;
    db = ob_pg();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ob_drop_schemas(db);
    PQfinish(db);
    return 0;
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readyz_postgres),
        cmocka_unit_test(test_audit_rows),
        cmocka_unit_test(test_audit_row_fails),
        cmocka_unit_test(test_backlog_slo),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}
