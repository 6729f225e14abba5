/* test_finish_script.c - moveToFinished.lua's batched up-front checks, driven directly:
 * a batch must answer every job exactly as one finish per job would (BullMQ codes -1
 * missing job, -2 missing lock, -4 pending children, -6 other token, -9 failed children),
 * including batches that mix those cases, where reading the checks in bulk could hide one
 * case behind another (a missing job next to jobs with children). */
#include "support/qt.h"

#include "queue/job_opts.h"
#include "redis/conn.h"

#define NKEYS 12
#define HEAD 11
#define STRIDE 11

/* One job of a finish batch. keep/age/limit/trim: the removeOn* arguments (NULL: "0"
 * = delete the job, "" = no age (else seconds), "1000", "0" = no trim after it); value
 * (NULL: "\"ok\"" / "boom") and deid as the worker sends them (NULL: ""); parent, when
 * set, is written as the job's parentKey before the call (the script reads it there). */
typedef struct fin {
    const char *id, *token, *target; /* target: completed | failed */
    const char *keep, *age, *limit, *trim;
    const char *value, *deid, *parent;
} fin;

/* Put job `id` in active with lock `token` (NULL = no lock), as a fetch leaves it. */
static void make_active(ferry_queue *q, const char *id, const char *token) {
    freeReplyObject(qt_cmd("HSET %s name n data {} opts {} timestamp 1 ats 1", qt_key(q, id)));
    freeReplyObject(qt_cmd("LPUSH %s %s", qt_key(q, "active"), id));
    if (token) {
        char lock[256];
        snprintf(lock, sizeof lock, "%s:lock", id);
        freeReplyObject(qt_cmd("SET %s %s PX 60000", qt_key(q, lock), token));
    }
}

/* Run moveToFinished for jobs[0..n) (removeOnComplete/Fail: delete; no fetch) and write
 * the per-job codes into codes. */
static void finish_at(ferry_queue *q, const fin *jobs, size_t n, long long *codes,
                      const char *now) {
    const ferry_script *s = ferry__script_get("moveToFinished");
    assert_non_null(s);
    static const char *suffix[NKEYS] = {"wait",    "active",  "prioritized", "events",
                                        "limiter", "delayed", "meta",        "pc",
                                        "marker",  "stalled", "completed",   "failed"};
    char keys[NKEYS][256];
    const char *kp[NKEYS];
    for (int i = 0; i < NKEYS; i++) {
        /* not qt_key(): its rotating buffers may hold the jobs' parent keys */
        snprintf(keys[i], sizeof keys[i], "%s:%s:%s", ferry_queue_prefix(q), ferry_queue_name(q),
                 suffix[i]);
        kp[i] = keys[i];
    }
    char base[256], count[16];
    snprintf(base, sizeof base, "%s:%s:", ferry_queue_prefix(q), ferry_queue_name(q));
    snprintf(count, sizeof count, "%zu", n);
    size_t nargs = HEAD + STRIDE * n;
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    assert_true(args && lens);
    const char *head[HEAD] = {base, now, "0", "tok:", "1", "30000", "", "", "", "1", count};
    for (int i = 0; i < HEAD; i++)
        args[i] = head[i];
    for (size_t j = 0; j < n; j++)
        if (jobs[j].parent)
            freeReplyObject(qt_cmd("HSET %s%s parentKey %s", base, jobs[j].id, jobs[j].parent));
    for (size_t j = 0; j < n; j++) {
        const char **a = args + HEAD + STRIDE * j;
        a[0] = jobs[j].id;
        a[1] = jobs[j].token;
        a[2] = jobs[j].target;
        a[3] = jobs[j].value ? jobs[j].value : strcmp(jobs[j].target, "failed") ? "\"ok\"" : "boom";
        a[4] = "";
        a[5] = jobs[j].keep ? jobs[j].keep : "0";
        a[6] = jobs[j].age ? jobs[j].age : "";
        a[7] = jobs[j].limit ? jobs[j].limit : "1000";
        a[8] = "1";
        a[9] = jobs[j].trim ? jobs[j].trim : "0";
        a[10] = jobs[j].deid ? jobs[j].deid : "";
    }
    for (size_t i = 0; i < nargs; i++)
        lens[i] = strlen(args[i]);
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_evalsha(qt_conn, s, NKEYS, kp, (int)nargs, args, lens, &r, &e))
        fail_msg("moveToFinished: %s", e.message);
    if (r->type == REDIS_REPLY_ERROR) fail_msg("moveToFinished: %s", r->str);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    redisReply *c = r->element[0];
    assert_int_equal(c->elements, n);
    for (size_t j = 0; j < n; j++)
        codes[j] = c->element[j]->integer;
    freeReplyObject(r);
    free(args);
    free(lens);
}

static void finish(ferry_queue *q, const fin *jobs, size_t n, long long *codes) {
    finish_at(q, jobs, n, codes, "1000");
}

static const char *codes_str(const long long *codes, size_t n) {
    static char buf[256];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld", i ? "," : "", codes[i]);
    return buf;
}

/* A job removed under the worker next to completed jobs that have children: each keeps its
 * own answer (a summed existence count would trade the missing job for the children). */
static void test_missing_job_next_to_jobs_with_children(void **state) {
    (void)state;
    ferry_queue *q = qt_open("fs1", "q", NULL);
    const char *ids[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        make_active(q, ids[i], "t1");
    freeReplyObject(
        qt_cmd("DEL %s %s", qt_key(q, "a"), qt_key(q, "a:lock"))); /* removed: job and lock */
    freeReplyObject(qt_cmd("SADD %s x", qt_key(q, "b:dependencies")));
    freeReplyObject(qt_cmd("SADD %s x", qt_key(q, "c:dependencies")));
    freeReplyObject(qt_cmd("ZADD %s 1 x", qt_key(q, "d:unsuccessful")));
    fin jobs[] = {{.id = "a", .token = "t1", .target = "completed"},
                  {.id = "b", .token = "t1", .target = "completed"},
                  {.id = "c", .token = "t1", .target = "completed"},
                  {.id = "d", .token = "t1", .target = "completed"}};
    long long codes[4];
    finish(q, jobs, 4, codes);
    assert_string_equal(codes_str(codes, 4), "-1,-4,-4,-9");
    /* nothing was finished: b, c, d still active and locked, no event */
    assert_string_equal(qt_lrange(qt_key(q, "active")), "d,c,b,a");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "b:lock"), qt_key(q, "c:lock"),
                                    qt_key(q, "d:lock"))),
                     3);
    assert_int_equal(qt_ival(qt_cmd("XLEN %s", qt_key(q, "events"))), 0);
    freeReplyObject(qt_cmd("DEL %s %s %s %s %s %s %s %s", qt_key(q, "a"), qt_key(q, "b"),
                           qt_key(q, "c"), qt_key(q, "d"), qt_key(q, "active"),
                           qt_key(q, "b:dependencies"), qt_key(q, "c:dependencies"),
                           qt_key(q, "d:unsuccessful")));
    ferry_queue_close(q);
}

/* Every case in one batch, and the clean jobs around them finish normally. A failed job's
 * children do not matter (BullMQ checks them for completions only). */
static void test_mixed_batch_answers_per_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open("fs2", "q", NULL);
    const char *ids[] = {"ok1", "gone", "nolock", "other", "kids", "fkids", "ok2"};
    for (int i = 0; i < 7; i++)
        make_active(q, ids[i], "t1");
    freeReplyObject(qt_cmd("DEL %s %s", qt_key(q, "gone"), qt_key(q, "gone:lock")));
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "nolock:lock")));
    freeReplyObject(qt_cmd("SET %s t2", qt_key(q, "other:lock")));
    freeReplyObject(qt_cmd("SADD %s x", qt_key(q, "kids:dependencies")));
    freeReplyObject(qt_cmd("SADD %s x", qt_key(q, "fkids:dependencies")));
    fin jobs[] = {{.id = "ok1", .token = "t1", .target = "completed"},
                  {.id = "gone", .token = "t1", .target = "completed"},
                  {.id = "nolock", .token = "t1", .target = "completed"},
                  {.id = "other", .token = "t1", .target = "completed"},
                  {.id = "kids", .token = "t1", .target = "completed"},
                  {.id = "fkids", .token = "t1", .target = "failed"},
                  {.id = "ok2", .token = "t1", .target = "failed"}};
    long long codes[7];
    finish(q, jobs, 7, codes);
    assert_string_equal(codes_str(codes, 7), "0,-1,-2,-6,-4,0,0");
    assert_string_equal(qt_lrange(qt_key(q, "active")), "kids,other,nolock,gone");
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "ok1"), qt_key(q, "ok2"), qt_key(q, "fkids"))),
        0);
    assert_string_equal(qt_get(qt_key(q, "other:lock")), "t2");
    assert_string_equal(qt_events(q), "completed:jobId=ok1:returnvalue=\"ok\":prev=active|"
                                      "failed:jobId=fkids:failedReason=boom:prev=active|"
                                      "retries-exhausted:jobId=fkids:attemptsMade=1|"
                                      "failed:jobId=ok2:failedReason=boom:prev=active|"
                                      "retries-exhausted:jobId=ok2:attemptsMade=1");
    ferry_queue_close(q);
}

/* Finished sets `count` old jobs with scores from `score0` up, hashes included. */
static void old_finished(ferry_queue *q, const char *set, int count, long score0) {
    for (int i = 1; i <= count; i++) {
        char id[32];
        snprintf(id, sizeof id, "o%d", i);
        freeReplyObject(qt_cmd("HSET %s name n data {}", qt_key(q, id)));
        freeReplyObject(qt_cmd("ZADD %s %ld %s", qt_key(q, set), score0 + i, id));
    }
}

/* A run of jobs with equal keep settings trims once, after its last job; when that job is
 * refused, the trim still happens (as each of BullMQ's per-job finishes would have). */
static void test_trim_owed_by_a_refused_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open("fs3", "q", NULL);
    old_finished(q, "completed", 5, 0);
    make_active(q, "a", "t1");
    make_active(q, "b", "t2");
    freeReplyObject(qt_cmd("SET %s other", qt_key(q, "b:lock")));
    fin jobs[] = {{"a", "t1", "completed", "2", NULL, NULL, "0", NULL, NULL, NULL},
                  {"b", "t2", "completed", "2", NULL, NULL, "1", NULL, NULL, NULL}};
    long long codes[2];
    finish(q, jobs, 2, codes);
    assert_string_equal(codes_str(codes, 2), "0,-6");
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "o5,5,a,1000");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s %s %s %s", qt_key(q, "o1"), qt_key(q, "o2"),
                                    qt_key(q, "o3"), qt_key(q, "o4"), qt_key(q, "o5"))),
                     1);
    ferry_queue_close(q);
}

/* removeOnFail {age, limit}: each of n finishes removes up to `limit` expired jobs, so one
 * trim for a run of n removes up to n * limit (the newest expired first). */
static void test_trim_by_age_with_limit_per_job(void **state) {
    (void)state;
    ferry_queue *q = qt_open("fs4", "q", NULL);
    old_finished(q, "failed", 5, -20000); /* far older than now (1000 ms) - 10 s */
    make_active(q, "a", "t1");
    make_active(q, "b", "t1");
    fin jobs[] = {{"a", "t1", "failed", "-1", "10", "1", "0", NULL, NULL, NULL},
                  {"b", "t1", "failed", "-1", "10", "1", "1", NULL, NULL, NULL}};
    long long codes[2];
    finish(q, jobs, 2, codes);
    assert_string_equal(codes_str(codes, 2), "0,0");
    assert_string_equal(qt_zrange(qt_key(q, "failed")),
                        "o1,-19999,o2,-19998,o3,-19997,a,1000,b,1000");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "o4"), qt_key(q, "o5"))), 0);
    ferry_queue_close(q);
}

/* The age argument is BullMQ's, in seconds (fractions included): with now = 1000 and
 * age 0.5, jobs finished at or before 500 go, later ones stay. Age 0 (as Node) trims
 * everything finished up to now, the job just finished included. */
static void test_trim_by_age_in_seconds(void **state) {
    (void)state;
    ferry_queue *q = qt_open("fs5", "q", NULL);
    old_finished(q, "completed", 3, 498); /* o1 499, o2 500, o3 501 */
    make_active(q, "a", "t1");
    fin jobs[] = {{"a", "t1", "completed", "-1", "0.5", NULL, "1", NULL, NULL, NULL}};
    long long codes[1];
    finish(q, jobs, 1, codes);
    assert_string_equal(codes_str(codes, 1), "0");
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "o3,501,a,1000");
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "o1"), qt_key(q, "o2"), qt_key(q, "o3"))), 1);
    make_active(q, "b", "t1");
    fin zero[] = {{"b", "t1", "completed", "-1", "0", NULL, "1", NULL, NULL, NULL}};
    finish(q, zero, 1, codes);
    assert_string_equal(codes_str(codes, 1), "0");
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "");
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "o3"), qt_key(q, "a"), qt_key(q, "b"))), 0);
    ferry_queue_close(q);
}

/* The finish script trims what BullMQ's removeJobsByMaxAge trims: scores <= now - age * 1000,
 * computed by Redis Lua in doubles (BullMQ does it in the same Redis Lua). At a real clock
 * (now ~ 1.76e12, one ulp = 2^-12 ms) a fraction of a ms below 2^-13 is rounded away, so
 * ceil(age * 1000) is one ms too many for such ages. */
/* The age argument batch.c sends for these keep settings. */
static const char *age_arg(const ferry__keep_jobs *k, char *buf, size_t n) {
    if (!(k->set && k->age_set)) return "";
    snprintf(buf, n, "%.17g", k->age_s);
    return buf;
}

static void test_trim_by_age_as_node_at_real_clock(void **state) {
    (void)state;
    static const char *ages[] = {"60.0000001", "1e-9",  "1e-7",   "0.5",
                                 "0.3",        "1.001", "0.0011", "3600"};
    const char *now = "1764470000000";
    for (size_t i = 0; i < sizeof ages / sizeof ages[0]; i++) {
        char qn[16], opts[96], node_bound[64], arg[40];
        snprintf(qn, sizeof qn, "fsn%zu", i);
        ferry_queue *q = qt_open(qn, "q", NULL);
        snprintf(opts, sizeof opts, "{\"removeOnComplete\":{\"age\":%s}}", ages[i]);
        ferry__job_opts o;
        assert_int_equal(ferry__job_opts_parse(opts, &o, NULL), 0);
        /* Node's bound, as BullMQ 6.7.0's removeJobsByMaxAge computes it */
        redisReply *r = qt_cmd(
            "EVAL %s 0 %s %s",
            "return string.format('%.17g', math.floor(ARGV[1] - ARGV[2] * 1000))", now, ages[i]);
        snprintf(node_bound, sizeof node_bound, "%s", r->str);
        freeReplyObject(r);
        long long b = atoll(node_bound);
        /* finished at the bound (Node trims it) and 1 ms after it (Node keeps it) */
        freeReplyObject(qt_cmd("HSET %s name n data {}", qt_key(q, "at")));
        freeReplyObject(qt_cmd("ZADD %s %lld at", qt_key(q, "completed"), b));
        freeReplyObject(qt_cmd("HSET %s name n data {}", qt_key(q, "after")));
        freeReplyObject(qt_cmd("ZADD %s %lld after", qt_key(q, "completed"), b + 1));
        make_active(q, "a", "t1");
        fin jobs[] = {{"a", "t1", "completed", "-1",
                       age_arg(&o.remove_on_complete, arg, sizeof arg), NULL, "1", NULL, NULL,
                       NULL}};
        long long codes[1];
        finish_at(q, jobs, 1, codes, now);
        char expect[128];
        if (b + 1 < atoll(now))
            snprintf(expect, sizeof expect, "after,%lld,a,%s", b + 1, now);
        else /* the bound is now: everything finished up to now goes, this job included */
            snprintf(expect, sizeof expect, "after,%lld", b + 1);
        assert_string_equal(qt_zrange(qt_key(q, "completed")), expect);
        ferry__job_opts_free(&o);
        ferry_queue_close(q);
    }
}

/* ---- flows and keepLastIfActive (BullMQ 6.7.0 moveToFinished's effects) ---------------- */

/* A flow as Node's FlowProducer leaves it: parent `pid` of queue pq in waiting-children
 * with hash field pfield = pvalue (NULL: none) set, depending on the children
 * `kids` (ids in queue q, each made active with token t1, `parent` JSON with `flags` ("" or
 * ",\"fpof\":true" ...)). */
static void make_flow(ferry_queue *q, ferry_queue *pq, const char *pid, const char *pfield,
                      const char *pvalue, const char *const *kids, size_t nkids,
                      const char *flags) {
    char pkey[512];
    snprintf(pkey, sizeof pkey, "%.500s", qt_key(pq, pid));
    freeReplyObject(qt_cmd("HSET %s name p data {} opts {} timestamp 1 delay 0 priority 0", pkey));
    if (pfield) freeReplyObject(qt_cmd("HSET %s %s %s", pkey, pfield, pvalue));
    freeReplyObject(qt_cmd("ZADD %s 1 %s", qt_key(pq, "waiting-children"), pid));
    char pjson[512];
    snprintf(pjson, sizeof pjson, "{\"id\":\"%s\",\"queueKey\":\"%s:%s\"%s}", pid,
             ferry_queue_prefix(pq), ferry_queue_name(pq), flags ? flags : "");
    for (size_t i = 0; i < nkids; i++) {
        make_active(q, kids[i], "t1");
        freeReplyObject(qt_cmd("HSET %s parentKey %s parent %s", qt_key(q, kids[i]), pkey, pjson));
        freeReplyObject(qt_cmd("SADD %s:dependencies %s", pkey, qt_key(q, kids[i])));
    }
}

static void finish1(ferry_queue *q, fin f, long long want) {
    long long code;
    finish(q, &f, 1, &code);
    assert_int_equal(code, want);
}

static char prefix_buf[8][64];
static const char *fresh_prefix(int i) {
    snprintf(prefix_buf[i], sizeof prefix_buf[i], "%s", th_prefix());
    return prefix_buf[i];
}

/* Completed children leave the parent's dependencies and record their return values; the
 * last one moves the parent (another queue) from waiting-children to wait, with the marker
 * and its `waiting` event in the parent queue's stream. */
static void test_completed_children_release_parent(void **state) {
    (void)state;
    const char *px = fresh_prefix(0);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *kids[] = {"c1", "c2"};
    make_flow(q, pq, "P", NULL, NULL, kids, 2, "");
    char c1[512], c2[512];
    snprintf(c1, sizeof c1, "%s", qt_key(q, "c1"));
    snprintf(c2, sizeof c2, "%s", qt_key(q, "c2"));
    finish1(q, (fin){"c1", "t1", "completed", "-1", .value = "\"r1\"", .parent = qt_key(pq, "P")},
            0);
    assert_string_equal(qt_joined(qt_cmd("SMEMBERS %s", qt_key(pq, "P:dependencies"))), c2);
    assert_string_equal(qt_hget(qt_key(pq, "P:processed"), c1), "\"r1\"");
    assert_string_equal(qt_zrange(qt_key(pq, "waiting-children")), "P,1");
    assert_int_equal(qt_ival(qt_cmd("LLEN %s", qt_key(pq, "wait"))), 0);
    finish1(q,
            (fin){"c2", "t1", "completed", "-1", .value = "{\"b\":2}", .parent = qt_key(pq, "P")},
            0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(pq, "P:dependencies"))), 0);
    assert_string_equal(qt_hget(qt_key(pq, "P:processed"), c2), "{\"b\":2}");
    assert_string_equal(qt_zrange(qt_key(pq, "waiting-children")), "");
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P");
    assert_string_equal(qt_zrange(qt_key(pq, "marker")), "0,0");
    assert_string_equal(qt_events(pq), "waiting:jobId=P:prev=waiting-children");
    assert_string_equal(qt_events(q), "completed:jobId=c1:returnvalue=\"r1\":prev=active|"
                                      "completed:jobId=c2:returnvalue={\"b\":2}:prev=active|"
                                      "drained");
    /* the children themselves finished as usual */
    assert_string_equal(qt_zrange(qt_key(q, "completed")), "c1,1000,c2,1000");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

/* The released parent goes where its own fields say: `priority` -> prioritized, `delay` ->
 * delayed (due now + delay, delay marker, event delayed), a paused queue -> wait without a
 * marker. A child the parent no longer waits for changes nothing. */
static void test_released_parent_placement(void **state) {
    (void)state;
    const char *px = fresh_prefix(1);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *k1[] = {"c1"}, *k2[] = {"c2"}, *k3[] = {"c3"}, *k4[] = {"c4"};
    make_flow(q, pq, "P1", "priority", "5", k1, 1, "");
    make_flow(q, pq, "P2", "delay", "5000", k2, 1, "");
    finish1(q, (fin){"c1", "t1", "completed", .parent = qt_key(pq, "P1")}, 0);
    finish1(q, (fin){"c2", "t1", "completed", .parent = qt_key(pq, "P2")}, 0);
    assert_string_equal(qt_zrange(qt_key(pq, "prioritized")), "P1,21474836481");
    assert_string_equal(qt_zrange(qt_key(pq, "delayed")), "P2,24576000");
    assert_string_equal(qt_zrange(qt_key(pq, "marker")), "0,0,1,6000");
    assert_string_equal(qt_events(pq), "waiting:jobId=P1:prev=waiting-children|"
                                       "delayed:jobId=P2:delay=6000");
    freeReplyObject(qt_cmd("DEL %s %s %s", qt_key(pq, "marker"), qt_key(pq, "events"),
                           qt_key(pq, "prioritized")));
    freeReplyObject(qt_cmd("HSET %s paused 1", qt_key(pq, "meta")));
    make_flow(q, pq, "P3", NULL, NULL, k3, 1, "");
    finish1(q, (fin){"c3", "t1", "completed", .parent = qt_key(pq, "P3")}, 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P3");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(pq, "marker"))), 0);
    /* a parent not in waiting-children (here: removed from it) stays where it is */
    make_flow(q, pq, "P4", NULL, NULL, k4, 1, "");
    freeReplyObject(qt_cmd("ZREM %s P4", qt_key(pq, "waiting-children")));
    finish1(q, (fin){"c4", "t1", "completed", .parent = qt_key(pq, "P4")}, 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P3");
    assert_string_equal(qt_hget(qt_key(pq, "P4:processed"), qt_key(q, "c4")), "\"ok\"");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

/* A child failing for good, by its parent flags. */
static void test_failed_child_flags(void **state) {
    (void)state;
    const char *px = fresh_prefix(2);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *kf[] = {"f1", "f2"}, *kc[] = {"c1", "c2"}, *ki[] = {"i1", "i2"}, *kr[] = {"r1"},
               *kn[] = {"n1"}, *ka[] = {"a1"};
    char key[512];

    /* fpof: :unsuccessful, defa, and the parent moves to wait though f2 is pending */
    make_flow(q, pq, "PF", NULL, NULL, kf, 2, ",\"fpof\":true");
    finish1(q, (fin){"f1", "t1", "failed", "-1", .value = "bad", .parent = qt_key(pq, "PF")}, 0);
    snprintf(key, sizeof key, "%s", qt_key(q, "f1"));
    char scored[600];
    snprintf(scored, sizeof scored, "%s,1000", key); /* scored by the finish time */
    assert_string_equal(qt_zrange(qt_key(pq, "PF:unsuccessful")), scored);
    char defa[600];
    snprintf(defa, sizeof defa, "child %s failed", key);
    assert_string_equal(qt_hget(qt_key(pq, "PF"), "defa"), defa);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PF");
    assert_string_equal(qt_joined(qt_cmd("SMEMBERS %s", qt_key(pq, "PF:dependencies"))),
                        qt_key(q, "f2"));

    /* fpof with the parent elsewhere (active): only defa */
    make_flow(q, pq, "PA", NULL, NULL, ka, 1, ",\"fpof\":true");
    freeReplyObject(qt_cmd("ZREM %s PA", qt_key(pq, "waiting-children")));
    finish1(q, (fin){"a1", "t1", "failed", "-1", .parent = qt_key(pq, "PA")}, 0);
    snprintf(defa, sizeof defa, "child %s failed", qt_key(q, "a1"));
    assert_string_equal(qt_hget(qt_key(pq, "PA"), "defa"), defa);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PF");

    /* cpof: :failed, and the parent moves on at once */
    make_flow(q, pq, "PC", NULL, NULL, kc, 2, ",\"cpof\":true");
    finish1(q, (fin){"c1", "t1", "failed", "-1", .value = "why", .parent = qt_key(pq, "PC")}, 0);
    assert_string_equal(qt_hget(qt_key(pq, "PC:failed"), qt_key(q, "c1")), "why");
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PF,PC");
    assert_string_equal(qt_hget(qt_key(pq, "PC"), "defa"), "(nil)");

    /* idof: :failed; the parent moves once no dependency remains */
    make_flow(q, pq, "PI", NULL, NULL, ki, 2, ",\"idof\":true");
    finish1(q, (fin){"i1", "t1", "failed", "-1", .value = "e1", .parent = qt_key(pq, "PI")}, 0);
    assert_string_equal(qt_hget(qt_key(pq, "PI:failed"), qt_key(q, "i1")), "e1");
    assert_string_equal(qt_zrange(qt_key(pq, "waiting-children")), "PI,1");
    finish1(q, (fin){"i2", "t1", "completed", "-1", .parent = qt_key(pq, "PI")}, 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PF,PC,PI");

    /* rdof: dependency dropped, nothing recorded */
    make_flow(q, pq, "PR", NULL, NULL, kr, 1, ",\"rdof\":true");
    finish1(q, (fin){"r1", "t1", "failed", "-1", .parent = qt_key(pq, "PR")}, 0);
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s", qt_key(pq, "PR:failed"), qt_key(pq, "PR:unsuccessful"))), 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PF,PC,PI,PR");

    /* no flag, failed job kept: the parent keeps waiting for it */
    make_flow(q, pq, "PN", NULL, NULL, kn, 1, "");
    finish1(q, (fin){"n1", "t1", "failed", "-1", .parent = qt_key(pq, "PN")}, 0);
    assert_string_equal(qt_zrange(qt_key(pq, "waiting-children")), "PN,1");
    assert_string_equal(qt_joined(qt_cmd("SMEMBERS %s", qt_key(pq, "PN:dependencies"))),
                        qt_key(q, "n1"));
    assert_string_equal(qt_events(pq), "waiting:jobId=PF:prev=waiting-children|"
                                       "waiting:jobId=PC:prev=waiting-children|"
                                       "waiting:jobId=PI:prev=waiting-children|"
                                       "waiting:jobId=PR:prev=waiting-children");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

/* A failed child without flags deleted by removeOnFail (alone, and in a batch: the bulk
 * path), or later by a trim of the failed set, leaves its parent's dependencies: the last
 * one puts the parent at the end of wait whatever its priority (BullMQ's
 * removeParentDependencyKey). */
static void test_deleted_failed_child_releases_parent(void **state) {
    (void)state;
    const char *px = fresh_prefix(3);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *k1[] = {"d1"}, *k2[] = {"d2", "d3"}, *k3[] = {"old"};
    make_flow(q, pq, "P1", "priority", "3", k1, 1, "");
    finish1(q, (fin){"d1", "t1", "failed", "0", .parent = qt_key(pq, "P1")}, 0);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "d1"))), 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P1");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(pq, "prioritized"))), 0);

    make_flow(q, pq, "P2", NULL, NULL, k2, 2, "");
    make_active(q, "plain", "t1");
    fin batch[] = {{"d2", "t1", "failed", "0", .parent = qt_key(pq, "P2")},
                   {"plain", "t1", "completed", .keep = "0"},
                   {"d3", "t1", "failed", "0", .parent = qt_key(pq, "P2")}};
    long long codes[3];
    finish(q, batch, 3, codes);
    assert_string_equal(codes_str(codes, 3), "0,0,0");
    assert_int_equal(
        qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "d2"), qt_key(q, "d3"), qt_key(q, "plain"))),
        0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P1,P2");

    /* a trim: "old" failed earlier (kept), the next failure keeps only 1 */
    make_flow(q, pq, "P3", NULL, NULL, k3, 1, "");
    finish_at(q, &(fin){"old", "t1", "failed", "-1", .parent = qt_key(pq, "P3")}, 1, codes, "900");
    assert_string_equal(qt_zrange(qt_key(pq, "waiting-children")), "P3,1");
    make_active(q, "new", "t1");
    finish1(q, (fin){"new", "t1", "failed", "1", .trim = "1"}, 0);
    assert_string_equal(qt_zrange(qt_key(q, "failed")), "new,1000");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "old"))), 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "P1,P2,P3");
    assert_string_equal(qt_events(pq), "waiting:jobId=P1:prev=waiting-children|"
                                       "waiting:jobId=P2:prev=waiting-children|"
                                       "waiting:jobId=P3:prev=waiting-children");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

/* Children of a parent in their own queue finishing in one batch (the bulk path, `active`
 * read once): the parent is released with the marker, as per-job finishes would do, though
 * `active` (global concurrency 4) is only written back after the loop. */
static void test_batch_of_children_same_queue(void **state) {
    (void)state;
    const char *px = fresh_prefix(4);
    ferry_queue *q = qt_open(px, "q", NULL);
    const char *kids[] = {"c1", "c2", "c3", "c4"};
    make_flow(q, q, "P", NULL, NULL, kids, 4, "");
    freeReplyObject(qt_cmd("HSET %s concurrency 4", qt_key(q, "meta")));
    fin b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (fin){kids[i], "t1", "completed", "-1", .parent = qt_key(q, "P")};
    long long codes[4];
    finish(q, b, 4, codes);
    assert_string_equal(codes_str(codes, 4), "0,0,0,0");
    assert_string_equal(qt_lrange(qt_key(q, "active")), "");
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "P");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_int_equal(qt_ival(qt_cmd("HLEN %s", qt_key(q, "P:processed"))), 4);
    assert_string_equal(qt_events(q), "completed:jobId=c1:returnvalue=\"ok\":prev=active|"
                                      "completed:jobId=c2:returnvalue=\"ok\":prev=active|"
                                      "completed:jobId=c3:returnvalue=\"ok\":prev=active|"
                                      "waiting:jobId=P:prev=waiting-children|"
                                      "completed:jobId=c4:returnvalue=\"ok\":prev=active");
    ferry_queue_close(q);
}

/* keepLastIfActive: the job stored in dn:<deid> while the owner was active is created when
 * it finishes (stored jid, dedup key without TTL, added + waiting events before the owner's
 * completed event, the parent's dependency), and dn is deleted. */
static void test_keep_last_if_active_requeue(void **state) {
    (void)state;
    const char *px = fresh_prefix(5);
    ferry_queue *q = qt_open(px, "q", NULL);
    make_active(q, "a", "t1");
    freeReplyObject(qt_cmd("SET %s a", qt_key(q, "de:d1")));
    freeReplyObject(qt_cmd("HSET %s name n2 data {\"x\":1} opts %s jid j9 pk %s pd %s pdk %s",
                           qt_key(q, "dn:d1"), "{\"de\":{\"id\":\"d1\",\"keepLastIfActive\":true}}",
                           qt_key(q, "PP"), "{\"id\":\"PP\",\"queueKey\":\"x\"}",
                           qt_key(q, "PP:dependencies")));
    finish1(q, (fin){"a", "t1", "completed", "-1", .deid = "d1"}, 0);
    assert_string_equal(qt_get(qt_key(q, "de:d1")), "j9");
    assert_int_equal(qt_ival(qt_cmd("PTTL %s", qt_key(q, "de:d1"))), -1);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "dn:d1"))), 0);
    assert_string_equal(qt_get(qt_key(q, "id")), "1"); /* the counter moved though jid was used */
    char want[1024];
    snprintf(want, sizeof want,
             "data={\"x\":1};deid=d1;delay=0;name=n2;"
             "opts={\"de\":{\"id\":\"d1\",\"keepLastIfActive\":true}};parent={\"id\":\"PP\","
             "\"queueKey\":\"x\"};parentKey=%s;priority=0;timestamp=1000",
             qt_key(q, "PP"));
    assert_string_equal(qt_hgetall(qt_key(q, "j9")), want);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "j9");
    assert_string_equal(qt_joined(qt_cmd("SMEMBERS %s", qt_key(q, "PP:dependencies"))),
                        qt_key(q, "j9"));
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "0,0");
    assert_string_equal(qt_events(q), "added:jobId=j9:name=n2|waiting:jobId=j9|"
                                      "completed:jobId=a:returnvalue=\"ok\":prev=active");

    /* no jid: the counter's id; delayed; a ttl mode sets the key with PX; the owner fails */
    freeReplyObject(qt_cmd("DEL %s %s", qt_key(q, "events"), qt_key(q, "marker")));
    make_active(q, "b", "t1");
    freeReplyObject(qt_cmd("SET %s b", qt_key(q, "de:d2")));
    freeReplyObject(qt_cmd("HSET %s name n3 data {} opts %s", qt_key(q, "dn:d2"),
                           "{\"delay\":2000,\"de\":{\"id\":\"d2\",\"ttl\":60000}}"));
    finish1(q, (fin){"b", "t1", "failed", "-1", .deid = "d2"}, 0);
    assert_string_equal(qt_get(qt_key(q, "de:d2")), "2");
    long long pttl = qt_ival(qt_cmd("PTTL %s", qt_key(q, "de:d2")));
    assert_true(pttl > 0 && pttl <= 60000);
    assert_string_equal(qt_zrange(qt_key(q, "delayed")), "2,12288000");
    assert_string_equal(qt_zrange(qt_key(q, "marker")), "1,3000");
    assert_string_equal(qt_hget(qt_key(q, "2"), "delay"), "2000");
    assert_string_equal(qt_events(q), "added:jobId=2:name=n3|delayed:jobId=2:delay=3000|"
                                      "failed:jobId=b:failedReason=boom:prev=active|"
                                      "retries-exhausted:jobId=b:attemptsMade=1");
    /* nothing stored: nothing created */
    make_active(q, "c", "t1");
    finish1(q, (fin){"c", "t1", "completed", "-1", .deid = "d3"}, 0);
    assert_string_equal(qt_get(qt_key(q, "id")), "2");
    ferry_queue_close(q);
}

/* fpof with the parent in delayed (its children done, its own delay running): it leaves
 * delayed for wait with delay 0 and defa; with the parent already failed: no defa. A
 * `parent` field that is not valid JSON fails nothing: a completed child still uses its
 * parentKey, a failed one counts as flagless. */
static void test_fpof_parent_states_and_bad_parent_json(void **state) {
    (void)state;
    const char *px = fresh_prefix(6);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *k1[] = {"f1"}, *k2[] = {"f2"}, *k3[] = {"b1", "b2"};
    make_flow(q, pq, "PD", "delay", "5000", k1, 1, ",\"fpof\":true");
    freeReplyObject(qt_cmd("ZREM %s PD", qt_key(pq, "waiting-children")));
    freeReplyObject(qt_cmd("ZADD %s 99999 PD", qt_key(pq, "delayed")));
    finish1(q, (fin){"f1", "t1", "failed", "-1", .parent = qt_key(pq, "PD")}, 0);
    assert_string_equal(qt_zrange(qt_key(pq, "delayed")), "");
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PD");
    assert_string_equal(qt_hget(qt_key(pq, "PD"), "delay"), "0");
    assert_non_null(strstr(qt_hget(qt_key(pq, "PD"), "defa"), ":q:f1 failed"));

    make_flow(q, pq, "PX", NULL, NULL, k2, 1, ",\"fpof\":true");
    freeReplyObject(qt_cmd("ZREM %s PX", qt_key(pq, "waiting-children")));
    freeReplyObject(qt_cmd("ZADD %s 1 PX", qt_key(pq, "failed")));
    finish1(q, (fin){"f2", "t1", "failed", "-1", .parent = qt_key(pq, "PX")}, 0);
    assert_string_equal(qt_hget(qt_key(pq, "PX"), "defa"), "(nil)");
    assert_int_equal(qt_ival(qt_cmd("ZCARD %s", qt_key(pq, "PX:unsuccessful"))), 1);

    make_flow(q, pq, "PB", NULL, NULL, k3, 2, "");
    freeReplyObject(qt_cmd("HSET %s parent {oops", qt_key(q, "b1")));
    freeReplyObject(qt_cmd("HSET %s parent {oops", qt_key(q, "b2")));
    finish1(q, (fin){"b1", "t1", "completed", "-1", .parent = qt_key(pq, "PB")}, 0);
    assert_string_equal(qt_hget(qt_key(pq, "PB:processed"), qt_key(q, "b1")), "\"ok\"");
    finish1(q, (fin){"b2", "t1", "failed", "0", .parent = qt_key(pq, "PB")}, 0);
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "PD,PB");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

/* A trim owed by an earlier job of the batch happens before a later child's parent work, as
 * BullMQ trims after each job: A's trim (failed set kept to 1) drops O, an unflagged failed
 * child of P1, so B's completion is P1's last dependency and P1 (delay 60000) goes to
 * delayed. Trimming only after C (A and C form one run) would make the trim release P1,
 * straight to wait. */
static void test_trim_before_later_child(void **state) {
    (void)state;
    const char *px = fresh_prefix(7);
    ferry_queue *q = qt_open(px, "q", NULL), *pq = qt_open(px, "pq", NULL);
    const char *kids[] = {"B", "O"};
    make_flow(q, pq, "P1", "delay", "60000", kids, 2, "");
    freeReplyObject(qt_cmd("LREM %s 0 O", qt_key(q, "active")));
    freeReplyObject(qt_cmd("ZADD %s 1 O", qt_key(q, "failed")));
    make_active(q, "A", "t1");
    make_active(q, "C", "t1");
    fin b[3] = {{"A", "t1", "failed", "1", .trim = "0"},
                {"B", "t1", "completed", "0", .trim = "0"},
                {"C", "t1", "failed", "1", .trim = "1"}};
    long long codes[3];
    finish(q, b, 3, codes);
    assert_string_equal(codes_str(codes, 3), "0,0,0");
    assert_string_equal(qt_lrange(qt_key(pq, "wait")), "");
    assert_string_equal(qt_zrange(qt_key(pq, "delayed")),
                        "P1,249856000"); /* (1000 + 60000) * 4096 */
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "O"), qt_key(pq, "P1:dependencies"))),
                     0);
    assert_string_equal(qt_zrange(qt_key(q, "failed")), "C,1000");
    ferry_queue_close(q);
    ferry_queue_close(pq);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_job_next_to_jobs_with_children),
        cmocka_unit_test(test_mixed_batch_answers_per_job),
        cmocka_unit_test(test_trim_owed_by_a_refused_job),
        cmocka_unit_test(test_trim_by_age_with_limit_per_job),
        cmocka_unit_test(test_trim_by_age_in_seconds),
        cmocka_unit_test(test_trim_by_age_as_node_at_real_clock),
        cmocka_unit_test(test_completed_children_release_parent),
        cmocka_unit_test(test_released_parent_placement),
        cmocka_unit_test(test_failed_child_flags),
        cmocka_unit_test(test_deleted_failed_child_releases_parent),
        cmocka_unit_test(test_batch_of_children_same_queue),
        cmocka_unit_test(test_keep_last_if_active_requeue),
        cmocka_unit_test(test_fpof_parent_states_and_bad_parent_json),
        cmocka_unit_test(test_trim_before_later_child),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}
