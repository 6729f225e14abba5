/* test_finish_script.c - moveToFinished.lua's batched up-front checks, driven directly:
 * a batch must answer every job exactly as one finish per job would (BullMQ codes -1
 * missing job, -2 missing lock, -4 pending children, -6 other token, -9 failed children),
 * including batches that mix those cases, where reading the checks in bulk could hide one
 * case behind another (a missing job next to jobs with children). */
#include "queue_test_helpers.h"

#include "redis/conn.h"

#define NKEYS 12
#define HEAD 11
#define STRIDE 11

/* One job of a finish batch. */
typedef struct fin {
    const char *id, *token, *target; /* target: completed | failed */
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
static void finish(ferry_queue *q, const fin *jobs, size_t n, long long *codes) {
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
    const char *head[HEAD] = {base, "1000", "0", "tok:", "1", "30000", "", "", "", "1", count};
    for (int i = 0; i < HEAD; i++)
        args[i] = head[i];
    for (size_t j = 0; j < n; j++) {
        const char **a = args + HEAD + STRIDE * j;
        a[0] = jobs[j].id;
        a[1] = jobs[j].token;
        a[2] = jobs[j].target;
        a[3] = strcmp(jobs[j].target, "failed") ? "\"ok\"" : "boom";
        a[4] = "";
        a[5] = "0"; /* keepCount 0: delete the finished job */
        a[6] = "";
        a[7] = "1000";
        a[8] = "1";
        a[9] = "0";
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
    fin jobs[] = {{"a", "t1", "completed"},
                  {"b", "t1", "completed"},
                  {"c", "t1", "completed"},
                  {"d", "t1", "completed"}};
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
    fin jobs[] = {{"ok1", "t1", "completed"},    {"gone", "t1", "completed"},
                  {"nolock", "t1", "completed"}, {"other", "t1", "completed"},
                  {"kids", "t1", "completed"},   {"fkids", "t1", "failed"},
                  {"ok2", "t1", "failed"}};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_job_next_to_jobs_with_children),
        cmocka_unit_test(test_mixed_batch_answers_per_job),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
