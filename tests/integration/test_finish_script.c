/* test_finish_script.c - moveToFinished.lua's batched up-front checks, driven directly:
 * a batch must answer every job exactly as one finish per job would (BullMQ codes -1
 * missing job, -2 missing lock, -4 pending children, -6 other token, -9 failed children),
 * including batches that mix those cases, where reading the checks in bulk could hide one
 * case behind another (a missing job next to jobs with children). */
#include "queue_test_helpers.h"

#include "queue/job_opts.h"
#include "redis/conn.h"

#define NKEYS 12
#define HEAD 11
#define STRIDE 11

/* One job of a finish batch. keep/age/limit/trim: the removeOn* arguments (NULL: "0"
 * = delete the job, "" = no age (else seconds), "1000", "0" = no trim after it). */
typedef struct fin {
    const char *id, *token, *target; /* target: completed | failed */
    const char *keep, *age, *limit, *trim;
} fin;

/* Put job `id` in active with lock `token` (NULL = no lock), as a fetch leaves it. */
static void make_active(ferry_queue *q, const char *id, const char *token) {
    freeReplyObject(cmd("HSET %s name n data {} opts {} timestamp 1 ats 1", K(q, id)));
    freeReplyObject(cmd("LPUSH %s %s", K(q, "active"), id));
    if (token) {
        char lock[256];
        snprintf(lock, sizeof lock, "%s:lock", id);
        freeReplyObject(cmd("SET %s %s PX 60000", K(q, lock), token));
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
        snprintf(keys[i], sizeof keys[i], "%s", K(q, suffix[i]));
        kp[i] = keys[i];
    }
    char base[256], count[16];
    snprintf(base, sizeof base, "%s", K(q, ""));
    snprintf(count, sizeof count, "%zu", n);
    size_t nargs = HEAD + STRIDE * n;
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    assert_true(args && lens);
    const char *head[HEAD] = {base, now, "0", "tok:", "1", "30000", "", "", "", "1", count};
    for (int i = 0; i < HEAD; i++)
        args[i] = head[i];
    for (size_t j = 0; j < n; j++) {
        const char **a = args + HEAD + STRIDE * j;
        a[0] = jobs[j].id;
        a[1] = jobs[j].token;
        a[2] = jobs[j].target;
        a[3] = strcmp(jobs[j].target, "failed") ? "\"ok\"" : "boom";
        a[4] = "";
        a[5] = jobs[j].keep ? jobs[j].keep : "0";
        a[6] = jobs[j].age ? jobs[j].age : "";
        a[7] = jobs[j].limit ? jobs[j].limit : "1000";
        a[8] = "1";
        a[9] = jobs[j].trim ? jobs[j].trim : "0";
        a[10] = "";
    }
    for (size_t i = 0; i < nargs; i++)
        lens[i] = strlen(args[i]);
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_evalsha(C, s, NKEYS, kp, (int)nargs, args, lens, &r, &e))
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
    ferry_queue *q = open_q("fs1", "q", NULL);
    const char *ids[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        make_active(q, ids[i], "t1");
    freeReplyObject(cmd("DEL %s %s", K(q, "a"), K(q, "a:lock"))); /* removed: job and lock */
    freeReplyObject(cmd("SADD %s x", K(q, "b:dependencies")));
    freeReplyObject(cmd("SADD %s x", K(q, "c:dependencies")));
    freeReplyObject(cmd("ZADD %s 1 x", K(q, "d:unsuccessful")));
    fin jobs[] = {{.id = "a", .token = "t1", .target = "completed"},
                  {.id = "b", .token = "t1", .target = "completed"},
                  {.id = "c", .token = "t1", .target = "completed"},
                  {.id = "d", .token = "t1", .target = "completed"}};
    long long codes[4];
    finish(q, jobs, 4, codes);
    assert_string_equal(codes_str(codes, 4), "-1,-4,-4,-9");
    /* nothing was finished: b, c, d still active and locked, no event */
    assert_string_equal(lrange(K(q, "active")), "d,c,b,a");
    assert_int_equal(ival(cmd("EXISTS %s %s %s", K(q, "b:lock"), K(q, "c:lock"), K(q, "d:lock"))),
                     3);
    assert_int_equal(ival(cmd("XLEN %s", K(q, "events"))), 0);
    freeReplyObject(cmd("DEL %s %s %s %s %s %s %s %s", K(q, "a"), K(q, "b"), K(q, "c"), K(q, "d"),
                        K(q, "active"), K(q, "b:dependencies"), K(q, "c:dependencies"),
                        K(q, "d:unsuccessful")));
    ferry_queue_close(q);
}

/* Every case in one batch, and the clean jobs around them finish normally. A failed job's
 * children do not matter (BullMQ checks them for completions only). */
static void test_mixed_batch_answers_per_job(void **state) {
    (void)state;
    ferry_queue *q = open_q("fs2", "q", NULL);
    const char *ids[] = {"ok1", "gone", "nolock", "other", "kids", "fkids", "ok2"};
    for (int i = 0; i < 7; i++)
        make_active(q, ids[i], "t1");
    freeReplyObject(cmd("DEL %s %s", K(q, "gone"), K(q, "gone:lock")));
    freeReplyObject(cmd("DEL %s", K(q, "nolock:lock")));
    freeReplyObject(cmd("SET %s t2", K(q, "other:lock")));
    freeReplyObject(cmd("SADD %s x", K(q, "kids:dependencies")));
    freeReplyObject(cmd("SADD %s x", K(q, "fkids:dependencies")));
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
    assert_string_equal(lrange(K(q, "active")), "kids,other,nolock,gone");
    assert_int_equal(ival(cmd("EXISTS %s %s %s", K(q, "ok1"), K(q, "ok2"), K(q, "fkids"))), 0);
    assert_string_equal(get(K(q, "other:lock")), "t2");
    assert_string_equal(events(q), "completed:jobId=ok1:returnvalue=\"ok\":prev=active|"
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
        freeReplyObject(cmd("HSET %s name n data {}", K(q, id)));
        freeReplyObject(cmd("ZADD %s %ld %s", K(q, set), score0 + i, id));
    }
}

/* A run of jobs with equal keep settings trims once, after its last job; when that job is
 * refused, the trim still happens (as each of BullMQ's per-job finishes would have). */
static void test_trim_owed_by_a_refused_job(void **state) {
    (void)state;
    ferry_queue *q = open_q("fs3", "q", NULL);
    old_finished(q, "completed", 5, 0);
    make_active(q, "a", "t1");
    make_active(q, "b", "t2");
    freeReplyObject(cmd("SET %s other", K(q, "b:lock")));
    fin jobs[] = {{"a", "t1", "completed", "2", NULL, NULL, "0"},
                  {"b", "t2", "completed", "2", NULL, NULL, "1"}};
    long long codes[2];
    finish(q, jobs, 2, codes);
    assert_string_equal(codes_str(codes, 2), "0,-6");
    assert_string_equal(zrange(K(q, "completed")), "o5,5,a,1000");
    assert_int_equal(ival(cmd("EXISTS %s %s %s %s %s", K(q, "o1"), K(q, "o2"), K(q, "o3"),
                              K(q, "o4"), K(q, "o5"))),
                     1);
    ferry_queue_close(q);
}

/* removeOnFail {age, limit}: each of n finishes removes up to `limit` expired jobs, so one
 * trim for a run of n removes up to n * limit (the newest expired first). */
static void test_trim_by_age_with_limit_per_job(void **state) {
    (void)state;
    ferry_queue *q = open_q("fs4", "q", NULL);
    old_finished(q, "failed", 5, -20000); /* far older than now (1000 ms) - 10 s */
    make_active(q, "a", "t1");
    make_active(q, "b", "t1");
    fin jobs[] = {{"a", "t1", "failed", "-1", "10", "1", "0"},
                  {"b", "t1", "failed", "-1", "10", "1", "1"}};
    long long codes[2];
    finish(q, jobs, 2, codes);
    assert_string_equal(codes_str(codes, 2), "0,0");
    assert_string_equal(zrange(K(q, "failed")), "o1,-19999,o2,-19998,o3,-19997,a,1000,b,1000");
    assert_int_equal(ival(cmd("EXISTS %s %s", K(q, "o4"), K(q, "o5"))), 0);
    ferry_queue_close(q);
}

/* The age argument is BullMQ's, in seconds (fractions included): with now = 1000 and
 * age 0.5, jobs finished at or before 500 go, later ones stay. Age 0 (as Node) trims
 * everything finished up to now, the job just finished included. */
static void test_trim_by_age_in_seconds(void **state) {
    (void)state;
    ferry_queue *q = open_q("fs5", "q", NULL);
    old_finished(q, "completed", 3, 498); /* o1 499, o2 500, o3 501 */
    make_active(q, "a", "t1");
    fin jobs[] = {{"a", "t1", "completed", "-1", "0.5", NULL, "1"}};
    long long codes[1];
    finish(q, jobs, 1, codes);
    assert_string_equal(codes_str(codes, 1), "0");
    assert_string_equal(zrange(K(q, "completed")), "o3,501,a,1000");
    assert_int_equal(ival(cmd("EXISTS %s %s %s", K(q, "o1"), K(q, "o2"), K(q, "o3"))), 1);
    make_active(q, "b", "t1");
    fin zero[] = {{"b", "t1", "completed", "-1", "0", NULL, "1"}};
    finish(q, zero, 1, codes);
    assert_string_equal(codes_str(codes, 1), "0");
    assert_string_equal(zrange(K(q, "completed")), "");
    assert_int_equal(ival(cmd("EXISTS %s %s %s", K(q, "o3"), K(q, "a"), K(q, "b"))), 0);
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
        ferry_queue *q = open_q(qn, "q", NULL);
        snprintf(opts, sizeof opts, "{\"removeOnComplete\":{\"age\":%s}}", ages[i]);
        ferry__job_opts o;
        assert_int_equal(ferry__job_opts_parse(opts, &o, NULL), 0);
        /* Node's bound, as BullMQ 6.7.0's removeJobsByMaxAge computes it */
        redisReply *r = cmd("EVAL %s 0 %s %s",
                            "return string.format('%.17g', math.floor(ARGV[1] - ARGV[2] * 1000))",
                            now, ages[i]);
        snprintf(node_bound, sizeof node_bound, "%s", r->str);
        freeReplyObject(r);
        long long b = atoll(node_bound);
        /* finished at the bound (Node trims it) and 1 ms after it (Node keeps it) */
        freeReplyObject(cmd("HSET %s name n data {}", K(q, "at")));
        freeReplyObject(cmd("ZADD %s %lld at", K(q, "completed"), b));
        freeReplyObject(cmd("HSET %s name n data {}", K(q, "after")));
        freeReplyObject(cmd("ZADD %s %lld after", K(q, "completed"), b + 1));
        make_active(q, "a", "t1");
        fin jobs[] = {{"a", "t1", "completed", "-1",
                       age_arg(&o.remove_on_complete, arg, sizeof arg), NULL, "1"}};
        long long codes[1];
        finish_at(q, jobs, 1, codes, now);
        char expect[128];
        if (b + 1 < atoll(now))
            snprintf(expect, sizeof expect, "after,%lld,a,%s", b + 1, now);
        else /* the bound is now: everything finished up to now goes, this job included */
            snprintf(expect, sizeof expect, "after,%lld", b + 1);
        assert_string_equal(zrange(K(q, "completed")), expect);
        ferry__job_opts_free(&o);
        ferry_queue_close(q);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_job_next_to_jobs_with_children),
        cmocka_unit_test(test_mixed_batch_answers_per_job),
        cmocka_unit_test(test_trim_owed_by_a_refused_job),
        cmocka_unit_test(test_trim_by_age_with_limit_per_job),
        cmocka_unit_test(test_trim_by_age_in_seconds),
        cmocka_unit_test(test_trim_by_age_as_node_at_real_clock),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
