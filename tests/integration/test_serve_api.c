/* test_serve_api.c - the queue and job endpoints of `ferry serve` over real HTTP against the
 * real binary and Redis, each effect checked in Redis and against what ferry's own C API
 * leaves:
 *  - GET /api/queues, /api/queues/{q} (counts equal ferry_queue_counts; 404 for a queue that
 *    does not exist, which is not created); pause / resume (meta.paused);
 *  - jobs: a page of a state (ids as ferry_queue_job_page, total), one job, 404; retry of a
 *    failed job leaves the fields and lists the C API's ferry_queue_retry_job leaves on a
 *    twin job; promote, remove, logs (add and read), find (scanned, complete);
 *  - bulk retry / promote / clean / drain with their bodies; workers; events; schedulers
 *    with the next run in the scheduler's zone ("+07:00" for Asia/Ho_Chi_Minh);
 *  - bad parameters and bodies (unknown state, non-numeric or negative numbers, a limit over
 *    1000, an unknown member, a wrong type) are 400 naming the parameter, and change nothing;
 *  - a read-only token on an action: 403, nothing changed;
 *  - 10 clients retrying the same 10 failed jobs at once: every job retried exactly once;
 *  - Redis unreachable: 503, not a hang. */
#include <pthread.h>
#include <time.h>

#include "admin/api_json.h"
#include "ferry/scheduler.h"
#include "support/sv.h"
#include "support/wt.h"

#define ADMIN_SECRET "admin-secret-0123456789abcdefghijklmnop"
#define READER_SECRET "reader-secret-0123456789abcdefghijklmno"
#define ADMIN "Authorization: Bearer " ADMIN_SECRET
#define READER "Authorization: Bearer " READER_SECRET

static sv_server srv;
static wt t; /* the test's prefix, its queue "wq", a Redis connection */

static int setup(void **state) {
    (void)state;
    wt_init(&t);
    const char *tokens = sv_token_file("tokens",
                                       "admin read,act,redrive " ADMIN_SECRET "\n"
                                       "reader read " READER_SECRET "\n",
                                       0600);
    sv_start(&srv, SV_FLAGS("--prefix", t.prefix, "--token-file", tokens));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    sv_stop(&srv);
    wt_fini(&t);
    return 0;
}

static ferry_job_counts counts(ferry_queue *q) {
    ferry_job_counts c;
    ferry_error e = {0};
    if (ferry_queue_counts(q, &c, &e)) fail_msg("counts: %s", e.message);
    return c;
}

/* A handler that fails every job for good (so the jobs land in failed). */
static ferry_outcome fail_all(ferry_job *job, void *ud) {
    (void)ud;
    ferry_job_set_failure(job, "poison", NULL);
    return FERRY_FAILED_PERMANENT;
}

/* Add n jobs named `name` and let a worker fail them all; their ids in ids[]. */
static void make_failed(const char *name, int n, char **ids) {
    long long before = WT_ZCARD(&t, "failed");
    for (int i = 0; i < n; i++)
        ids[i] = wt_add(&t, name, "{\"n\":1}", NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, fail_all, NULL);
    WT_WAIT_ZCARD(&t, "failed", before + n);
    wt_stop(w);
}

/* The field names of a job hash, sorted, as one string. */
static char *hash_fields(const char *id) {
    redisReply *r = wt_cmd(&t, "HKEYS %s%s", t.base, id);
    char **names = calloc(r->elements + 1, sizeof *names);
    for (size_t i = 0; i < r->elements; i++)
        names[i] = r->element[i]->str;
    qsort(names, r->elements, sizeof *names, th_cmp_str);
    size_t len = 1;
    for (size_t i = 0; i < r->elements; i++)
        len += strlen(names[i]) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < r->elements; i++) {
        strcat(s, names[i]);
        strcat(s, ",");
    }
    free(names);
    freeReplyObject(r);
    return s;
}

static long long in_list(const char *list, const char *id) {
    redisReply *r = wt_cmd(&t, "LPOS %s%s %s", t.base, list, id);
    long long pos = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    freeReplyObject(r);
    return pos;
}

static int in_zset(const char *set, const char *id) {
    char *s = wt_zscore(&t, set, id);
    free(s);
    return s != NULL;
}

/* ---- queues ----------------------------------------------------------------------------- */

static void test_queues(void **state) {
    (void)state;
    free(wt_add(&t, "a", "{}", NULL));
    free(wt_add(&t, "b", "{}", "{\"delay\":600000}"));
    sv_resp r = sv_call(&srv, "GET", "/api/queues", NULL, NULL);
    SV_EXPECT(r, 200);
    json_t *qs = json_object_get(r.json, "queues");
    assert_int_equal(json_array_size(qs), 1);
    json_t *q0 = json_array_get(qs, 0);
    assert_string_equal(json_string_value(json_object_get(q0, "name")), WT_QUEUE);
    ferry_job_counts c = counts(t.q);
    json_t *jc = json_object_get(q0, "counts");
    assert_int_equal(sv_jint(jc, "waiting"), c.waiting);
    assert_int_equal(sv_jint(jc, "delayed"), c.delayed);
    assert_true(json_is_false(json_object_get(q0, "paused")));
    assert_true(json_is_true(json_object_get(r.json, "complete")));
    sv_resp_free(&r);

    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(json_object_get(r.json, "counts"), "waiting"), c.waiting);
    assert_int_equal(sv_jint(r.json, "workers"), 0);
    assert_true(json_is_null(json_object_get(r.json, "globalConcurrency")));
    sv_resp_free(&r);

    /* a queue that does not exist: 404, and looking creates no key */
    sv_expect_error(&srv, "GET", "/api/queues/nosuch", NULL, NULL, 404, "nosuch");
    sv_expect_error(&srv, "POST", "/api/queues/nosuch/pause", ADMIN, NULL, 404, "nosuch");
    redisReply *k = wt_cmd(&t, "KEYS %s:nosuch:*", t.prefix);
    assert_int_equal(k->elements, 0);
    freeReplyObject(k);

    /* pause: a read-only token is refused and nothing changes; an admin's pauses */
    sv_expect_error(&srv, "POST", "/api/queues/" WT_QUEUE "/pause", READER, NULL, 403, "");
    int paused = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_is_paused(t.q, &paused, &e), 0);
    assert_int_equal(paused, 0);
    sv_expect_error(&srv, "POST", "/api/queues/" WT_QUEUE "/pause", ADMIN, "{\"now\":true}", 400,
                    "now");
    r = sv_call(&srv, "POST", "/api/queues/" WT_QUEUE "/pause", ADMIN, NULL);
    SV_EXPECT(r, 200);
    assert_true(json_is_true(json_object_get(r.json, "paused")));
    sv_resp_free(&r);
    assert_int_equal(ferry_queue_is_paused(t.q, &paused, &e), 0);
    assert_int_equal(paused, 1);
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE, NULL, NULL);
    assert_true(json_is_true(json_object_get(r.json, "paused")));
    sv_resp_free(&r);
    r = sv_call(&srv, "POST", "/api/queues/" WT_QUEUE "/resume", ADMIN, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(ferry_queue_is_paused(t.q, &paused, &e), 0);
    assert_int_equal(paused, 0);
    assert_int_equal(ferry_queue_drain(t.q, 1, NULL, &e), 0);
}

/* ---- jobs ------------------------------------------------------------------------------- */

static void test_job_pages_and_bad_parameters(void **state) {
    (void)state;
    char *ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = wt_add(&t, i % 2 ? "odd" : "even", "{\"k\":\"v\"}", NULL);
    sv_resp r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/jobs?state=wait&start=1&limit=2",
                        NULL, NULL);
    SV_EXPECT(r, 200);
    char **want = NULL;
    size_t n = 0;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_job_page(t.q, "wait", 1, 2, 0, &want, &n, &e), 0);
    json_t *jobs = json_object_get(r.json, "jobs");
    assert_int_equal(json_array_size(jobs), n);
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_array_get(jobs, i);
        assert_string_equal(json_string_value(json_object_get(j, "id")), want[i]);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "data"), "k")),
                            "v");
        assert_non_null(json_string_value(json_object_get(j, "timestampIso")));
    }
    ferry_queue_job_ids_free(want, n);
    assert_int_equal(sv_jint(r.json, "total"), 5);
    sv_resp_free(&r);

    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/jobs?state=waiting&name=odd", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "jobs")), 2);
    sv_resp_free(&r);

    char path[256];
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s", WT_QUEUE, ids[0]);
    r = sv_call(&srv, "GET", path, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "name"), "even");
    assert_string_equal(sv_json_str(&r, "state"), "waiting");
    sv_resp_free(&r);
    sv_expect_error(&srv, "GET", "/api/queues/" WT_QUEUE "/jobs/999999", NULL, NULL, 404, "");

    /* bad parameters: 400 naming them */
    const char *base = "/api/queues/" WT_QUEUE "/jobs";
    char p[300];
    sv_expect_error(&srv, "GET", base, NULL, NULL, 400, "state");
    snprintf(p, sizeof p, "%s?state=bogus", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "bogus");
    snprintf(p, sizeof p, "%s?state=wait&limit=abc", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "limit");
    snprintf(p, sizeof p, "%s?state=wait&limit=-1", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "limit");
    snprintf(p, sizeof p, "%s?state=wait&limit=1001", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "limit");
    snprintf(p, sizeof p, "%s?state=wait&start=-5", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "start");
    snprintf(p, sizeof p, "%s?state=wait&start=0&end=1000", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "end");
    snprintf(p, sizeof p, "%s?state=wait&end=3&limit=2", base);
    sv_expect_error(&srv, "GET", p, NULL, NULL, 400, "limit");
    sv_expect_error(&srv, "GET", "/api/queues/" WT_QUEUE "/events?count=0", NULL, NULL, 400,
                    "count");
    sv_expect_error(&srv, "GET", "/api/queues/" WT_QUEUE "/find?maxScan=x", NULL, NULL, 400,
                    "maxScan");

    /* find: a bounded scan that says how far it got */
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/find?name=odd&dataContains=%22v%22", NULL,
                NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(json_array_size(json_object_get(r.json, "jobs")), 2);
    assert_int_equal(sv_jint(r.json, "scanned"), 5);
    assert_true(json_is_true(json_object_get(r.json, "complete")));
    sv_resp_free(&r);
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/find?maxScan=2", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_true(json_is_false(json_object_get(r.json, "complete")));
    sv_resp_free(&r);

    /* events: the newest, oldest first, and from an id on */
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/events?count=3", NULL, NULL);
    SV_EXPECT(r, 200);
    json_t *ev = json_object_get(r.json, "events");
    assert_int_equal(json_array_size(ev), 3);
    json_t *last = json_array_get(ev, 2);
    assert_string_equal(json_string_value(json_object_get(last, "event")), "waiting");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(last, "fields"), "jobId")), ids[4]);
    assert_string_equal(sv_json_str(&r, "lastId"), json_string_value(json_object_get(last, "id")));
    sv_resp_free(&r);

    /* remove */
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s", WT_QUEUE, ids[1]);
    sv_expect_error(&srv, "DELETE", path, READER, NULL, 403, "");
    assert_int_equal(wt_int(&t, "EXISTS %s%s", ids[1]), 1);
    for (int i = 0; i < 5; i++)
        free(ids[i]);
    assert_int_equal(ferry_queue_drain(t.q, 1, NULL, &e), 0);
}

static void test_job_actions(void **state) {
    (void)state;
    char *f[2];
    make_failed("retry-me", 2, f);
    /* retry f[0] over HTTP, f[1] with the C API: the same fields and places */
    char path[256];
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s/retry", WT_QUEUE, f[0]);
    sv_expect_error(&srv, "POST", path, READER, NULL, 403, "");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"stat\":\"failed\"}", 400, "stat");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"state\":\"waiting\"}", 400, "state");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"resetAttemptsMade\":1}", 400,
                    "resetAttemptsMade");
    assert_true(in_zset("failed", f[0]));
    sv_resp r = sv_call(&srv, "POST", path, ADMIN, NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "from"), "failed");
    sv_resp_free(&r);
    ferry_error e = {0};
    const char *from = NULL;
    assert_int_equal(ferry_queue_retry_job(t.q, f[1], NULL, 0, &from, &e), 0);
    char *h0 = hash_fields(f[0]), *h1 = hash_fields(f[1]);
    assert_string_equal(h0, h1);
    assert_null(strstr(h0, "finishedOn"));
    assert_null(strstr(h0, "failedReason"));
    free(h0);
    free(h1);
    assert_false(in_zset("failed", f[0]));
    assert_true(in_list("wait", f[0]) >= 0);
    assert_true(in_list("wait", f[1]) >= 0);
    char *atm0 = wt_hget(&t, f[0], "atm"), *atm1 = wt_hget(&t, f[1], "atm");
    assert_non_null(atm0);
    assert_non_null(atm1);
    assert_string_equal(atm0, atm1);
    free(atm0);
    free(atm1);
    /* again: not failed any more, 409 */
    sv_expect_error(&srv, "POST", path, ADMIN, NULL, 409, "");

    /* a custom job id of 1000 bytes (under FERRY_JOB_ID_MAX) is reachable by its path */
    char longid[1001];
    memset(longid, 'j', 1000);
    longid[1000] = '\0';
    char opts[1100];
    snprintf(opts, sizeof opts, "{\"jobId\":\"%s\"}", longid);
    free(wt_add(&t, "long-id", "{}", opts));
    char lpath[1200];
    snprintf(lpath, sizeof lpath, "/api/queues/%s/jobs/%s", WT_QUEUE, longid);
    sv_resp lr = sv_call(&srv, "GET", lpath, READER, NULL);
    SV_EXPECT(lr, 200);
    assert_string_equal(sv_json_str(&lr, "id"), longid);
    sv_resp_free(&lr);

    /* promote */
    char *d = wt_add(&t, "later", "{}", "{\"delay\":600000,\"keepLogs\":5}");
    /* stored as "kl": shown with the public name, as Node's Job shows it */
    char *kl = wt_hget(&t, d, "opts");
    assert_non_null(strstr(kl, "\"kl\":5"));
    free(kl);
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s", WT_QUEUE, d);
    sv_resp jr = sv_call(&srv, "GET", path, NULL, NULL);
    SV_EXPECT(jr, 200);
    assert_int_equal(sv_jint(json_object_get(jr.json, "opts"), "keepLogs"), 5);
    assert_int_equal(sv_jint(jr.json, "delay"), 600000);
    assert_string_equal(sv_json_str(&jr, "state"), "delayed");
    sv_resp_free(&jr);
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s/promote", WT_QUEUE, d);
    r = sv_call(&srv, "POST", path, ADMIN, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_false(in_zset("delayed", d));
    assert_true(in_list("wait", d) >= 0);
    sv_expect_error(&srv, "POST", path, ADMIN, NULL, 409, "");

    /* logs: add over HTTP, read with the C API and over HTTP */
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s/logs", WT_QUEUE, d);
    sv_expect_error(&srv, "POST", path, ADMIN, "{}", 400, "line");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"line\":5}", 400, "line");
    sv_expect_error(&srv, "POST", path, ADMIN, "{\"line\":\"x\",\"keep\":-1}", 400, "keep");
    sv_expect_error(&srv, "POST", path, READER, "{\"line\":\"x\"}", 403, "");
    r = sv_call(&srv, "POST", path, ADMIN, "{\"line\":\"checked by hand\"}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "count"), 1);
    sv_resp_free(&r);
    char **lines = NULL;
    size_t n = 0;
    long long count = 0;
    assert_int_equal(ferry_queue_job_logs(t.q, d, 0, -1, 1, &lines, &n, &count, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(lines[0], "checked by hand");
    ferry_queue_job_ids_free(lines, n);
    r = sv_call(&srv, "GET", path, NULL, NULL);
    SV_EXPECT(r, 200);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r.json, "logs"), 0)),
                        "checked by hand");
    sv_resp_free(&r);

    /* remove */
    snprintf(path, sizeof path, "/api/queues/%s/jobs/%s", WT_QUEUE, d);
    r = sv_call(&srv, "DELETE", path, ADMIN, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(wt_int(&t, "EXISTS %s%s", d), 0);
    sv_expect_error(&srv, "DELETE", path, ADMIN, NULL, 404, "");
    free(d);
    free(f[0]);
    free(f[1]);
    assert_int_equal(ferry_queue_drain(t.q, 1, NULL, &e), 0);
}

static void test_bulk_actions(void **state) {
    (void)state;
    char *f[4];
    make_failed("bulk", 4, f);
    const char *base = "/api/queues/" WT_QUEUE;
    char p[200];
    snprintf(p, sizeof p, "%s/retry", base);
    long long failed = counts(t.q).failed;
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"limt\":2}", 400, "limt");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"limit\":\"2\"}", 400, "limit");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"limit\":-2}", 400, "limit");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"state\":\"active\"}", 400, "state");
    sv_expect_error(&srv, "POST", p, ADMIN, "[1]", 400, "object");
    sv_expect_error(&srv, "POST", p, READER, "{\"limit\":2}", 403, "");
    assert_int_equal(counts(t.q).failed, failed);
    sv_resp r = sv_call(&srv, "POST", p, ADMIN, "{\"state\":\"failed\",\"limit\":3}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "moved"), 3);
    sv_resp_free(&r);
    assert_int_equal(counts(t.q).failed, failed - 3);

    /* promote */
    for (int i = 0; i < 3; i++)
        free(wt_add(&t, "d", "{}", "{\"delay\":600000}"));
    snprintf(p, sizeof p, "%s/promote", base);
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"limit\":0}", 400, "limit");
    r = sv_call(&srv, "POST", p, ADMIN, "{\"limit\":2}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "moved"), 2);
    sv_resp_free(&r);
    assert_int_equal(counts(t.q).delayed, 1);

    /* clean: the one failed job left, older than 0 ms */
    snprintf(p, sizeof p, "%s/clean", base);
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"state\":\"failed\"}", 400, "grace");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"state\":\"failed\",\"grace\":\"1 hour\"}", 400,
                    "grace");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"state\":\"bogus\",\"grace\":0}", 400, "state");
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"grace\":0}", 400, "state");
    assert_int_equal(counts(t.q).failed, 1);
    redisReply *left = wt_cmd(&t, "ZRANGE %sfailed 0 -1", t.base);
    char *left_id = strdup(left->element[0]->str);
    freeReplyObject(left);
    r = sv_call(&srv, "POST", p, ADMIN, "{\"state\":\"failed\",\"grace\":\"1h\"}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "deleted"), 0); /* younger than an hour */
    sv_resp_free(&r);
    r = sv_call(&srv, "POST", p, ADMIN, "{\"state\":\"failed\",\"grace\":0}");
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "deleted"), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(r.json, "ids"), 0)),
                        left_id);
    free(left_id);
    sv_resp_free(&r);
    assert_int_equal(counts(t.q).failed, 0);

    /* drain: waiting jobs only, then the delayed one too */
    snprintf(p, sizeof p, "%s/drain", base);
    sv_expect_error(&srv, "POST", p, ADMIN, "{\"delayed\":\"yes\"}", 400, "delayed");
    long long waiting = counts(t.q).waiting;
    assert_true(waiting > 0);
    r = sv_call(&srv, "POST", p, ADMIN, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "removed"), waiting);
    sv_resp_free(&r);
    assert_int_equal(counts(t.q).delayed, 1);
    r = sv_call(&srv, "POST", p, ADMIN, "{\"delayed\":true}");
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(counts(t.q).delayed, 0);
    for (int i = 0; i < 4; i++)
        free(f[i]);
}

/* ---- 10 clients retrying the same failed jobs ------------------------------------------- */

#define RACERS 10
static char *race_ids[RACERS];
static int race_ok[RACERS]; /* per job: 200 answers */
static int race_other;      /* answers other than 200 / 409 */
static pthread_mutex_t race_mu = PTHREAD_MUTEX_INITIALIZER;

static void *racer(void *arg) {
    int me = (int)(intptr_t)arg;
    for (int k = 0; k < RACERS; k++) {
        int j = (k + me) % RACERS;
        char path[256];
        snprintf(path, sizeof path, "/api/queues/%s/jobs/%s/retry", WT_QUEUE, race_ids[j]);
        sv_resp r;
        sv_request(&srv, "POST", path, SV_HEADERS(ADMIN), NULL, &r);
        pthread_mutex_lock(&race_mu);
        if (r.status == 200)
            race_ok[j]++;
        else if (r.status != 409)
            race_other++;
        pthread_mutex_unlock(&race_mu);
        sv_resp_free(&r);
    }
    return NULL;
}

static void test_concurrent_retry(void **state) {
    (void)state;
    make_failed("race", RACERS, race_ids);
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++)
        pthread_create(&th[i], NULL, racer, (void *)(intptr_t)i);
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(race_other, 0);
    for (int j = 0; j < RACERS; j++) {
        assert_int_equal(race_ok[j], 1);
        assert_true(in_list("wait", race_ids[j]) >= 0);
        /* one `waiting` event with prev failed per job: retried once */
        redisReply *r = wt_cmd(&t, "XRANGE %sevents - +", t.base);
        int waits = 0;
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *f = r->element[i]->element[1];
            int is_wait = 0, is_job = 0, from_failed = 0;
            for (size_t k = 0; k + 1 < f->elements; k += 2) {
                const char *n = f->element[k]->str, *v = f->element[k + 1]->str;
                if (!strcmp(n, "event") && !strcmp(v, "waiting")) is_wait = 1;
                if (!strcmp(n, "jobId") && !strcmp(v, race_ids[j])) is_job = 1;
                if (!strcmp(n, "prev") && !strcmp(v, "failed")) from_failed = 1;
            }
            waits += is_wait && is_job && from_failed;
        }
        freeReplyObject(r);
        assert_int_equal(waits, 1);
    }
    long long n = 0;
    redisReply *l = wt_cmd(&t, "LLEN %swait", t.base);
    n = l->integer;
    freeReplyObject(l);
    assert_int_equal(n, RACERS);
    for (int j = 0; j < RACERS; j++)
        free(race_ids[j]);
    ferry_error e = {0};
    assert_int_equal(ferry_queue_drain(t.q, 1, NULL, &e), 0);
}

/* ---- workers, schedulers ---------------------------------------------------------------- */

static ferry_outcome ok(ferry_job *job, void *ud) {
    (void)job;
    (void)ud;
    return FERRY_COMPLETED;
}

static void test_workers_and_schedulers(void **state) {
    (void)state;
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, ok, NULL);
    sv_resp r;
    long long deadline = th_mono_ms() + 10000;
    for (;;) { /* the worker's blocking connection is named once it connected */
        r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/workers", NULL, NULL);
        SV_EXPECT(r, 200);
        if (sv_jint(r.json, "total") >= 1 || th_mono_ms() > deadline) break;
        sv_resp_free(&r);
        th_sleep_ms(20);
    }
    assert_int_equal(sv_jint(r.json, "total"), 1);
    json_t *w0 = json_array_get(json_object_get(r.json, "workers"), 0);
    assert_string_equal(json_string_value(json_object_get(w0, "name")), "wtest");
    sv_resp_free(&r);
    wt_stop(w);

    ferry_scheduler_spec cron;
    ferry_scheduler_spec_init(&cron);
    cron.pattern = "0 3 * * *";
    cron.tz = "Asia/Ho_Chi_Minh";
    cron.name = "nightly-report";
    ferry_error e = {0};
    if (ferry_scheduler_upsert(t.q, "nightly", &cron, NULL, NULL, &e)) fail_msg("%s", e.message);
    ferry_scheduler_spec every;
    ferry_scheduler_spec_init(&every);
    every.every_ms = 3600000;
    if (ferry_scheduler_upsert(t.q, "hourly", &every, NULL, NULL, &e)) fail_msg("%s", e.message);
    ferry_scheduler_info *info = NULL;
    assert_int_equal(ferry_scheduler_get(t.q, "nightly", &info, &e), 0);
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/schedulers", NULL, NULL);
    SV_EXPECT(r, 200);
    assert_int_equal(sv_jint(r.json, "total"), 2);
    json_t *list = json_object_get(r.json, "schedulers"), *n = NULL;
    for (size_t i = 0; i < json_array_size(list); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(list, i), "key")), "nightly"))
            n = json_array_get(list, i);
    assert_non_null(n);
    assert_int_equal(sv_jint(n, "next"), info->next_ms);
    assert_string_equal(json_string_value(json_object_get(n, "tz")), "Asia/Ho_Chi_Minh");
    assert_string_equal(json_string_value(json_object_get(n, "pattern")), "0 3 * * *");
    assert_string_equal(json_string_value(json_object_get(n, "name")), "nightly-report");
    /* 03:00 local, +07:00; the same instant in UTC is 20:00 the day before */
    time_t secs = (time_t)(info->next_ms / 1000) + 7 * 3600;
    struct tm tm;
    gmtime_r(&secs, &tm);
    char want[64];
    strftime(want, sizeof want, "%Y-%m-%dT03:00:00.000+07:00", &tm);
    assert_int_equal(tm.tm_hour, 3);
    assert_string_equal(json_string_value(json_object_get(n, "nextLocal")), want);
    const char *iso = json_string_value(json_object_get(n, "nextIso"));
    assert_non_null(iso);
    assert_non_null(strstr(iso, "T20:00:00.000Z"));
    sv_resp_free(&r);
    ferry_scheduler_info_free(info);
    r = sv_call(&srv, "GET", "/api/queues/" WT_QUEUE "/schedulers?limit=1001", NULL, NULL);
    SV_EXPECT(r, 400);
    sv_resp_free(&r);
    assert_int_equal(ferry_scheduler_remove(t.q, "nightly", &e), 0);
    assert_int_equal(ferry_scheduler_remove(t.q, "hourly", &e), 0);
}

/* The parsers behind every time and duration parameter (pure, no server) */
static void test_time_and_duration_parsers(void **state) {
    (void)state;
    long long ms = -1;
    assert_int_equal(ferry__api_parse_time("2026-12-01T10:00:00Z", &ms), 0);
    assert_int_equal(ms, 1796119200000LL);
    assert_int_equal(ferry__api_parse_time("2026-12-01T17:00:00.250+07:00", &ms), 0);
    assert_int_equal(ms, 1796119200250LL);
    assert_int_equal(ferry__api_parse_time("2026-12-01", &ms), 0);
    assert_int_equal(ms, 1796083200000LL);
    assert_int_equal(ferry__api_parse_time("1796119200000", &ms), 0);
    assert_int_equal(ms, 1796119200000LL);
    const char *bad[] = {
        "",           "yesterday", "2026-12-01T10:00:00",     "2026-02-31",
        "2026-13-01", "-5",        "2026-12-01T10:00Z",       "2026-12-01T25:00:00Z",
        "1e3",        "12abc",     "2026-12-01T10:00:00+7:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ferry__api_parse_time(bad[i], &ms) == 0) fail_msg("time \"%s\" accepted", bad[i]);
    assert_int_equal(ferry__api_parse_duration("90s", &ms), 0);
    assert_int_equal(ms, 90000);
    assert_int_equal(ferry__api_parse_duration("1h", &ms), 0);
    assert_int_equal(ms, 3600000);
    assert_int_equal(ferry__api_parse_duration("7d", &ms), 0);
    assert_int_equal(ms, 7 * 86400000LL);
    assert_int_equal(ferry__api_parse_duration("250", &ms), 0);
    assert_int_equal(ms, 250);
    assert_int_equal(ferry__api_parse_duration("250ms", &ms), 0);
    const char *badd[] = {"", "1 hour", "-1s", "1w", "h", "99999999999999999d", "1.5h"};
    for (size_t i = 0; i < sizeof badd / sizeof badd[0]; i++)
        if (ferry__api_parse_duration(badd[i], &ms) == 0)
            fail_msg("duration \"%s\" accepted", badd[i]);
    char buf[40];
    assert_string_equal(ferry__api_iso(1796119200250LL, buf, sizeof buf),
                        "2026-12-01T10:00:00.250Z");
    json_t *v = ferry__api_str("bad \xff byte");
    assert_string_equal(json_string_value(v), "bad \xEF\xBF\xBD byte");
    json_decref(v);
    v = ferry__api_stored_opts("{\"kl\":3,\"attempts\":2}");
    assert_int_equal(json_integer_value(json_object_get(v, "keepLogs")), 3);
    assert_null(json_object_get(v, "kl"));
    json_decref(v);
    v = ferry__api_stored_json("not json");
    assert_string_equal(json_string_value(v), "not json");
    json_decref(v);
}

/* Redis unreachable: the endpoints answer 503 within the timeouts, they do not hang */
static void test_redis_unreachable(void **state) {
    (void)state;
    int port = 0;
    int fd = th_listen_local(AF_INET, 1, &port);
    assert_true(fd >= 0);
    close(fd); /* nothing listens there now */
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    const char *tokens =
        sv_token_file("tokens2", "admin read,act,redrive " ADMIN_SECRET "\n", 0600);
    sv_server down;
    sv_start(&down, SV_FLAGS("--redis", url, "--timeout", "500", "--prefix", t.prefix,
                             "--token-file", tokens));
    const char *paths[][2] = {{"GET", "/api/queues"},
                              {"GET", "/api/queues/" WT_QUEUE},
                              {"GET", "/api/queues/" WT_QUEUE "/jobs?state=wait"},
                              {"POST", "/api/queues/" WT_QUEUE "/pause"}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        sv_resp r;
        sv_request(&down, paths[i][0], paths[i][1], SV_HEADERS(ADMIN), NULL, &r);
        SV_EXPECT(r, 503);
        assert_non_null(sv_json_str(&r, "error"));
        sv_resp_free(&r);
    }
    sv_stop(&down);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queues),
        cmocka_unit_test(test_job_pages_and_bad_parameters),
        cmocka_unit_test(test_job_actions),
        cmocka_unit_test(test_bulk_actions),
        cmocka_unit_test(test_concurrent_retry),
        cmocka_unit_test(test_workers_and_schedulers),
        cmocka_unit_test(test_redis_unreachable),
        cmocka_unit_test(test_time_and_duration_parsers),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}
