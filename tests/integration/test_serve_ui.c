/* test_serve_ui.c - the dashboard side of `ferry serve` over real HTTP against the real
 * binary and the fixture's Redis and PostgreSQL: every file of src/admin/assets served at
 * /ui/<file> byte for byte (and index.html at /), with its content type, the security
 * headers (CSP, X-Frame-Options, Referrer-Policy, nosniff, no-cache) and an ETag that gives
 * 304; HEAD; 404 for an unknown file and for every spelling of a path out of the directory;
 * the JSON CSP on API answers; --read-only refusing every action route family with 403
 * (audited, the queue unchanged) while reads answer; /api/info; /api/whoami (401 without or
 * with a wrong token, even with open reads); /api/overview's numbers equal to what the test
 * put in Redis and PostgreSQL (counts, totals, throughput of recent finishes, outbox rows,
 * dead letters, inbox markers) and null + a reason for the database parts without one. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ferry/deadletter.h"
#include "support/ob.h"
#include "support/sv.h"
#include "util/clock.h"

static char prefix[128];
static PGconn *db;

#define ADMIN_SECRET "admin-0123456789abcdef0123456789abcdef"
#define READER_SECRET "reader-0123456789abcdef0123456789abcdef"
#define AUTH(secret) "Authorization: Bearer " secret

#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src "        \
    "'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
#define JSON_CSP "default-src 'none'; frame-ancestors 'none'"

static const char *token_file(void) {
    return sv_token_file("tokens",
                         "admin read,act,redrive " ADMIN_SECRET "\n"
                         "reader read " READER_SECRET "\n",
                         0600);
}

static void expect_header(const sv_resp *r, const char *name, const char *want) {
    char *v = sv_header(r, name);
    if (!v || strcmp(v, want) != 0)
        fail_msg("header %s: got \"%s\", want \"%s\"\n%s", name, v ? v : "(none)", want,
                 r->headers);
    free(v);
}

static const char *type_of(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot) return NULL;
    if (!strcmp(dot, ".html")) return "text/html; charset=utf-8";
    if (!strcmp(dot, ".js")) return "text/javascript; charset=utf-8";
    if (!strcmp(dot, ".css")) return "text/css; charset=utf-8";
    if (!strcmp(dot, ".svg")) return "image/svg+xml";
    if (!strcmp(dot, ".png")) return "image/png";
    if (!strcmp(dot, ".ico")) return "image/x-icon";
    if (!strcmp(dot, ".txt")) return "text/plain; charset=utf-8";
    return NULL;
}

/* The file's bytes (malloc'd) and length. */
static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (n && fread(buf, 1, (size_t)n, f) != (size_t)n) fail_msg("read %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* GET path: 200, the bytes of file, the UI headers; then 304 with its ETag, HEAD. */
static void expect_asset(const sv_server *s, const char *path, const char *file, const char *type) {
    size_t len = 0;
    char *want = read_file(file, &len);
    sv_resp r;
    sv_request(s, "GET", path, NULL, NULL, &r);
    SV_EXPECT(r, 200);
    if (r.body_len != len || memcmp(r.body, want, len) != 0)
        fail_msg("%s: %zu bytes served, the file %s has %zu (or they differ)", path, r.body_len,
                 file, len);
    if (type) expect_header(&r, "Content-Type", type);
    expect_header(&r, "Content-Security-Policy", UI_CSP);
    expect_header(&r, "X-Frame-Options", "DENY");
    expect_header(&r, "Referrer-Policy", "no-referrer");
    expect_header(&r, "X-Content-Type-Options", "nosniff");
    expect_header(&r, "Cache-Control", "no-cache");
    char *etag = sv_header(&r, "ETag");
    assert_non_null(etag);
    assert_true(strlen(etag) == 18 && etag[0] == '"' && etag[17] == '"');
    sv_resp_free(&r);

    char inm[128];
    snprintf(inm, sizeof inm, "If-None-Match: %s", etag);
    sv_request(s, "GET", path, SV_HEADERS(inm), NULL, &r);
    SV_EXPECT(r, 304);
    assert_int_equal(r.body_len, 0);
    expect_header(&r, "ETag", etag);
    sv_resp_free(&r);
    /* another tag: the file again */
    sv_request(s, "GET", path, SV_HEADERS("If-None-Match: \"0000000000000000\""), NULL, &r);
    SV_EXPECT(r, 200);
    assert_int_equal(r.body_len, len);
    sv_resp_free(&r);
    sv_request(s, "HEAD", path, NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_int_equal(r.body_len, 0);
    expect_header(&r, "ETag", etag);
    sv_resp_free(&r);
    free(etag);
    free(want);
}

static void test_assets(void **state) {
    (void)state;
    char dir[1024];
    const char *src = getenv("FERRY_SOURCE_DIR"); /* ctest sets it */
    if (!src) fail_msg("FERRY_SOURCE_DIR is not set: run through ctest");
    snprintf(dir, sizeof dir, "%s/src/admin/assets", src);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    DIR *d = opendir(dir);
    if (!d) fail_msg("no %s: the dashboard's files", dir);
    int nfiles = 0, index = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char file[2048], path[1200];
        if (!strcmp(e->d_name, "README.md")) { /* the folder's notes: not served */
            sv_resp r;
            sv_request(&s, "GET", "/ui/README.md", NULL, NULL, &r);
            assert_int_equal(r.status, 404);
            sv_resp_free(&r);
            continue;
        }
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(file, &st) || !S_ISREG(st.st_mode)) continue;
        snprintf(path, sizeof path, "/ui/%s", e->d_name);
        expect_asset(&s, path, file, type_of(e->d_name));
        nfiles++;
        if (!strcmp(e->d_name, "index.html")) {
            index = 1;
            expect_asset(&s, "/", file, "text/html; charset=utf-8");
        }
    }
    closedir(d);
    assert_true(nfiles > 0);
    assert_true(index);

    /* unknown files and every way out of the directory: 404, JSON, no file content */
    const char *missing[] = {"/ui/nope.js",         "/ui/../server.c",
                             "/ui/%2e%2e/server.c", "/ui/..%2fserver.c",
                             "/ui/%2e%2e%2fui.c",   "/ui/..%2F..%2FCMakeLists.txt",
                             "/ui/./index.html",    "/ui/%2findex.html",
                             "/ui/index.html%00",   "/ui/"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        sv_resp r;
        sv_request(&s, "GET", missing[i], NULL, NULL, &r);
        if (r.status != 404 && r.status != 400)
            fail_msg("%s: HTTP %ld, want 404 (or 400 for a malformed path)\n%s", missing[i],
                     r.status, r.body);
        assert_non_null(sv_json_str(&r, "error"));
        assert_null(strstr(r.body, "#include"));
        sv_resp_free(&r);
    }
    sv_resp r;
    sv_request(&s, "GET", "/ui/nope.js", NULL, NULL, &r);
    SV_EXPECT(r, 404);
    sv_resp_free(&r);
    /* the UI takes no other method */
    sv_request(&s, "POST", "/ui/index.html", NULL, "{}", &r);
    SV_EXPECT(r, 405);
    sv_resp_free(&r);

    /* JSON answers carry the API's own CSP, framing refused */
    sv_request(&s, "GET", "/api/info", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    expect_header(&r, "Content-Security-Policy", JSON_CSP);
    expect_header(&r, "X-Frame-Options", "DENY");
    expect_header(&r, "Cache-Control", "no-store");
    sv_resp_free(&r);
    sv_request(&s, "GET", "/nothing", NULL, NULL, &r);
    SV_EXPECT(r, 404);
    expect_header(&r, "Content-Security-Policy", JSON_CSP);
    sv_resp_free(&r);
    sv_stop(&s);
}

static long long audit_rows(const char *schema, int status) {
    return ob_ll(db, "SELECT count(*) FROM %s.admin_audit WHERE status = %d", schema, status);
}

static void test_read_only(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    ferry_queue *q = th_queue_open(prefix, "roq", NULL, 0);
    ferry_job_spec spec = {"j", "{}", "{\"jobId\":\"job1\"}"};
    ferry_error e = {0};
    if (ferry_queue_add(q, &spec, NULL, &e)) fail_msg("add: %s", e.message);
    ferry_queue_close(q);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", token_file(), "--database",
                          th_env_require("DATABASE_URL"), "--schema", schema, "--read-only"));
    struct {
        const char *method, *path, *body;
    } actions[] = {
        {"POST", "/api/queues/roq/pause", NULL},
        {"POST", "/api/queues/roq/resume", NULL},
        {"POST", "/api/queues/roq/retry", "{}"},
        {"POST", "/api/queues/roq/promote", "{}"},
        {"POST", "/api/queues/roq/clean", "{\"state\":\"wait\",\"grace\":0}"},
        {"POST", "/api/queues/roq/drain", "{}"},
        {"DELETE", "/api/queues/roq/jobs/job1", NULL},
        {"POST", "/api/queues/roq/jobs/job1/retry", NULL},
        {"POST", "/api/queues/roq/jobs/job1/promote", NULL},
        {"POST", "/api/queues/roq/jobs/job1/logs", "{\"line\":\"x\"}"},
        {"POST", "/api/dead-letters/redrive", "{\"dryRun\":true}"},
        {"POST", "/api/dead-letters/purge", "{\"dryRun\":true}"},
    };
    size_t n = sizeof actions / sizeof actions[0];
    long long before = audit_rows(schema, 403), before401 = audit_rows(schema, 401);
    for (size_t i = 0; i < n; i++) {
        /* with the all-scopes token: read-only; without a token the 401 comes first */
        sv_expect_error(&s, actions[i].method, actions[i].path, AUTH(ADMIN_SECRET), actions[i].body,
                        403, "the server is read-only (ferry serve --read-only)");
        sv_expect_error(&s, actions[i].method, actions[i].path, NULL, actions[i].body, 401,
                        "needs a token");
    }
    /* every refusal audited, with the token's name when it had one */
    assert_int_equal(audit_rows(schema, 403) - before, (long long)n);
    assert_int_equal(audit_rows(schema, 401) - before401, (long long)n);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.admin_audit WHERE status = 403 AND actor = "
                           "'admin' AND path = '/api/queues/roq/pause'",
                           schema),
                     1);
    /* nothing changed */
    ferry_conn *c = th_conn();
    assert_int_equal(th_cmd_int(c, "HEXISTS %s:roq:meta paused", prefix), 0);
    assert_int_equal(th_cmd_int(c, "EXISTS %s:roq:job1", prefix), 1);
    ferry__conn_close(c);
    /* reads answer */
    const char *reads[] = {"/api/queues",
                           "/api/queues/roq",
                           "/api/queues/roq/jobs?state=wait",
                           "/api/overview",
                           "/api/dead-letters",
                           "/api/outbox",
                           "/"};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        sv_resp r = sv_call(&s, "GET", reads[i], AUTH(ADMIN_SECRET), NULL);
        SV_EXPECT(r, 200);
        sv_resp_free(&r);
    }
    sv_resp r = sv_call(&s, "GET", "/api/info", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_true(json_is_true(json_object_get(r.json, "readOnly")));
    sv_resp_free(&r);
    sv_stop(&s);
    char *log = sv_log(&s);
    if (!strstr(log, "actions disabled (--read-only)")) fail_msg("start line:\n%s", log);
    free(log);
}

static void test_info_whoami(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", token_file()));
    sv_resp r = sv_call(&s, "GET", "/api/info", NULL, NULL);
    SV_EXPECT(r, 200);
    json_t *j = r.json;
    assert_non_null(json_string_value(json_object_get(j, "version")));
    assert_string_equal(json_string_value(json_object_get(j, "bullmq")), "6.7.0");
    assert_true(json_is_false(json_object_get(j, "readOnly")));
    assert_true(json_is_false(json_object_get(j, "readsNeedToken")));
    assert_true(json_is_true(json_object_get(j, "tokensConfigured")));
    assert_true(json_is_false(json_object_get(j, "database")));
    assert_string_equal(json_string_value(json_object_get(j, "prefix")), prefix);
    json_t *l = json_object_get(j, "limits");
    assert_int_equal(sv_jint(l, "listMax"), 1000);
    assert_int_equal(sv_jint(l, "bodyMax"), 65536);
    assert_int_equal(sv_jint(l, "connections"), 64);
    assert_int_equal(sv_jint(l, "streams"), 8);
    assert_int_equal(sv_jint(l, "streamSeconds"), 300);
    assert_int_equal(sv_jint(l, "findScanMax"), 100000);
    assert_int_equal(sv_jint(l, "tasksRunningMax"), 4);
    assert_null(strstr(r.body, ADMIN_SECRET));
    sv_resp_free(&r);

    /* whoami needs a valid token although reads are open */
    sv_expect_error(&s, "GET", "/api/whoami", NULL, NULL, 401, "needs a token");
    sv_expect_error(&s, "GET", "/api/whoami", AUTH("wrong-0123456789abcdef0123456789abcdef"), NULL,
                    401, "not valid");
    sv_expect_error(&s, "GET", "/api/whoami", "Authorization: Basic abc", NULL, 401, "Bearer");
    r = sv_call(&s, "GET", "/api/whoami", AUTH(ADMIN_SECRET), NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "actor"), "admin");
    char *sc = json_dumps(json_object_get(r.json, "scopes"), JSON_COMPACT);
    assert_string_equal(sc, "[\"read\",\"act\",\"redrive\"]");
    free(sc);
    sv_resp_free(&r);
    r = sv_call(&s, "GET", "/api/whoami", AUTH(READER_SECRET), NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "actor"), "reader");
    sc = json_dumps(json_object_get(r.json, "scopes"), JSON_COMPACT);
    assert_string_equal(sc, "[\"read\"]");
    free(sc);
    sv_resp_free(&r);
    sv_stop(&s);

    /* no token file at all: whoami has no token to accept */
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_expect_error(&s, "GET", "/api/whoami", AUTH(ADMIN_SECRET), NULL, 401, "not valid");
    r = sv_call(&s, "GET", "/api/info", NULL, NULL);
    assert_true(json_is_false(json_object_get(r.json, "tokensConfigured")));
    sv_resp_free(&r);
    sv_stop(&s);
}

/* The overview's entry of queue `name`, or NULL. */
static json_t *queue_of(json_t *ov, const char *name) {
    json_t *qs = json_object_get(ov, "queues"), *v;
    size_t i;
    json_array_foreach(qs, i, v) {
        if (!strcmp(json_string_value(json_object_get(v, "name")), name)) return v;
    }
    return NULL;
}

static long long sum(json_t *a) {
    long long t = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) t += json_integer_value(v);
    return t;
}

/* Queues "ova" (3 wait, 1 delayed, 2 prioritized, 4 completed and 2 failed just now, 1
 * completed an hour ago) and "ovb" (paused, 1 job). */
static void make_queues(void) {
    ferry_queue *a = th_queue_open(prefix, "ova", NULL, 0),
                *b = th_queue_open(prefix, "ovb", NULL, 0);
    ferry_error e = {0};
    const char *opts[] = {
        NULL, NULL, NULL, "{\"delay\":600000}", "{\"priority\":2}", "{\"priority\":5}"};
    for (size_t i = 0; i < 6; i++) {
        ferry_job_spec sp = {"j", "{\"secret\":\"payload-never-logged\"}", opts[i]};
        if (ferry_queue_add(a, &sp, NULL, &e)) fail_msg("add: %s", e.message);
    }
    ferry_job_spec sp = {"j", NULL, NULL};
    if (ferry_queue_pause(b, &e) || ferry_queue_add(b, &sp, NULL, &e)) fail_msg("%s", e.message);
    /* finishes as the finish script leaves them: members of completed / failed scored by
     * finishedOn */
    ferry_conn *c = th_conn();
    long long now = (long long)ferry__now_ms();
    freeReplyObject(th_cmd_ok(c, "ZADD %s:ova:completed %lld c1 %lld c2 %lld c3 %lld c4 %lld old",
                              prefix, now - 100, now - 200, now - 15000, now - 16000,
                              now - 3600000));
    freeReplyObject(
        th_cmd_ok(c, "ZADD %s:ova:failed %lld f1 %lld f2", prefix, now - 300, now - 400));
    ferry__conn_close(c);
    ferry_queue_close(a);
    ferry_queue_close(b);
}

static void check_queues(json_t *ov) {
    json_t *a = queue_of(ov, "ova"), *b = queue_of(ov, "ovb");
    assert_non_null(a);
    assert_non_null(b);
    json_t *c = json_object_get(a, "counts");
    assert_int_equal(sv_jint(c, "wait"), 3);
    assert_int_equal(sv_jint(c, "delayed"), 1);
    assert_int_equal(sv_jint(c, "prioritized"), 2);
    assert_int_equal(sv_jint(c, "completed"), 5);
    assert_int_equal(sv_jint(c, "failed"), 2);
    assert_int_equal(sv_jint(c, "active"), 0);
    assert_int_equal(sv_jint(c, "waiting-children"), 0);
    assert_true(json_is_false(json_object_get(a, "paused")));
    assert_true(json_is_true(json_object_get(b, "paused")));
    /* BullMQ 6 keeps a paused queue's jobs in wait (the paused list is legacy) */
    json_t *bc = json_object_get(b, "counts");
    assert_int_equal(sv_jint(bc, "wait") + sv_jint(bc, "paused"), 1);
    assert_int_equal(sv_jint(a, "rateLimitedMs"), 0);
    assert_int_equal(sv_jint(a, "workers"), 0);
    json_t *tp = json_object_get(a, "throughput");
    assert_int_equal(sv_jint(tp, "bucketSeconds"), 10);
    json_t *done = json_object_get(tp, "completed"), *failed = json_object_get(tp, "failed");
    assert_int_equal(json_array_size(done), 30);
    assert_int_equal(json_array_size(failed), 30);
    /* the 4 recent completions in the last two buckets, the hour-old one in none */
    assert_int_equal(sum(done), 4);
    assert_int_equal(json_integer_value(json_array_get(done, 29)) +
                         json_integer_value(json_array_get(done, 28)),
                     4);
    assert_int_equal(sum(failed), 2);
    assert_int_equal(json_integer_value(json_array_get(failed, 29)), 2);
    json_t *t = json_object_get(ov, "totals");
    assert_int_equal(sv_jint(t, "ready"), 3 + 2 + 1);
    assert_int_equal(sv_jint(t, "delayed"), 1);
    assert_int_equal(sv_jint(t, "failed"), 2);
    assert_int_equal(sv_jint(t, "active"), 0);
    assert_true(json_real_value(json_object_get(t, "oldestReadyAgeSeconds")) >= 0);
    assert_true(json_is_true(json_object_get(ov, "queuesComplete")));
    long long at = sv_jint(ov, "at"), now = (long long)ferry__now_ms();
    assert_true(at <= now && at > now - 60000);
}

static void test_overview_no_database(void **state) {
    (void)state;
    snprintf(prefix, sizeof prefix, "%s-ov1", th_prefix());
    make_queues();
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
    SV_EXPECT(r, 200);
    check_queues(r.json);
    assert_true(json_is_null(json_object_get(r.json, "outbox")));
    assert_non_null(strstr(sv_json_str(&r, "outboxError"), "no database"));
    assert_true(json_is_null(json_object_get(r.json, "deadLetters")));
    assert_non_null(strstr(sv_json_str(&r, "deadLettersError"), "no database"));
    assert_true(json_is_null(json_object_get(r.json, "inbox")));
    json_t *h = json_object_get(r.json, "history");
    assert_int_equal(sv_jint(h, "intervalSeconds"), 5);
    assert_int_equal(json_array_size(json_object_get(h, "ready")), 1);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "ready"), 0)), 6);
    assert_true(json_is_null(json_array_get(json_object_get(h, "outboxUnpublished"), 0)));
    sv_resp_free(&r);
    /* a second look within 5 s adds no point */
    r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
    assert_int_equal(json_array_size(json_object_get(json_object_get(r.json, "history"), "ready")),
                     1);
    sv_resp_free(&r);
    sv_stop(&s);
    char *log = sv_log(&s);
    assert_null(strstr(log, "payload-never-logged"));
    free(log);

    /* Redis unreachable: 503 for the whole overview */
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    close(fd); /* nothing listens there now */
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--redis", url));
    sv_expect_error(&s, "GET", "/api/overview", NULL, NULL, 503, "redis");
    sv_stop(&s);
}

static void test_overview_database(void **state) {
    (void)state;
    snprintf(prefix, sizeof prefix, "%s-ov2", th_prefix());
    make_queues();
    const char *schema = ob_schema(db);
    ob_insert_many(db, schema, "orders.created", 3);
    PQclear(ob_sql(db,
                   "UPDATE %s.outbox_events SET created_at = now() - interval '120 seconds' WHERE "
                   "id = (SELECT id FROM %s.outbox_events ORDER BY created_at LIMIT 1)",
                   schema, schema));
    ferry_dlq_options dlo = {schema};
    long long now = (long long)ferry__now_ms();
    for (int i = 0; i < 2; i++) {
        char jid[16];
        snprintf(jid, sizeof jid, "d%d", i);
        ferry_dlq_failure f = {.prefix = prefix,
                               .queue = "ova",
                               .job_id = jid,
                               .job_name = "charge",
                               .data = "{}",
                               .error = "boom",
                               .attempts_made = 3,
                               .job_timestamp_ms = 1000,
                               .failed_at_ms = now - 60000 * (i + 1)};
        ferry_error e = {0};
        if (ferry_dlq_record(db, &dlo, &f, NULL, &e)) fail_msg("record: %s", e.message);
    }
    PQclear(ob_sql(db,
                   "INSERT INTO %s.processed_messages (consumer, message_id) VALUES ('billing', "
                   "gen_random_uuid()), ('billing', gen_random_uuid()), ('mail', "
                   "gen_random_uuid())",
                   schema));
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"),
                          "--schema", schema));
    sv_resp r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
    SV_EXPECT(r, 200);
    check_queues(r.json);
    json_t *ob = json_object_get(r.json, "outbox");
    assert_int_equal(sv_jint(ob, "unpublished"), 3);
    double age = json_real_value(json_object_get(ob, "oldestAgeSeconds"));
    assert_true(age >= 119 && age < 200);
    assert_int_equal(sv_jint(ob, "withErrors"), 0);
    assert_int_equal(sv_jint(ob, "quarantined"), 0);
    assert_true(json_is_null(json_object_get(r.json, "outboxError")));
    json_t *dl = json_object_get(r.json, "deadLetters");
    assert_int_equal(sv_jint(dl, "notRedriven"), 2);
    age = json_real_value(json_object_get(dl, "oldestAgeSeconds"));
    assert_true(age >= 119 && age < 200);
    json_t *in = json_object_get(r.json, "inbox");
    assert_int_equal(sv_jint(in, "markers"), 3);
    json_t *first = json_array_get(json_object_get(in, "consumers"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "consumer")), "billing");
    assert_int_equal(sv_jint(first, "markers"), 2);
    json_t *h = json_object_get(r.json, "history");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "outboxUnpublished"), 0)),
                     3);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(h, "deadLetters"), 0)), 2);
    sv_resp_free(&r);
    sv_stop(&s);

    /* a schema without ferry's tables: the database parts null with the reason, queues fine */
    PQclear(ob_sql(db, "DROP SCHEMA IF EXISTS %s_empty CASCADE", schema));
    PQclear(ob_sql(db, "CREATE SCHEMA %s_empty", schema));
    char empty[128];
    snprintf(empty, sizeof empty, "%s_empty", schema);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--database", th_env_require("DATABASE_URL"),
                          "--schema", empty));
    r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
    SV_EXPECT(r, 200);
    check_queues(r.json);
    assert_true(json_is_null(json_object_get(r.json, "outbox")));
    assert_non_null(sv_json_str(&r, "outboxError"));
    assert_true(json_is_null(json_object_get(r.json, "deadLetters")));
    assert_non_null(sv_json_str(&r, "deadLettersError"));
    sv_resp_free(&r);
    sv_stop(&s);
    PQclear(ob_sql(db, "DROP SCHEMA IF EXISTS %s_empty CASCADE", schema));
}

int main(void) {
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    db = ob_pg();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assets),
        cmocka_unit_test(test_read_only),
        cmocka_unit_test(test_info_whoami),
        cmocka_unit_test(test_overview_no_database),
        cmocka_unit_test(test_overview_database),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ob_drop_schemas(db);
    PQfinish(db);
    th_tmpdir_remove();
    return th_exit(failed);
}
