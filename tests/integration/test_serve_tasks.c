/* test_serve_tasks.c - `ferry serve`'s server-side tasks and GET /api/audit, over real HTTP
 * against the real binary with Redis and PostgreSQL: a retry-all of 20000 failed jobs polled
 * until done (seen midway, counts match Redis), a selector (only the matches move), null
 * selector members and cancel bodies with unknown members refused, a task stopped at the
 * server's scan limit (state "stopped", its message and audit row), a start that prunes a
 * finished task still writing its audit row without waiting for it, a cancel midway
 * (some retried, state cancelled, the rest still failed, 409 after), the 5th concurrent
 * task refused with 429, wrong and read-only tokens refused with nothing moved, SIGTERM
 * while a task runs (exit 0 promptly, task cancelled), the audit rows of the request and
 * of the finish, and GET /api/audit's filters, paging and bad parameters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ob.h"
#include "support/sv.h"
#include "util/clock.h"

#define FERRY_TEST_KEPT 32 /* finished tasks the registry keeps (tasks.h) */

static const char *prefix;
static PGconn *db;
static ferry_conn *rc_conn;

#define OPS_SECRET "ops-0123456789abcdef0123456789abcdef"
#define RO_SECRET "ro-0123456789abcdef0123456789abcdef-x"
#define AUTH(secret) "Authorization: Bearer " secret
#define OPS AUTH(OPS_SECRET)

static const char *token_file(void) {
    return sv_token_file("tokens",
                         "ops read,act " OPS_SECRET "\n"
                         "ro read " RO_SECRET "\n",
                         0600);
}

/* n failed jobs "j<i>" of queue `queue`, written inside Redis in one script: name "even"
 * or "odd" by i, failedReason "boom <i>", finished (and scored) in the past, oldest first. */
static void put_failed(const char *queue, long long n) {
    ferry_queue_close(th_queue_open(prefix, queue, NULL, 0)); /* its meta: the queue exists */
    char base[256];
    snprintf(base, sizeof base, "%s:%s:", prefix, queue);
    long long t = (long long)ferry__now_ms() - 3600000;
    freeReplyObject(th_cmd_ok(
        rc_conn, "EVAL %s 0 %s %lld %lld",
        "local base, n, t = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]) "
        "for i = 0, n - 1 do local id = 'j' .. i "
        "redis.call('HSET', base .. id, 'name', (i % 2 == 0) and 'even' or 'odd', 'data', "
        "'{\"i\":' .. i .. '}', 'opts', '{}', 'timestamp', t, 'delay', 0, 'priority', 0, "
        "'processedOn', t + i, 'finishedOn', t + i + 1, 'atm', 1, 'ats', 1, "
        "'failedReason', 'boom ' .. i) "
        "redis.call('ZADD', base .. 'failed', t + i + 1, id) end return n",
        base, n, t));
}

static long long zcard(const char *queue, const char *set) {
    return th_cmd_int(rc_conn, "ZCARD %s:%s:%s", prefix, queue, set);
}
static long long llen(const char *queue, const char *list) {
    return th_cmd_int(rc_conn, "LLEN %s:%s:%s", prefix, queue, list);
}

static void start_server_env(sv_server *s, const char *schema, const char *const *env) {
    sv_start_env(s,
                 SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"),
                          "--schema", schema, "--token-file", token_file()),
                 env);
}

static void start_server(sv_server *s, const char *schema) {
    start_server_env(s, schema, NULL);
}

/* POST retry-all; expects 202; returns the task id (malloc'd). */
static char *start_task(sv_server *s, const char *queue, const char *body) {
    char path[256];
    snprintf(path, sizeof path, "/api/queues/%s/retry-all", queue);
    sv_resp r = sv_call(s, "POST", path, OPS, body);
    SV_EXPECT(r, 202);
    json_t *task = json_object_get(r.json, "task");
    assert_string_equal(json_string_value(json_object_get(task, "state")), "running");
    assert_string_equal(json_string_value(json_object_get(task, "kind")), "retry-all");
    assert_string_equal(json_string_value(json_object_get(task, "createdBy")), "ops");
    char *id = strdup(json_string_value(json_object_get(task, "id")));
    assert_int_equal(strncmp(id, "t-", 2), 0);
    sv_resp_free(&r);
    return id;
}

/* Poll GET /api/tasks/{id} until it is not running (15 s at most); returns the last TASK
 * (json_decref it); *partial = 1 when a poll saw it running with some but not all of its
 * jobs looked at (0 < scanned < total) and some retried. */
static json_t *wait_task(sv_server *s, const char *id, int *partial) {
    char path[128];
    snprintf(path, sizeof path, "/api/tasks/%s", id);
    long long deadline = th_mono_ms() + 15000;
    for (;;) {
        sv_resp r = sv_call(s, "GET", path, NULL, NULL);
        SV_EXPECT(r, 200);
        json_t *t = json_incref(json_object_get(r.json, "task"));
        sv_resp_free(&r);
        const char *st = json_string_value(json_object_get(t, "state"));
        if (strcmp(st, "running") != 0) return t;
        long long scanned = sv_jint(t, "scanned"), total = sv_jint(t, "total");
        if (partial && scanned > 0 && scanned < total && sv_jint(t, "retried") > 0) *partial = 1;
        json_decref(t);
        if (th_mono_ms() > deadline) fail_msg("task %s still running after 15 s", id);
        th_sleep_ms(5);
    }
}

static void test_retry_all_and_audit(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    put_failed("big", 20000);
    sv_server s;
    start_server(&s, schema);

    /* refused: no token, a wrong one, a read-only one; nothing moved */
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", NULL, NULL, 401, "");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", AUTH("wrong-secret-0123456789"), NULL,
                    401, "");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", AUTH(RO_SECRET), NULL, 403, "");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS, "{\"state\":\"wait\"}", 400,
                    "state");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS, "{\"nme\":\"x\"}", 400, "nme");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS,
                    "{\"state\":\"completed\",\"reasonContains\":\"x\"}", 400, "reasonContains");
    for (int k = 0; k < 2; k++) { /* a selector text past its bound: 400, no task */
        char *body = malloc(4200);
        int n = snprintf(body, 4200, "{\"%s\":\"", k ? "dataContains" : "reasonContains");
        memset(body + n, 'x', 4097);
        strcpy(body + n + 4097, "\"}");
        sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS, body, 400,
                        k ? "dataContains" : "reasonContains");
        free(body);
    }
    /* null is not "any": a selector member given as null is refused */
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS, "{\"name\":null}", 400,
                    "body member name: must be a string");
    sv_expect_error(&s, "POST", "/api/queues/big/retry-all", OPS, "{\"dataContains\":null}", 400,
                    "dataContains");
    sv_expect_error(&s, "POST", "/api/queues/nosuchq/retry-all", OPS, NULL, 404, "nosuchq");
    sv_expect_error(&s, "GET", "/api/tasks/t-nope", NULL, NULL, 404, "t-nope");
    sv_expect_error(&s, "POST", "/api/tasks/t-nope/cancel", OPS, NULL, 404, "t-nope");
    assert_int_equal(zcard("big", "failed"), 20000);

    char *id = start_task(&s, "big", NULL);
    /* a cancel body may only be empty */
    char cpath[128];
    snprintf(cpath, sizeof cpath, "/api/tasks/%s/cancel", id);
    sv_expect_error(&s, "POST", cpath, OPS, "{\"force\":true}", 400, "force");
    int partial = 0;
    json_t *t = wait_task(&s, id, &partial);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    assert_int_equal(sv_jint(t, "total"), 20000);
    assert_int_equal(sv_jint(t, "scanned"), 20000);
    assert_int_equal(sv_jint(t, "matched"), 20000);
    assert_int_equal(sv_jint(t, "retried"), 20000);
    assert_int_equal(sv_jint(t, "skipped"), 0);
    assert_true(json_is_null(json_object_get(t, "error")));
    assert_true(json_is_null(json_object_get(t, "message")));
    assert_true(sv_jint(t, "finishedAt") >= sv_jint(t, "createdAt"));
    /* a poll saw it midway, and the final counts are what Redis holds */
    assert_true(partial);
    assert_int_equal(zcard("big", "failed"), sv_jint(t, "total") - sv_jint(t, "retried"));
    assert_int_equal(llen("big", "wait"), sv_jint(t, "retried"));
    json_decref(t);

    /* a selector: only the "odd" jobs whose reason contains "boom 1" */
    put_failed("sel", 200);
    char *id2 = start_task(&s, "sel", "{\"name\":\"odd\",\"reasonContains\":\"boom 1\"}");
    t = wait_task(&s, id2, NULL);
    /* odd i with a reason "boom 1...": 1, 11, 13, ..., 19, 101, 103, ..., 199 */
    assert_int_equal(sv_jint(t, "matched"), 1 + 5 + 50);
    assert_int_equal(sv_jint(t, "retried"), 56);
    json_t *sel = json_object_get(t, "selector");
    assert_string_equal(json_string_value(json_object_get(sel, "name")), "odd");
    assert_true(json_is_null(json_object_get(sel, "dataContains")));
    json_decref(t);
    assert_int_equal(zcard("sel", "failed"), 200 - 56);
    char key[256];
    snprintf(key, sizeof key, "%s:sel:failed", prefix);
    char *sc = th_zscore(rc_conn, key, "j3"); /* odd, "boom 3": stays */
    assert_non_null(sc);
    free(sc);
    assert_null(th_zscore(rc_conn, key, "j11"));

    /* the list, newest first; finished tasks cannot be cancelled */
    sv_resp r = sv_call(&s, "GET", "/api/tasks", NULL, NULL);
    SV_EXPECT(r, 200);
    json_t *tasks = json_object_get(r.json, "tasks");
    assert_int_equal(json_array_size(tasks), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "id")), id2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 1), "id")), id);
    sv_resp_free(&r);
    char path[128];
    snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
    sv_expect_error(&s, "POST", path, OPS, NULL, 409, "finished");

    /* the audit rows: the request and the finish */
    PGresult *res = ob_sql(db,
                           "SELECT actor, method, path, status, coalesce(summary, '') FROM "
                           "%s.admin_audit WHERE path LIKE '%%/big/retry-all' OR path = "
                           "'/api/tasks/%s' ORDER BY id",
                           schema, id);
    int n = PQntuples(res);
    assert_true(n >= 2);
    /* the last two: the 202, then the task's own row */
    assert_string_equal(PQgetvalue(res, n - 2, 0), "ops");
    assert_string_equal(PQgetvalue(res, n - 2, 3), "202");
    assert_non_null(strstr(PQgetvalue(res, n - 2, 4), id));
    assert_string_equal(PQgetvalue(res, n - 1, 1), "TASK");
    assert_string_equal(PQgetvalue(res, n - 1, 3), "200");
    char want[256];
    snprintf(want, sizeof want,
             "task %s retry-all big: retried 20000 of 20000 matched, 20000 "
             "scanned; done",
             id);
    assert_string_equal(PQgetvalue(res, n - 1, 4), want);
    PQclear(res);

    /* GET /api/audit: newest first, filters, paging */
    r = sv_call(&s, "GET", "/api/audit", NULL, NULL);
    SV_EXPECT(r, 200);
    json_t *rows = json_object_get(r.json, "audit");
    size_t all = json_array_size(rows);
    assert_true(all >= 12);
    assert_true(json_is_false(json_object_get(r.json, "more")));
    long long first = sv_jint(json_array_get(rows, 0), "id");
    assert_true(first > sv_jint(json_array_get(rows, 1), "id"));
    json_t *row0 = json_array_get(rows, 0);
    assert_non_null(json_string_value(json_object_get(row0, "at")));
    assert_non_null(strstr(json_string_value(json_object_get(row0, "at")), "Z"));
    sv_resp_free(&r);

    r = sv_call(&s, "GET", "/api/audit?actor=unknown", NULL, NULL);
    SV_EXPECT(r, 200);
    rows = json_object_get(r.json, "audit");
    assert_int_equal(json_array_size(rows), 2); /* the two 401s */
    assert_int_equal(sv_jint(json_array_get(rows, 0), "status"), 401);
    sv_resp_free(&r);

    r = sv_call(&s, "GET", "/api/audit?pathContains=%2Fapi%2Ftasks%2F&limit=1", NULL, NULL);
    SV_EXPECT(r, 200);
    rows = json_object_get(r.json, "audit");
    assert_int_equal(json_array_size(rows), 1);
    assert_true(json_is_true(json_object_get(r.json, "more")));
    long long top = sv_jint(json_array_get(rows, 0), "id");
    sv_resp_free(&r);
    char q[256];
    snprintf(q, sizeof q, "/api/audit?pathContains=%%2Fapi%%2Ftasks%%2F&before=%lld", top);
    r = sv_call(&s, "GET", q, NULL, NULL);
    SV_EXPECT(r, 200);
    rows = json_object_get(r.json, "audit");
    assert_true(json_array_size(rows) >= 1);
    for (size_t i = 0; i < json_array_size(rows); i++)
        assert_true(sv_jint(json_array_get(rows, i), "id") < top);
    sv_resp_free(&r);

    r = sv_call(&s, "GET", "/api/audit?since=2000-01-01T00:00:00Z&until=2000-01-02", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "audit")), 0);
    sv_resp_free(&r);

    sv_expect_error(&s, "GET", "/api/audit?limit=0", NULL, NULL, 400, "limit");
    sv_expect_error(&s, "GET", "/api/audit?limit=1001", NULL, NULL, 400, "limit");
    sv_expect_error(&s, "GET", "/api/audit?before=abc", NULL, NULL, 400, "before");
    sv_expect_error(&s, "GET", "/api/audit?since=yesterday", NULL, NULL, 400, "since");
    sv_expect_error(&s, "GET", "/api/audit?since=2026-01-02&until=2026-01-01", NULL, NULL, 400,
                    "until");
    sv_expect_error(&s, "GET", "/api/audit?actor=", NULL, NULL, 400, "actor");

    /* the registry keeps the last 32 finished tasks (2 so far + 33 more) */
    put_failed("tiny", 1);
    char *last = NULL;
    for (int i = 0; i < 33; i++) {
        free(last);
        last = start_task(&s, "tiny", NULL);
        json_decref(wait_task(&s, last, NULL));
    }
    r = sv_call(&s, "GET", "/api/tasks", NULL, NULL);
    SV_EXPECT(r, 200);
    tasks = json_object_get(r.json, "tasks");
    assert_int_equal(json_array_size(tasks), 32);
    assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "id")), last);
    sv_resp_free(&r);
    snprintf(path, sizeof path, "/api/tasks/%s", id); /* the oldest: dropped */
    sv_expect_error(&s, "GET", path, NULL, NULL, 404, id);
    free(last);
    free(id);
    free(id2);
    sv_stop(&s);
}

static void test_cancel_limit_and_stop(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    put_failed("huge", 40000);
    sv_server s;
    start_server(&s, schema);

    /* a cancel midway: some retried, the rest still failed */
    char *id = start_task(&s, "huge", NULL);
    char path[128];
    snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
    sv_resp r = sv_call(&s, "POST", path, OPS, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    json_t *t = wait_task(&s, id, NULL);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "cancelled");
    long long retried = sv_jint(t, "retried");
    assert_true(retried < 40000);
    assert_int_equal(sv_jint(t, "total"), 40000);
    json_decref(t);
    assert_int_equal(zcard("huge", "failed"), 40000 - retried);
    assert_int_equal(llen("huge", "wait"), retried);
    free(id);

    /* 4 at once, the 5th refused; then a stop while they run */
    char *ids[4];
    for (int i = 0; i < 4; i++)
        ids[i] = start_task(&s, "huge", NULL);
    sv_expect_error(&s, "POST", "/api/queues/huge/retry-all", OPS, NULL, 429, "at most 4");
    long long t0 = th_mono_ms();
    assert_int_equal(sv_stop_code(&s, 10000), 0);
    assert_true(th_mono_ms() - t0 < 5000);
    /* each ended cancelled (or done, had it finished first) and wrote its row */
    for (int i = 0; i < 4; i++) {
        PGresult *res = ob_sql(db,
                               "SELECT summary FROM %s.admin_audit WHERE path = "
                               "'/api/tasks/%s' AND method = 'TASK'",
                               schema, ids[i]);
        assert_int_equal(PQntuples(res), 1);
        const char *sum = PQgetvalue(res, 0, 0);
        assert_true(strstr(sum, "; cancelled") || strstr(sum, "; done"));
        PQclear(res);
        free(ids[i]);
    }
    assert_true(zcard("huge", "failed") > 0); /* the stop came before the end */
    /* the refused 5th has its audit row, and the row says why */
    PGresult *res = ob_sql(db,
                           "SELECT summary FROM %s.admin_audit WHERE path = "
                           "'/api/queues/huge/retry-all' AND status = 429",
                           schema);
    assert_int_equal(PQntuples(res), 1);
    if (!strstr(PQgetvalue(res, 0, 0), "at most 4")) fail_msg("summary: %s", PQgetvalue(res, 0, 0));
    PQclear(res);
}

/* A server whose tasks look at 250 jobs at most: a retry-all over 1000 stops there, as its
 * own end ("stopped", with a message), not "done"; its audit row says so too. */
static void test_scan_limit_stop(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    put_failed("capped", 1000);
    sv_server s;
    start_server_env(&s, schema, SV_FLAGS("FERRY_SERVE_TASK_SCAN_MAX=250"));
    char *id = start_task(&s, "capped", "{\"name\":\"odd\"}");
    json_t *t = wait_task(&s, id, NULL);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "stopped");
    assert_int_equal(sv_jint(t, "scanMax"), 250);
    assert_int_equal(sv_jint(t, "total"), 1000);
    assert_int_equal(sv_jint(t, "scanned"), 250);
    assert_int_equal(sv_jint(t, "retried"), 125);
    assert_true(json_is_null(json_object_get(t, "error")));
    const char *msg = json_string_value(json_object_get(t, "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, "scan limit of 250 jobs"));
    assert_non_null(strstr(msg, "250 of the 1000 jobs were looked at"));
    assert_non_null(strstr(msg, "start the retry-all again"));
    json_decref(t);
    assert_int_equal(zcard("capped", "failed"), 1000 - 125);
    assert_int_equal(llen("capped", "wait"), 125);
    char path[128];
    snprintf(path, sizeof path, "/api/tasks/%s/cancel", id);
    sv_expect_error(&s, "POST", path, OPS, NULL, 409, "stopped");
    sv_stop(&s);
    PGresult *res = ob_sql(db,
                           "SELECT summary FROM %s.admin_audit WHERE path = '/api/tasks/%s' AND "
                           "method = 'TASK'",
                           schema, id);
    assert_int_equal(PQntuples(res), 1);
    assert_non_null(strstr(PQgetvalue(res, 0, 0), "; stopped: stopped at the scan limit of 250"));
    PQclear(res);
    free(id);

    /* a limit that is not a number of jobs: the server does not start */
    cli_run r;
    cli_exec_env(
        &r, NULL, SV_FLAGS("FERRY_SERVE_TASK_SCAN_MAX=lots"),
        SV_FLAGS("serve", "--listen", "127.0.0.1:0", "--redis", cli_url(), "--prefix", prefix));
    assert_int_not_equal(r.code, 0);
    assert_non_null(strstr(r.err, "FERRY_SERVE_TASK_SCAN_MAX"));
    cli_run_free(&r);
}

/* A start that drops the oldest finished task past the kept 32 while that task's thread is
 * still writing its audit row (made slow by a trigger) answers at once: the registry's lock
 * is not held, nor the request kept, for that thread. */
static void test_prune_does_not_wait(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    put_failed("slowq", 1);
    put_failed("tiny2", 1);
    sv_server s;
    start_server(&s, schema);
    PQclear(ob_sql(db,
                   "CREATE FUNCTION %s.slow_task_audit() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   "BEGIN IF NEW.method = 'TASK' AND NEW.summary LIKE '%% retry-all slowq:%%' "
                   "THEN PERFORM pg_sleep(6); END IF; RETURN NEW; END $$",
                   schema));
    PQclear(ob_sql(db,
                   "CREATE TRIGGER slow_task_audit BEFORE INSERT ON %s.admin_audit FOR EACH ROW "
                   "EXECUTE FUNCTION %s.slow_task_audit()",
                   schema, schema));
    long long t0 = th_mono_ms();
    char *slow = start_task(&s, "slowq", NULL);
    json_decref(wait_task(&s, slow, NULL)); /* finished; its thread now sleeps in the audit */
    char *last = NULL;
    for (int i = 0; i < FERRY_TEST_KEPT; i++) {
        free(last);
        last = start_task(&s, "tiny2", NULL);
        json_decref(wait_task(&s, last, NULL));
    }
    /* 33 finished now: this start prunes the slow one */
    long long t1 = th_mono_ms();
    if (t1 - t0 > 4000) th_skip("too slow a machine to see the audit still running");
    free(last);
    last = start_task(&s, "tiny2", NULL);
    long long took = th_mono_ms() - t1;
    if (took >= 1500) fail_msg("the start that pruned took %lld ms", took);
    t1 = th_mono_ms();
    sv_resp r = sv_call(&s, "GET", "/api/tasks", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_true(th_mono_ms() - t1 < 1500);
    /* the slow one is past the kept 32: not shown, though not dropped yet */
    json_t *tasks = json_object_get(r.json, "tasks");
    for (size_t i = 0; i < json_array_size(tasks); i++)
        assert_string_not_equal(json_string_value(json_object_get(json_array_get(tasks, i), "id")),
                                slow);
    sv_resp_free(&r);
    json_decref(wait_task(&s, last, NULL));
    sv_stop(&s); /* joins the slow one after its row */
    PGresult *res = ob_sql(db,
                           "SELECT count(*) FROM %s.admin_audit WHERE path = '/api/tasks/%s' AND "
                           "method = 'TASK'",
                           schema, slow);
    assert_string_equal(PQgetvalue(res, 0, 0), "1");
    PQclear(res);
    free(last);
    free(slow);
}

static int group_setup(void **state) {
    (void)state;
    db = ob_pg();
    rc_conn = th_conn();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    ob_drop_schemas(db);
    PQfinish(db);
    ferry__conn_close(rc_conn);
    return 0;
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_all_and_audit),
        cmocka_unit_test(test_cancel_limit_and_stop),
        cmocka_unit_test(test_scan_limit_stop),
        cmocka_unit_test(test_prune_does_not_wait),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}
