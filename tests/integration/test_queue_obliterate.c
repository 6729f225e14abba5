/* test_queue_obliterate.c - ferry_queue_obliterate and `ferry queue obliterate` against a real
 * Redis: a queue with jobs in every state is deleted to its last key while sibling queues (a
 * name that starts the same, a prefix nested under the queue's own keys) stay byte for byte as
 * they were; active jobs are refused without force and deleted with it; a queue larger than
 * one chunk; a flow parent in another queue is released; the script's own refusals; the CLI's
 * --yes guard and its count; `ferry bench` leaving no key behind, and failing a run with a
 * failed job. */
#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "ferry/scheduler.h"
#include "ferry/worker.h"
#include "redis/conn.h"
#include "support/cli.h"
#include "support/qt.h"
#include "support/wt.h"

/* ---- keys ------------------------------------------------------------------------------- */

typedef struct keyset {
    char **k;
    size_t n;
} keyset;

static int cmp_key(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every key matching `pattern` (SCAN, never KEYS), sorted. */
static void keys_scan(keyset *s, const char *pattern) {
    size_t cap = 64;
    s->n = 0;
    s->k = malloc(cap * sizeof *s->k);
    char cursor[32] = "0";
    do {
        redisReply *r = qt_cmd("SCAN %s MATCH %s COUNT 1000", cursor, pattern);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            if (s->n == cap) s->k = realloc(s->k, (cap *= 2) * sizeof *s->k);
            s->k[s->n++] = strdup(r->element[1]->element[i]->str);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    qsort(s->k, s->n, sizeof *s->k, cmp_key);
}

static void keys_free(keyset *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->k[i]);
    free(s->k);
    s->k = NULL;
    s->n = 0;
}

static size_t count_keys(const char *pattern) {
    keyset s;
    keys_scan(&s, pattern);
    size_t n = s.n;
    keys_free(&s);
    return n;
}

/* Fail naming the first keys left under "<prefix>:<queue>:". */
static void expect_no_keys(const char *prefix, const char *queue) {
    char pat[256];
    snprintf(pat, sizeof pat, "%s:%s:*", prefix, queue);
    keyset s;
    keys_scan(&s, pat);
    if (s.n) {
        char list[1024] = "";
        for (size_t i = 0; i < s.n && i < 8; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), " %s", s.k[i]);
        size_t n = s.n;
        keys_free(&s);
        fail_msg("%zu keys left under %s:%s: (first:%s)", n, prefix, queue, list);
    }
    keys_free(&s);
}

/* Every key matching a pattern with its DUMP (content, not TTL), to prove nothing changed. */
typedef struct snap {
    keyset ks;
    char **dump;
    size_t *len;
} snap;

static void snap_take(snap *s, const char *pattern) {
    keys_scan(&s->ks, pattern);
    s->dump = calloc(s->ks.n + 1, sizeof *s->dump);
    s->len = calloc(s->ks.n + 1, sizeof *s->len);
    for (size_t i = 0; i < s->ks.n; i++) {
        redisReply *r = qt_cmd("DUMP %s", s->ks.k[i]);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        s->dump[i] = malloc(r->len + 1);
        memcpy(s->dump[i], r->str, r->len);
        s->len[i] = r->len;
        freeReplyObject(r);
    }
}

static void snap_free(snap *s) {
    for (size_t i = 0; i < s->ks.n; i++)
        free(s->dump[i]);
    free(s->dump);
    free(s->len);
    keys_free(&s->ks);
}

/* The keys matching `pattern` now are exactly those of `before`, with the same contents. */
static void snap_expect_same(const snap *before, const char *pattern) {
    snap now;
    snap_take(&now, pattern);
    if (now.ks.n != before->ks.n)
        fail_msg("%s: %zu keys, was %zu", pattern, now.ks.n, before->ks.n);
    for (size_t i = 0; i < now.ks.n; i++) {
        if (strcmp(now.ks.k[i], before->ks.k[i]) != 0)
            fail_msg("%s: key %s, was %s", pattern, now.ks.k[i], before->ks.k[i]);
        if (now.len[i] != before->len[i] || memcmp(now.dump[i], before->dump[i], now.len[i]))
            fail_msg("%s: key %s changed", pattern, now.ks.k[i]);
    }
    snap_free(&now);
}

/* ---- workers ---------------------------------------------------------------------------- */

static ferry_outcome ok_or_fail(ferry_job *j, void *ud) {
    (void)ud;
    if (strcmp(ferry_job_name(j), "bad") != 0) return FERRY_COMPLETED;
    ferry_job_set_failure(j, "bad job", NULL);
    return FERRY_FAILED_PERMANENT;
}

/* A handler that holds its job (active, locked) until the test opens the gate. */
static ferry_outcome hold_handler(ferry_job *j, void *ud) {
    (void)j;
    wt_gate_pass(ud);
    return FERRY_COMPLETED;
}

static int gate_entered(void *arg) {
    int one = 1;
    void *a[2] = {arg, &one};
    return wt_gate_entered_at_least(a);
}

static ferry_worker *start_worker(ferry_queue *q, ferry_handler_fn fn, void *ud) {
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    o.redis = &ro;
    o.prefix = ferry_queue_prefix(q);
    o.concurrency = 1;
    /* no lock renewal or stalled check while a test looks at the keys */
    o.lock_duration_ms = 600000;
    o.stalled_interval_ms = 600000;
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(ferry_queue_name(q), &o, fn, ud, &w, &e) != 0)
        fail_msg("worker create: %s", e.message);
    if (ferry_worker_start(w, &e) != 0) fail_msg("worker start: %s", e.message);
    return w;
}

static void stop_worker(ferry_worker *w) {
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    ferry_worker_free(w);
}

typedef struct zcond {
    const char *key;
    long long n;
} zcond;

static int zcard_reached(void *arg) {
    zcond *c = arg;
    return qt_ival(qt_cmd("ZCARD %s", c->key)) >= c->n;
}

/* ---- filling a queue -------------------------------------------------------------------- */

/* Key of job `id` of q plus an optional sub-key suffix (":logs"), rotating buffer. */
static const char *JK(ferry_queue *q, const char *id, const char *sub) {
    static char buf[4][512];
    static int n;
    char *b = buf[n++ % 4];
    snprintf(b, sizeof buf[0], "%s:%s:%s%s", ferry_queue_prefix(q), ferry_queue_name(q), id,
             sub ? sub : "");
    return b;
}

/* Jobs in every state: 'ok' completed and 'bad' failed (run by a ferry worker), waiting (one
 * with a log line), delayed, prioritized, one in the legacy v5 paused list, a flow parent in
 * waiting-children with its child waiting, a job owning a deduplication key, a job scheduler
 * with its pending iteration, a rate limit, metrics as a Node worker writes them; then the
 * queue is paused and one more job added. */
static void fill_every_state(ferry_queue *q) {
    ferry_error e = {0};
    free(qt_add(q, "ok", NULL, NULL));
    free(qt_add(q, "bad", NULL, NULL));
    ferry_worker *w = start_worker(q, ok_or_fail, NULL);
    zcond done = {qt_key(q, "completed"), 1}, failed = {qt_key(q, "failed"), 1};
    if (!th_wait_until(zcard_reached, &done, 15000) ||
        !th_wait_until(zcard_reached, &failed, 15000))
        fail_msg("worker did not finish the ok/bad jobs");
    stop_worker(w);

    char *id = qt_add(q, "w", "{\"n\":1}", NULL);
    freeReplyObject(qt_cmd("RPUSH %s a-log-line", JK(q, id, ":logs")));
    free(id);
    free(qt_add(q, "d", NULL, "{\"delay\":600000}"));
    free(qt_add(q, "p", NULL, "{\"priority\":3}"));
    id = qt_add(q, "legacy", NULL, NULL);
    assert_int_equal(qt_ival(qt_cmd("LREM %s 1 %s", qt_key(q, "wait"), id)), 1);
    freeReplyObject(qt_cmd("RPUSH %s %s", qt_key(q, "paused"), id));
    free(id);

    /* a flow as Node's FlowProducer leaves it: parent wc1 waits for child c1 */
    freeReplyObject(qt_cmd("HSET %s name parent data {} opts {} timestamp 1", JK(q, "wc1", NULL)));
    freeReplyObject(qt_cmd("ZADD %s 1 wc1", qt_key(q, "waiting-children")));
    freeReplyObject(qt_cmd("SADD %s %s", JK(q, "wc1", ":dependencies"), JK(q, "c1", NULL)));
    freeReplyObject(qt_cmd("HSET %s name child data {} opts {} timestamp 1 parentKey %s",
                           JK(q, "c1", NULL), JK(q, "wc1", NULL)));
    freeReplyObject(qt_cmd("LPUSH %s c1", qt_key(q, "wait")));

    /* a job owning deduplication id d1 (as Node's add with deduplication leaves it) */
    id = qt_add(q, "dedup", NULL, NULL);
    freeReplyObject(qt_cmd("HSET %s deid d1", JK(q, id, NULL)));
    freeReplyObject(qt_cmd("SET %s %s", qt_key(q, "de:d1"), id));
    free(id);

    ferry_scheduler_spec sp;
    ferry_scheduler_spec_init(&sp);
    sp.every_ms = 3600000;
    if (ferry_scheduler_upsert(q, "tick", &sp, NULL, NULL, &e)) fail_msg("upsert: %s", e.message);
    if (ferry_queue_rate_limit(q, 600000, &e)) fail_msg("rate limit: %s", e.message);
    freeReplyObject(qt_cmd("HSET %s count 1 prevTS 1 prevCount 0", qt_key(q, "metrics:completed")));
    freeReplyObject(qt_cmd("LPUSH %s 1", qt_key(q, "metrics:completed:data")));
    freeReplyObject(qt_cmd("HSET %s count 1 prevTS 1 prevCount 0", qt_key(q, "metrics:failed")));
    freeReplyObject(qt_cmd("LPUSH %s 1", qt_key(q, "metrics:failed:data")));

    if (ferry_queue_pause(q, &e)) fail_msg("pause: %s", e.message);
    free(qt_add(q, "during-pause", NULL, NULL));
}

static size_t queue_key_count(ferry_queue *q) {
    char pat[256];
    snprintf(pat, sizeof pat, "%s:%s:*", ferry_queue_prefix(q), ferry_queue_name(q));
    return count_keys(pat);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_every_state_sibling_untouched(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    ferry_queue *qa = qt_open(p, "a", NULL), *qab = qt_open(p, "ab", NULL);
    fill_every_state(qa);
    fill_every_state(qab);
    /* every state really is populated */
    ferry_job_counts c;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_counts(qa, &c, &e), 0);
    assert_int_equal(c.completed, 1);
    assert_int_equal(c.failed, 1);
    assert_int_equal(c.delayed, 1);
    assert_int_equal(c.prioritized, 1);
    assert_int_equal(c.paused, 1);
    assert_int_equal(c.waiting_children, 1);
    assert_true(c.waiting >= 4);
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(qa, "repeat"))), 1);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(qa, "limiter"))), 1);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(qa, "stalled-check"))), 1);

    char sib[128];
    snprintf(sib, sizeof sib, "%s:ab:*", p);
    snap before;
    snap_take(&before, sib);
    assert_true(before.ks.n > 20);
    size_t n = queue_key_count(qa);

    long long deleted = -1;
    if (ferry_queue_obliterate(qa, 0, &deleted, &e)) fail_msg("obliterate: %s", e.message);
    expect_no_keys(p, "a");
    assert_int_equal(deleted, (long long)n); /* meta and events existed: none was created */
    snap_expect_same(&before, sib);
    snap_free(&before);

    /* again on the empty queue: nothing to delete, nothing left behind */
    assert_int_equal(ferry_queue_obliterate(qa, 0, &deleted, &e), 0);
    assert_int_equal(deleted, 0);
    expect_no_keys(p, "a");

    /* the handle still works: a job added now starts a new queue */
    qt_add_expect(qa, "again", NULL, NULL, "1");
    ferry_queue_close(qa);
    ferry_queue_close(qab);
}

/* Prefix "<p>:a" nests its queues' keys under queue a's own "<p>:a:": obliterating a must
 * delete only what a's states and fixed names lead to. */
static void test_nested_prefix_untouched(void **state) {
    (void)state;
    char p[64], nested[80], pat[128];
    snprintf(p, sizeof p, "%s", th_prefix());
    snprintf(nested, sizeof nested, "%s:a", p);
    ferry_queue *qa = qt_open(p, "a", NULL), *qn = qt_open(nested, "other", NULL);
    fill_every_state(qn);
    fill_every_state(qa);
    snap before;
    snprintf(pat, sizeof pat, "%s:other:*", nested);
    snap_take(&before, pat);
    assert_true(before.ks.n > 20);
    ferry_error e = {0};
    long long deleted = -1;
    if (ferry_queue_obliterate(qa, 0, &deleted, &e)) fail_msg("obliterate: %s", e.message);
    assert_true(deleted > 20);
    /* under "<p>:a:" only the nested queue's keys are left, unchanged */
    snprintf(pat, sizeof pat, "%s:a:*", p);
    snap_expect_same(&before, pat);
    snap_free(&before);
    ferry_queue_close(qa);
    ferry_queue_close(qn);
}

static void test_active_refused_then_forced(void **state) {
    (void)state;
    char p[64], pat[128];
    snprintf(p, sizeof p, "%s", th_prefix());
    ferry_queue *q = qt_open(p, "busy", NULL);
    wt_gate g;
    wt_gate_init(&g);
    ferry_worker *w = start_worker(q, hold_handler, &g);
    char *held = qt_add(q, "hold", NULL, NULL);
    if (!th_wait_until(gate_entered, &g, 15000)) fail_msg("handler never started");
    free(qt_add(q, "w1", NULL, NULL));
    free(qt_add(q, "w2", NULL, "{\"delay\":600000}"));
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", JK(q, held, ":lock"))), 1);

    snprintf(pat, sizeof pat, "%s:busy:*", p);
    snap before;
    snap_take(&before, pat);
    ferry_error e = {0};
    long long deleted = -1;
    assert_int_equal(ferry_queue_obliterate(q, 0, &deleted, &e), FERRY_ESTATE);
    assert_int_equal(e.code, FERRY_ESTATE);
    if (!strstr(e.message, "queue busy has 1 active job;") || !strstr(e.message, "force"))
        fail_msg("message: %s", e.message);
    assert_int_equal(deleted, 0);
    snap_expect_same(&before, pat); /* not even paused */
    snap_free(&before);
    int paused = 1;
    assert_int_equal(ferry_queue_is_paused(q, &paused, &e), 0);
    assert_int_equal(paused, 0);

    size_t n = queue_key_count(q);
    assert_int_equal(ferry_queue_obliterate(q, 1, &deleted, &e), 0);
    assert_int_equal(deleted, (long long)n);
    expect_no_keys(p, "busy");

    /* the worker finds its job gone (lock lost) when it finishes it: nothing comes back */
    wt_gate_open(&g);
    stop_worker(w);
    expect_no_keys(p, "busy");
    free(held);
    ferry_queue_close(q);
    wt_gate_destroy(&g);
}

/* calls=N of `INFO commandstats` for EVALSHA */
static long long evalsha_calls(void) {
    redisReply *r = qt_cmd("INFO commandstats");
    const char *s = strstr(r->str, "cmdstat_evalsha:calls=");
    long long n = s ? strtoll(s + strlen("cmdstat_evalsha:calls="), NULL, 10) : 0;
    freeReplyObject(r);
    return n;
}

static void test_larger_than_one_chunk(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    ferry_queue *q = qt_open(p, "big", NULL);
    enum { N = 2500 };
    ferry_job_spec *specs = calloc(N, sizeof *specs);
    for (int i = 0; i < N; i++)
        specs[i] = (ferry_job_spec){"j", "{}",
                                    i % 5 == 0   ? "{\"delay\":600000}"
                                    : i % 5 == 1 ? "{\"priority\":2}"
                                                 : NULL};
    ferry_error e = {0};
    if (ferry_queue_add_bulk(q, specs, N, NULL, &e)) fail_msg("add_bulk: %s", e.message);
    free(specs);
    size_t n = queue_key_count(q);
    assert_true(n > N);
    long long calls0 = evalsha_calls(), deleted = -1;
    if (ferry_queue_obliterate(q, 0, &deleted, &e)) fail_msg("obliterate: %s", e.message);
    long long calls = evalsha_calls() - calls0;
    assert_int_equal(deleted, (long long)n);
    expect_no_keys(p, "big");
    /* 1000 jobs per call: 1000 + 1000 + 500 and the queue's own keys */
    if (calls != 3) fail_msg("%lld script calls, want 3", calls);
    ferry_queue_close(q);
}

/* A child in the obliterated queue whose flow parent lives in another queue: the parent loses
 * its last dependency and moves to that queue's wait list, as when the child is removed. */
static void test_foreign_parent_released(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    ferry_queue *qc = qt_open(p, "children", NULL), *qp = qt_open(p, "parents", NULL);
    freeReplyObject(qt_cmd("HSET %s name parent data {} opts {} timestamp 1", JK(qp, "p1", NULL)));
    freeReplyObject(qt_cmd("ZADD %s 1 p1", qt_key(qp, "waiting-children")));
    freeReplyObject(qt_cmd("SADD %s %s", JK(qp, "p1", ":dependencies"), JK(qc, "k1", NULL)));
    freeReplyObject(qt_cmd("HSET %s name child data {} opts {} timestamp 1 parentKey %s",
                           JK(qc, "k1", NULL), JK(qp, "p1", NULL)));
    freeReplyObject(qt_cmd("LPUSH %s k1", qt_key(qc, "wait")));
    ferry_error e = {0};
    if (ferry_queue_obliterate(qc, 0, NULL, &e)) fail_msg("obliterate: %s", e.message);
    expect_no_keys(p, "children");
    assert_string_equal(qt_lrange(qt_key(qp, "wait")), "p1");
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(qp, "waiting-children"))), 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", JK(qp, "p1", ":dependencies"))), 0);
    assert_string_equal(qt_zrange(qt_key(qp, "marker")), "0,0");
    assert_true(strstr(qt_events(qp), "waiting:jobId=p1:prev=waiting-children") != NULL);
    ferry_queue_close(qc);
    ferry_queue_close(qp);
}

/* The script's checks, called directly: a later call on a queue that is not paused (someone
 * resumed it midway) and a bad count are refused without a change. */
static void test_script_refusals(void **state) {
    (void)state;
    char p[64], base[96];
    snprintf(p, sizeof p, "%s", th_prefix());
    ferry_queue *q = qt_open(p, "s", NULL);
    free(qt_add(q, "w", NULL, NULL));
    snprintf(base, sizeof base, "%s:s:", p);
    const ferry_script *s = ferry__script_get("obliterate");
    assert_non_null(s);
    size_t n = queue_key_count(q);
    redisReply *r = qt_cmd("EVAL %s 1 %s %s 1000 0 0", s->source, qt_key(q, "meta"), base);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_int_equal(r->element[0]->integer, -1);
    freeReplyObject(r);
    assert_int_equal(queue_key_count(q), n);
    ferry_error e = {0};
    r = NULL;
    assert_int_equal(ferry__conn_command(qt_conn, &r, &e, "EVAL %s 1 %s %s 0 0 1", s->source,
                                         qt_key(q, "meta"), base),
                     0);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    assert_non_null(strstr(r->str, "count must be"));
    freeReplyObject(r);
    assert_int_equal(queue_key_count(q), n);
    assert_string_equal(qt_hget(qt_key(q, "meta"), "paused"), "(nil)");

    /* the last call sent again (its answer lost) after the queue is gone: it finishes the
     * work again, and what it deleted is only what its own pause created */
    long long deleted = 0;
    assert_int_equal(ferry_queue_obliterate(q, 0, &deleted, &e), 0);
    assert_int_equal(queue_key_count(q), 0);
    r = qt_cmd("EVAL %s 1 %s %s 1000 0 0", s->source, qt_key(q, "meta"), base);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->integer, 0);
    assert_int_equal(r->element[1]->integer, r->element[2]->integer);
    freeReplyObject(r);
    assert_int_equal(queue_key_count(q), 0);
    ferry_queue_close(q);
}

/* ---- CLI -------------------------------------------------------------------------------- */

static void test_cli(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    const char *url = th_env_require("REDIS_URL");
    ferry_queue *q = qt_open(p, "cq", NULL);
    free(qt_add(q, "a", NULL, NULL));
    free(qt_add(q, "b", NULL, "{\"delay\":600000}"));
    size_t n = queue_key_count(q);

    cli_run r;
    CLI(r, "queue", "obliterate", "cq", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "ferry queue obliterate:"));
    assert_non_null(strstr(r.err, "add --yes"));
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    assert_int_equal(queue_key_count(q), n);

    CLI(r, "queue", "obliterate", "--yes", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2); /* no QUEUE */
    cli_run_free(&r);

    CLI(r, "queue", "obliterate", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "Usage: ferry queue obliterate"));
    assert_non_null(strstr(r.out, "--force"));
    assert_non_null(strstr(r.out, "--yes"));
    cli_run_free(&r);

    CLI(r, "queue", "obliterate", "cq", "--yes", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    char want[128];
    snprintf(want, sizeof want, "queue cq: obliterated, %zu keys deleted\n", n);
    assert_string_equal(r.out, want);
    assert_string_equal(r.err, "");
    cli_run_free(&r);
    expect_no_keys(p, "cq");

    /* an active job: refused (exit 1, nothing deleted), then --force */
    wt_gate g;
    wt_gate_init(&g);
    ferry_worker *w = start_worker(q, hold_handler, &g);
    free(qt_add(q, "hold", NULL, NULL));
    if (!th_wait_until(gate_entered, &g, 15000)) fail_msg("handler never started");
    n = queue_key_count(q);
    CLI(r, "queue", "obliterate", "cq", "--yes", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 1);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "1 active job"));
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    assert_int_equal(queue_key_count(q), n);
    CLI(r, "queue", "obliterate", "cq", "--yes", "--force", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    snprintf(want, sizeof want, "queue cq: obliterated, %zu keys deleted\n", n);
    assert_string_equal(r.out, want);
    cli_run_free(&r);
    expect_no_keys(p, "cq");
    wt_gate_open(&g);
    stop_worker(w);
    wt_gate_destroy(&g);
    ferry_queue_close(q);
}

/* `ferry bench` runs on a fresh queue under --prefix: afterwards nothing is left there. */
static void test_bench_leaves_nothing(void **state) {
    (void)state;
    char p[64], pat[80];
    snprintf(p, sizeof p, "%s", th_prefix());
    snprintf(pat, sizeof pat, "%s:*", p);
    const char *url = th_env_require("REDIS_URL");
    const char *modes[] = {"addbulk", "process"};
    for (size_t i = 0; i < 2; i++) {
        cli_run r;
        CLI(r, "bench", "--mode", modes[i], "--jobs", "300", "--concurrency", "4", "--json",
            "--redis-info-cmd", "none", "--redis", url, "--prefix", p);
        CLI_EXPECT(r, 0);
        assert_non_null(strstr(r.out, "\"failed\":0"));
        cli_run_free(&r);
        if (count_keys(pat))
            fail_msg("bench --mode %s left %zu keys under %s", modes[i], count_keys(pat), pat);
    }
    /* --keep leaves the queue */
    cli_run r;
    CLI(r, "bench", "--mode", "addbulk", "--jobs", "10", "--keep", "--redis-info-cmd", "none",
        "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    assert_true(count_keys(pat) >= 10);
}

/* `ferry bench --warmup W`: the warm-up is untimed work in the same run, the figures cover
 * what came after it (timed_jobs of N in process mode: the jobs completed after the timer
 * started; N+W adds in latency mode), Redis CPU is sampled on the bench's own connection, and
 * the run still leaves nothing behind. */
static void test_bench_warmup(void **state) {
    (void)state;
    char p[64], pat[80];
    snprintf(p, sizeof p, "%s", th_prefix());
    snprintf(pat, sizeof pat, "%s:*", p);
    const char *url = th_env_require("REDIS_URL");
    struct {
        const char *mode, *jobs, *warmup;
        long long timed_min, timed_max;
    } runs[] = {{"process", "400", "200", 1, 400},
                {"addbulk", "300", "200", 300, 300},
                {"latency", "20", "10", 30, 30}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        cli_run r;
        CLI(r, "bench", "--mode", runs[i].mode, "--jobs", runs[i].jobs, "--warmup", runs[i].warmup,
            "--concurrency", "4", "--rate", "1000", "--json", "--redis", url, "--prefix", p);
        CLI_EXPECT(r, 0);
        json_error_t je;
        json_t *j = json_loads(r.out, 0, &je);
        if (!j) fail_msg("bench --mode %s: not JSON (%s): %s", runs[i].mode, je.text, r.out);
        long long timed = json_integer_value(json_object_get(j, "timed_jobs"));
        if (timed < runs[i].timed_min || timed > runs[i].timed_max)
            fail_msg("bench --mode %s: timed_jobs %lld, want %lld..%lld", runs[i].mode, timed,
                     runs[i].timed_min, runs[i].timed_max);
        assert_int_equal(json_integer_value(json_object_get(j, "warmup")),
                         strtoll(runs[i].warmup, NULL, 10));
        assert_int_equal(json_integer_value(json_object_get(j, "failed")), 0);
        /* (jsonw prints %.6g: a rate may come out as a JSON integer) */
        if (!(json_number_value(json_object_get(j, "jobs_per_s")) > 0))
            fail_msg("bench --mode %s: jobs_per_s not positive: %s", runs[i].mode, r.out);
        /* sampled on its own connection: a number, not null */
        assert_true(json_is_number(json_object_get(j, "redis_cpu_us_per_job")));
        if (!strcmp(runs[i].mode, "latency")) /* one sample per timed job */
            assert_true(json_is_number(json_object_get(j, "p99_ms")));
        json_decref(j);
        cli_run_free(&r);
        if (count_keys(pat))
            fail_msg("bench --mode %s left %zu keys under %s", runs[i].mode, count_keys(pat), pat);
    }
}

/* A failed job voids a `ferry bench` run at once (exit 1, naming the first reason): no-op
 * handlers do not fail, so the figures would be wrong, and waiting for a completion that never
 * comes would take --wait. Here job 20 carries a deferred failure (`defa`), which a worker
 * fails without running it. */
static void test_bench_failed_job_voids_run(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    const char *url = th_env_require("REDIS_URL");
    cli_run r;
    CLI(r, "bench", "--mode", "addbulk", "--jobs", "40", "--keep", "--queue", "bq", "--json",
        "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    freeReplyObject(qt_cmd("HSET %s:bq:20 defa %s", p, "bench test failure"));
    /* --wait 600000: without the check, the run would wait out the CTest timeout */
    CLI(r, "bench", "--mode", "process", "--queue", "bq", "--no-fill", "--jobs", "40",
        "--concurrency", "4", "--wait", "600000", "--json", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 1);
    if (!strstr(r.err, "ferry bench: 1 job failed (first: bench test failure); the run is void"))
        fail_msg("stderr: %s", r.err);
    assert_string_equal(r.out, ""); /* no figures from a void run */
    cli_run_free(&r);
    /* the failed job is in failed, as Node would leave it */
    redisReply *f = qt_cmd("ZSCORE %s:bq:failed 20", p);
    assert_int_equal(f->type, REDIS_REPLY_STRING);
    freeReplyObject(f);
    CLI(r, "queue", "obliterate", "bq", "--yes", "--force", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    expect_no_keys(p, "bq");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_state_sibling_untouched),
        cmocka_unit_test(test_nested_prefix_untouched),
        cmocka_unit_test(test_active_refused_then_forced),
        cmocka_unit_test(test_larger_than_one_chunk),
        cmocka_unit_test(test_foreign_parent_released),
        cmocka_unit_test(test_script_refusals),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_bench_leaves_nothing),
        cmocka_unit_test(test_bench_warmup),
        cmocka_unit_test(test_bench_failed_job_voids_run),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    th_tmpdir_remove();
    return failed;
}
