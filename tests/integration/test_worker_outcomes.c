/* test_worker_outcomes.c - the worker's outcomes beyond complete/fail, against real Redis:
 * FERRY_RETRY_LATER (BullMQ moveToDelayed + DelayedError: no attempt spent) and its bound
 * by max_started_attempts; FERRY_THROTTLED with a worker limiter (queue limiter key +
 * moveJobFromActiveToWait, other limited workers wait, unlimited ones do not - the BullMQ
 * pitfall) and without one (= retry-later); the worker limiter {max, duration}; custom
 * backoff strategies and the built-in "capped"; callbacks.job_log records (the formatter
 * alone is in tests/unit/test_job_log.c); ferry_job_http_outcome; validation of the new
 * options.
 * Timing checks are lower bounds only. */
#include <jansson.h>

#include "ferry/http_classify.h"
#include "support/wt.h"

/* ---- helpers ---------------------------------------------------------------------------- */

#define MAX_RECS 64

typedef struct rec {
    char id[64], outcome[32], trace[300], reason[256], text[1024], json[1024];
    long attempt;
    long long duration_ms, age_ms, delay_ms;
    int has_reason;
} rec;

/* The test state: wt first, so the support callbacks (which take the wt) share userdata. */
typedef struct ot {
    wt t;
    wt_hctx h;
    rec recs[MAX_RECS];
    int nrecs;
    /* what handlers saw */
    long long first_processed_on, second_processed_on;
    long seen_atm, seen_ats;
    long strategy_attempts;
    char strategy_type[64], strategy_reason[64];
} ot;

static void ot_init(ot *s) {
    memset(s, 0, sizeof *s);
    wt_init(&s->t);
    wt_hctx_init(&s->h);
}

static void cb_job_log(const ferry_job_log *r, void *ud) {
    ot *s = ud;
    pthread_mutex_lock(&s->t.mu);
    if (s->nrecs < MAX_RECS) {
        rec *x = &s->recs[s->nrecs++];
        snprintf(x->id, sizeof x->id, "%s", r->id);
        snprintf(x->outcome, sizeof x->outcome, "%s", r->outcome);
        snprintf(x->trace, sizeof x->trace, "%s", r->trace_id);
        x->has_reason = r->reason != NULL;
        snprintf(x->reason, sizeof x->reason, "%s", r->reason ? r->reason : "");
        x->attempt = r->attempt;
        x->duration_ms = r->duration_ms;
        x->age_ms = r->age_ms;
        x->delay_ms = r->delay_ms;
        ferry_job_log_format(r, 0, x->text, sizeof x->text);
        ferry_job_log_format(r, 1, x->json, sizeof x->json);
    }
    pthread_mutex_unlock(&s->t.mu);
}

/* Records of one job id, copied out (at most `cap`); returns how many. */
static int recs_of(ot *s, const char *id, rec *outv, int cap) {
    int n = 0;
    pthread_mutex_lock(&s->t.mu);
    for (int i = 0; i < s->nrecs; i++)
        if (!strcmp(s->recs[i].id, id) && n < cap) outv[n++] = s->recs[i];
    pthread_mutex_unlock(&s->t.mu);
    return n;
}

typedef struct nrec_cond {
    ot *s;
    int n;
} nrec_cond;

static int nrecs_at_least(void *arg) {
    nrec_cond *c = arg;
    pthread_mutex_lock(&c->s->t.mu);
    int v = c->s->nrecs >= c->n;
    pthread_mutex_unlock(&c->s->t.mu);
    return v;
}

#define WAIT_RECS(s, k)                                                                            \
    do {                                                                                           \
        nrec_cond c_ = {(s), (k)};                                                                 \
        if (!th_wait_until(nrecs_at_least, &c_, 15000))                                            \
            fail_msg("timed out waiting for %d job_log records (have %d)", (k), (s)->nrecs);       \
    } while (0)

static void ot_options(ot *s, ferry_worker_options *o, ferry_redis_options *ro) {
    wt_options(&s->t, o, ro);
    o->callbacks.job_log = cb_job_log;
    o->userdata = s;
}

typedef struct stat_cond {
    ferry_worker *w;
    size_t off; /* offset of the counter in ferry_worker_stats */
    unsigned long long n;
} stat_cond;

static int stat_at_least(void *arg) {
    stat_cond *c = arg;
    ferry_worker_stats st;
    ferry_worker_get_stats(c->w, &st);
    return *(unsigned long long *)((char *)&st + c->off) >= c->n;
}

#define WAIT_STAT(w, field, k)                                                                     \
    do {                                                                                           \
        stat_cond c_ = {(w), offsetof(ferry_worker_stats, field), (k)};                            \
        if (!th_wait_until(stat_at_least, &c_, 15000))                                             \
            fail_msg("timed out waiting for stats." #field " >= %d", (int)(k));                    \
    } while (0)

static long long key_pttl(wt *t, const char *suffix) {
    return wt_int(t, "PTTL %s%s", suffix);
}

static char *key_get(wt *t, const char *suffix) {
    redisReply *r = wt_cmd(t, "GET %s%s", t->base, suffix);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

static int list_has(wt *t, const char *list, const char *id) {
    redisReply *r = wt_cmd(t, "LRANGE %s%s 0 -1", t->base, list);
    int found = 0;
    for (size_t i = 0; i < r->elements; i++)
        if (!strcmp(r->element[i]->str, id)) found = 1;
    freeReplyObject(r);
    return found;
}

static long long evalsha_calls(wt *t) {
    redisReply *r = wt_cmd(t, "INFO commandstats");
    long long n = 0;
    const char *p = r->type == REDIS_REPLY_STRING ? strstr(r->str, "cmdstat_evalsha:calls=") : NULL;
    if (p) n = strtoll(p + strlen("cmdstat_evalsha:calls="), NULL, 10);
    freeReplyObject(r);
    return n;
}

/* Due time (ms) of a job in `delayed`, from its score (due * 4096 + seq). */
static long long delayed_due(wt *t, const char *id) {
    char *sc = wt_zscore(t, "delayed", id);
    if (!sc) fail_msg("job %s not in delayed", id);
    long long due = (long long)(strtod(sc, NULL) / 4096.0);
    free(sc);
    return due;
}

typedef struct in_cond {
    wt *t;
    const char *set, *id;
} in_cond;

static int in_zset(void *arg) {
    in_cond *c = arg;
    char *sc = wt_zscore(c->t, c->set, c->id);
    free(sc);
    return sc != NULL;
}

#define WAIT_IN_ZSET(t, set, id)                                                                   \
    do {                                                                                           \
        in_cond c_ = {(t), (set), (id)};                                                           \
        if (!th_wait_until(in_zset, &c_, 15000))                                                   \
            fail_msg("timed out waiting for job %s in %s", (id), (set));                           \
    } while (0)

static int in_set(wt *t, const char *set, const char *id) {
    char *sc = wt_zscore(t, set, id);
    free(sc);
    return sc != NULL;
}

/* ---- the handler -------------------------------------------------------------------------- */

static ferry_outcome handler(ferry_job *job, void *ud) {
    ot *s = ud;
    wt_hctx_count_run(&s->h);
    const char *n = ferry_job_name(job);
    long long po = strtoll(ferry_job_field(job, "processedOn"), NULL, 10);
    if (!strcmp(n, "later-once")) {
        pthread_mutex_lock(&s->h.mu);
        int first = s->first_processed_on == 0;
        if (first)
            s->first_processed_on = po;
        else
            s->second_processed_on = po;
        s->seen_atm = ferry_job_attempts_made(job);
        s->seen_ats = ferry_job_attempts_started(job);
        pthread_mutex_unlock(&s->h.mu);
        if (first) {
            ferry_job_set_delay(job, 1500);
            ferry_job_set_failure(job, "busy, later", NULL);
            return FERRY_RETRY_LATER;
        }
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "later-always")) {
        ferry_job_set_delay(job, 0);
        return FERRY_RETRY_LATER;
    }
    if (!strcmp(n, "throttle-once")) {
        if (ferry_job_attempts_started(job) == 1) {
            ferry_job_set_delay(job, 2500);
            ferry_job_set_failure(job, "carrier: HTTP 429", NULL);
            return FERRY_THROTTLED;
        }
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "throttle-short")) {
        if (ferry_job_attempts_started(job) == 1) {
            ferry_job_set_delay(job, 300);
            return FERRY_THROTTLED;
        }
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "throttle-default")) return FERRY_THROTTLED; /* no delay: 10 s */
    if (!strcmp(n, "fail")) {
        ferry_job_set_failure(job, "boom", NULL);
        return FERRY_FAILED;
    }
    if (!strcmp(n, "fatal")) {
        ferry_job_set_failure(job, "bad \"input\"\nline2", NULL);
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(n, "slow")) {
        th_sleep_ms(40); /* the run time the record must report, not synchronisation */
        return FERRY_COMPLETED;
    }
    if (!strcmp(n, "lose-lock")) {
        /* another worker "took" the job: its lock is now someone else's */
        ferry_conn *c = th_conn();
        redisReply *r = th_cmd(c, "SET %s%s:lock someone-else", s->t.base, ferry_job_id(job));
        freeReplyObject(r);
        ferry__conn_close(c);
        return FERRY_COMPLETED;
    }
    if (!strncmp(n, "http-", 5)) {
        ferry_http_verdict v = {FERRY_HTTP_OK, 0};
        const char *reason = "svc: HTTP 503";
        if (!strcmp(n, "http-transient")) v.cls = FERRY_HTTP_TRANSIENT, reason = NULL;
        if (!strcmp(n, "http-later")) v.cls = FERRY_HTTP_RETRY_LATER, v.delay_ms = 800;
        if (!strcmp(n, "http-throttled")) v.cls = FERRY_HTTP_THROTTLED, v.delay_ms = 900;
        if (!strcmp(n, "http-permanent")) v.cls = FERRY_HTTP_PERMANENT, reason = "svc: HTTP 404";
        if (!strcmp(n, "http-huge")) v.cls = FERRY_HTTP_RETRY_LATER, v.delay_ms = 1LL << 50;
        ferry_outcome want = v.cls == FERRY_HTTP_OK            ? FERRY_COMPLETED
                             : v.cls == FERRY_HTTP_TRANSIENT   ? FERRY_FAILED
                             : v.cls == FERRY_HTTP_RETRY_LATER ? FERRY_RETRY_LATER
                             : v.cls == FERRY_HTTP_THROTTLED   ? FERRY_THROTTLED
                                                               : FERRY_FAILED_PERMANENT;
        ferry_outcome got = ferry_job_http_outcome(job, &v, reason);
        if (got != want) {
            ferry_job_set_failure(job, "http outcome mismatch", NULL);
            return FERRY_FAILED_PERMANENT;
        }
        return got;
    }
    return FERRY_COMPLETED;
}

/* ---- retry-later -------------------------------------------------------------------------- */

static void test_retry_later(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *id = wt_add(t, "later-once", NULL, "{\"attempts\":2}");
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &s);

    WAIT_IN_ZSET(t, "delayed", id);
    /* BullMQ after job.moveToDelayed + DelayedError: delay field, no atm, ats 1 */
    wt_expect_field(t, id, "delay", "1500");
    wt_expect_field(t, id, "atm", NULL);
    wt_expect_field(t, id, "ats", "1");
    wt_expect_field(t, id, "failedReason", "busy, later");
    wt_expect_field(t, id, "stacktrace", NULL);
    long long due = delayed_due(t, id);
    assert_true(due >= s.first_processed_on + 1500);
    char lock[160];
    snprintf(lock, sizeof lock, "%s:lock", id);
    assert_int_equal(WT_EXISTS(t, lock), 0);

    WT_WAIT_ZCARD(t, "completed", 1);
    WAIT_STAT(w, completed, 1);
    /* ran again after the delay, as a first attempt: attemptsMade 0, started 2 */
    assert_true(s.second_processed_on >= s.first_processed_on + 1500);
    assert_int_equal(s.seen_atm, 0);
    assert_int_equal(s.seen_ats, 2);
    wt_expect_field(t, id, "ats", "2");
    wt_expect_field(t, id, "atm", "1");
    char *ev = wt_events(t, id, NULL);
    assert_non_null(strstr(ev, "added waiting active delayed waiting active completed"));
    free(ev);

    ferry_worker_stats st;
    ferry_worker_get_stats(w, &st);
    assert_int_equal(st.retried_later, 1);
    assert_int_equal(st.retried, 0);
    assert_int_equal(st.failed, 0);
    assert_int_equal(wt_count(t, &t->failed_retry), 0); /* no failed event for a DelayedError */
    wt_stop(w);

    rec r[4];
    assert_int_equal(recs_of(&s, id, r, 4), 2);
    assert_string_equal(r[0].outcome, "retry-later");
    assert_int_equal(r[0].delay_ms, 1500);
    assert_int_equal(r[0].attempt, 1);
    assert_string_equal(r[0].reason, "busy, later");
    assert_string_equal(r[1].outcome, "completed");
    assert_int_equal(r[1].attempt, 1);
    assert_false(r[1].has_reason);
    assert_int_equal(t->errors, 0);
    free(id);
    wt_fini(t);
}

static void test_retry_later_bounded_by_max_started(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *id = wt_add(t, "later-always", "{\"x\":1}", NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    o.max_started_attempts = 3;
    ferry_worker *w = wt_start(&o, handler, &s);
    WT_WAIT_ZCARD(t, "failed", 1);
    WAIT_RECS(&s, 4);
    /* runs 1..3 postponed; the 4th start exceeds the limit and fails without running */
    assert_int_equal(wt_runs_of(&s.h), 3);
    wt_expect_field(t, id, "failedReason", "job started more than allowable limit");
    wt_expect_field(t, id, "ats", "4");
    wt_expect_field(t, id, "atm", "1");
    ferry_worker_stats st;
    ferry_worker_get_stats(w, &st);
    assert_int_equal(st.retried_later, 3);
    assert_int_equal(st.failed, 1);
    wt_stop(w);
    rec r[6];
    assert_int_equal(recs_of(&s, id, r, 6), 4);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(r[i].outcome, "retry-later");
        assert_int_equal(r[i].delay_ms, 0);
    }
    assert_string_equal(r[3].outcome, "permanent");
    assert_int_equal(r[3].duration_ms, 0);
    assert_string_equal(r[3].reason, "job started more than allowable limit");
    free(id);
    wt_fini(t);
}

/* ---- throttled ---------------------------------------------------------------------------- */

static void test_throttled_with_limiter(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *x = wt_add(t, "throttle-once", NULL, "{\"attempts\":3}");
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    o.limiter_max = 1000;
    o.limiter_duration_ms = 1000;
    o.name = "wa";
    ferry_worker *a = wt_start(&o, handler, &s);
    WAIT_STAT(a, throttled, 1);
    long long calls0 = evalsha_calls(t);
    long long t0 = (long long)ferry__now_ms();

    /* queue.rateLimit(2500): the manual-limit value with a TTL */
    char *lim = key_get(t, "limiter");
    assert_non_null(lim);
    assert_string_equal(lim, "9007199254740991");
    free(lim);
    long long pttl = key_pttl(t, "limiter");
    assert_true(pttl > 0 && pttl <= 2500);
    long long expires_at = t0 + pttl; /* lower bound of when the limit ends */
    /* moveJobFromActiveToWait: back in wait, no attempt spent, the reason kept */
    assert_true(list_has(t, "wait", x));
    assert_int_equal(WT_LLEN(t, "active"), 0);
    wt_expect_field(t, x, "atm", NULL);
    wt_expect_field(t, x, "ats", "1");
    wt_expect_field(t, x, "failedReason", "carrier: HTTP 429");
    char *ev = wt_events(t, x, "prev");
    assert_non_null(strstr(ev, "active(prev=waiting) waiting(prev=active)"));
    free(ev);

    /* a second ferry worker with a limiter, and fresh work: nothing runs before the end */
    char *z = wt_add(t, "plain", NULL, NULL);
    ferry_worker_options ob = o;
    ob.name = "wb";
    ferry_worker *b = wt_start(&ob, handler, &s);
    WT_WAIT_ZCARD(t, "completed", 2);
    long long px = wt_hget_ll(t, x, "processedOn"), pz = wt_hget_ll(t, z, "processedOn");
    /* slack: processedOn is the client's clock read before the call reaches Redis */
    assert_true(px >= expires_at - 100);
    assert_true(pz >= expires_at - 100);
    wt_expect_field(t, x, "ats", "2");
    wt_expect_field(t, x, "atm", "1");
    /* the limited workers slept through the limit instead of asking again and again */
    long long calls = evalsha_calls(t) - calls0;
    if (calls > 60) fail_msg("%lld script calls while rate limited: spinning?", calls);

    ferry_worker_stats st;
    ferry_worker_get_stats(a, &st);
    assert_int_equal(st.throttled, 1);
    assert_int_equal(st.retried_later, 0);
    assert_int_equal(ferry_worker_close(a, 10000), 0);
    assert_int_equal(ferry_worker_close(b, 10000), 0);
    ferry_worker_free(a);
    ferry_worker_free(b);

    rec r[4];
    assert_int_equal(recs_of(&s, x, r, 4), 2);
    assert_string_equal(r[0].outcome, "throttled");
    assert_int_equal(r[0].delay_ms, 2500);
    assert_string_equal(r[0].reason, "carrier: HTTP 429");
    assert_string_equal(r[1].outcome, "completed");

    /* The BullMQ pitfall: a manual limit stops only workers with a limiter. One without
     * takes a job while the limit still runs. */
    redisReply *rr = wt_cmd(t, "SET %slimiter 9007199254740991 PX 30000", t->base);
    freeReplyObject(rr);
    char *y = wt_add(t, "plain", NULL, NULL);
    ferry_worker_options oc;
    ferry_redis_options roc;
    ot_options(&s, &oc, &roc);
    oc.name = "wc";
    ferry_worker *c = wt_start(&oc, handler, &s);
    WT_WAIT_ZCARD(t, "completed", 3);
    wt_expect_field(t, y, "pb", "wc");
    assert_true(key_pttl(t, "limiter") > 0);
    wt_stop(c);
    assert_int_equal(t->errors, 0);
    free(x), free(y), free(z);
    wt_fini(t);
}

static void test_throttled_without_limiter(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *j1 = wt_add(t, "throttle-short", NULL, NULL);
    char *j2 = wt_add(t, "throttle-default", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &s);
    WT_WAIT_ZCARD(t, "completed", 1);
    WAIT_IN_ZSET(t, "delayed", j2);
    /* exactly retry-later: delayed, no attempt, no limiter key */
    assert_int_equal(WT_EXISTS(t, "limiter"), 0);
    wt_expect_field(t, j1, "ats", "2");
    wt_expect_field(t, j1, "atm", "1");
    wt_expect_field(t, j2, "delay", "10000"); /* FERRY_THROTTLE_DEFAULT_MS */
    wt_expect_field(t, j2, "atm", NULL);
    ferry_worker_stats st;
    ferry_worker_get_stats(w, &st);
    assert_int_equal(st.retried_later, 2);
    assert_int_equal(st.throttled, 0);
    wt_stop(w);
    rec r[4];
    assert_int_equal(recs_of(&s, j1, r, 4), 2);
    assert_string_equal(r[0].outcome, "retry-later");
    assert_int_equal(r[0].delay_ms, 300);
    assert_int_equal(recs_of(&s, j2, r, 4), 1);
    assert_string_equal(r[0].outcome, "retry-later");
    assert_int_equal(r[0].delay_ms, 10000);
    free(j1), free(j2);
    wt_fini(t);
}

/* ---- limiter ------------------------------------------------------------------------------ */

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void test_limiter_window(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *ids[6];
    for (int i = 0; i < 6; i++)
        ids[i] = wt_add(t, "plain", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    o.concurrency = 4; /* more free slots than the limiter allows per window */
    o.limiter_max = 2;
    o.limiter_duration_ms = 1000;
    ferry_worker *w = wt_start(&o, handler, &s);
    WT_WAIT_ZCARD(t, "completed", 6);
    wt_stop(w);
    long long po[6];
    for (int i = 0; i < 6; i++)
        po[i] = wt_hget_ll(t, ids[i], "processedOn");
    qsort(po, 6, sizeof po[0], cmp_ll);
    /* fixed windows of 1000 ms with 2 jobs each: any 3 starts span at least one window
     * (slack: processedOn is the client's clock read before the call reaches Redis; 3 jobs
     * in one window would start a few ms apart) */
    for (int i = 0; i + 2 < 6; i++)
        if (po[i + 2] - po[i] < 1000 - 100)
            fail_msg("jobs %d..%d started within %lld ms", i, i + 2, po[i + 2] - po[i]);
    for (int i = 0; i < 6; i++)
        free(ids[i]);
    assert_int_equal(t->errors, 0);
    wt_fini(t);
}

/* ---- backoff strategies ---------------------------------------------------------------- */

static long long strat_linear(long attempts_made, const char *type, const char *reason,
                              const ferry_job *job, void *ud) {
    ot *s = ud;
    pthread_mutex_lock(&s->h.mu);
    s->strategy_attempts = attempts_made;
    snprintf(s->strategy_type, sizeof s->strategy_type, "%s", type);
    snprintf(s->strategy_reason, sizeof s->strategy_reason, "%s", reason);
    pthread_mutex_unlock(&s->h.mu);
    (void)job;
    return 5000 * attempts_made;
}

static long long strat_never(long attempts_made, const char *type, const char *reason,
                             const ferry_job *job, void *ud) {
    (void)attempts_made, (void)type, (void)reason, (void)job, (void)ud;
    return -1;
}

static void test_custom_backoff(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *lin = wt_add(t, "fail", NULL, "{\"attempts\":3,\"backoff\":{\"type\":\"linear\"}}");
    char *nev = wt_add(t, "fail", NULL, "{\"attempts\":5,\"backoff\":{\"type\":\"never\"}}");
    char *cap = wt_add(t, "fail", NULL,
                       "{\"attempts\":2,\"backoff\":{\"type\":\"capped\",\"delay\":8000}}");
    char *unk = wt_add(t, "fail", NULL, "{\"attempts\":2,\"backoff\":{\"type\":\"nope\"}}");
    ferry_backoff_strategy strategies[] = {
        {"linear", strat_linear, &s},
        {"never", strat_never, NULL},
    };
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    o.backoff_strategies = strategies;
    o.nbackoff_strategies = 2;
    ferry_worker *w = wt_start(&o, handler, &s);
    WAIT_IN_ZSET(t, "delayed", lin);
    WAIT_IN_ZSET(t, "delayed", cap);
    WAIT_IN_ZSET(t, "failed", nev);
    WAIT_IN_ZSET(t, "failed", unk);
    WAIT_RECS(&s, 4);

    /* registered strategy: its delay, an attempt spent */
    wt_expect_field(t, lin, "delay", "5000");
    wt_expect_field(t, lin, "atm", "1");
    assert_true(delayed_due(t, lin) >= wt_hget_ll(t, lin, "processedOn") + 5000);
    assert_int_equal(s.strategy_attempts, 1);
    assert_string_equal(s.strategy_type, "linear");
    assert_string_equal(s.strategy_reason, "boom");
    /* -1: failed at once with attempts left, reason unchanged */
    wt_expect_field(t, nev, "failedReason", "boom");
    wt_expect_field(t, nev, "atm", "1");
    /* built-in capped with base = backoff.delay 8000: attempt 1 -> [4000, 8000] */
    long long d = wt_hget_ll(t, cap, "delay");
    assert_true(d >= 4000 && d <= 8000);
    /* unknown strategy: failed now, saying so */
    char *why = wt_hget(t, unk, "failedReason");
    assert_non_null(strstr(why, "unknown backoff strategy \"nope\""));
    free(why);
    wt_stop(w);

    rec r[2];
    assert_int_equal(recs_of(&s, lin, r, 2), 1);
    assert_string_equal(r[0].outcome, "retry");
    assert_int_equal(r[0].delay_ms, 5000);
    assert_int_equal(recs_of(&s, nev, r, 2), 1);
    assert_string_equal(r[0].outcome, "failed");
    assert_int_equal(recs_of(&s, cap, r, 2), 1);
    assert_int_equal(r[0].delay_ms, d);
    free(lin), free(nev), free(cap), free(unk);
    wt_fini(t);
}

/* ---- job log ------------------------------------------------------------------------------ */

static void test_job_log_records(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    const char *secret = "s3cret-payload";
    /* the envelope carries an integer past int64 (any JS number): still parsed for traceId */
    char *env = wt_add(t, "plain",
                       "{\"eventId\":\"e-1\",\"traceId\":\"abc\",\"payload\":{\"card\":"
                       "\"s3cret-payload\",\"n\":123456789012345678901234}}",
                       NULL);
    char *slow = wt_add(t, "slow", "{\"card\":\"s3cret-payload\"}", NULL);
    char *fatal = wt_add(t, "fatal", "{\"card\":\"s3cret-payload\"}", NULL);
    char *retry = wt_add(t, "fail", NULL, "{\"attempts\":2}");
    char *lost = wt_add(t, "lose-lock", NULL, NULL);
    /* a nested traceId or a non-string one is not the envelope's */
    char *nested = wt_add(t, "plain", "{\"payload\":{\"traceId\":\"inner\"},\"traceId\":7}", NULL);
    /* ... and was enqueued a minute ago: its age says so */
    long long ts = wt_hget_ll(t, nested, "timestamp");
    freeReplyObject(wt_cmd(t, "HSET %s%s timestamp %lld", t->base, nested, ts - 60000));
    /* deferred failure: fails without running */
    char *defa = wt_add(t, "plain", NULL, NULL);
    redisReply *rr =
        wt_cmd(t, "HSET %s%s defa %s", t->base, defa, "job stalled more than allowable limit");
    freeReplyObject(rr);

    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &s);
    WAIT_RECS(&s, 8); /* env, slow, fatal, retry x2, lost, nested, defa */
    wt_stop(w);

    rec r[4];
    assert_int_equal(recs_of(&s, env, r, 4), 1);
    assert_string_equal(r[0].outcome, "completed");
    assert_string_equal(r[0].trace, "abc");
    assert_int_equal(r[0].attempt, 1);
    assert_int_equal(recs_of(&s, nested, r, 4), 1);
    char dflt[128];
    snprintf(dflt, sizeof dflt, "job-%s-%s", WT_QUEUE, nested);
    assert_string_equal(r[0].trace, dflt);
    if (r[0].age_ms < 60000 || r[0].age_ms > 120000)
        fail_msg("age_ms %lld of a job enqueued a minute ago", r[0].age_ms);

    assert_int_equal(recs_of(&s, slow, r, 4), 1);
    assert_true(r[0].duration_ms >= 40);
    assert_true(r[0].age_ms >= r[0].duration_ms);
    snprintf(dflt, sizeof dflt, "job-%s-%s", WT_QUEUE, slow);
    assert_string_equal(r[0].trace, dflt);

    assert_int_equal(recs_of(&s, fatal, r, 4), 1);
    assert_string_equal(r[0].outcome, "permanent");
    assert_string_equal(r[0].reason, "bad \"input\"\nline2");
    /* one line, reason quoted and escaped */
    assert_non_null(strstr(r[0].text, " outcome=permanent "));
    assert_non_null(strstr(r[0].text, "reason=\"bad \\\"input\\\"\\nline2\""));
    assert_null(strchr(r[0].text, '\n'));

    assert_int_equal(recs_of(&s, retry, r, 4), 2);
    assert_string_equal(r[0].outcome, "retry");
    assert_int_equal(r[0].attempt, 1);
    assert_string_equal(r[1].outcome, "failed");
    assert_int_equal(r[1].attempt, 2);
    assert_string_equal(r[1].reason, "boom");

    assert_int_equal(recs_of(&s, lost, r, 4), 1);
    assert_string_equal(r[0].outcome, "lock-lost");

    assert_int_equal(recs_of(&s, defa, r, 4), 1);
    assert_string_equal(r[0].outcome, "permanent");
    assert_int_equal(r[0].duration_ms, 0);
    assert_string_equal(r[0].reason, "job stalled more than allowable limit");

    /* every line: no job data; the JSON one parses and names the fields */
    pthread_mutex_lock(&t->mu);
    int n = s.nrecs;
    pthread_mutex_unlock(&t->mu);
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) {
        const rec *x = &s.recs[i];
        assert_null(strstr(x->text, secret));
        assert_null(strstr(x->json, secret));
        assert_non_null(strstr(x->text, "queue=wq "));
        json_error_t je;
        json_t *j = json_loads(x->json, 0, &je);
        if (!j) fail_msg("bad JSON line %s: %s", x->json, je.text);
        assert_string_equal(json_string_value(json_object_get(j, "outcome")), x->outcome);
        assert_string_equal(json_string_value(json_object_get(j, "id")), x->id);
        assert_string_equal(json_string_value(json_object_get(j, "trace")), x->trace);
        assert_int_equal(json_integer_value(json_object_get(j, "attempt")), x->attempt);
        json_decref(j);
    }
    free(env), free(slow), free(fatal), free(retry), free(lost), free(nested), free(defa);
    wt_fini(t);
}

/* ---- HTTP outcome -------------------------------------------------------------------------- */

static void test_http_outcome(void **state) {
    (void)state;
    ot s;
    ot_init(&s);
    wt *t = &s.t;
    char *ok = wt_add(t, "http-ok", NULL, NULL);
    char *tr = wt_add(t, "http-transient", NULL, NULL);
    char *la = wt_add(t, "http-later", NULL, NULL);
    char *th = wt_add(t, "http-throttled", NULL, NULL);
    char *pe = wt_add(t, "http-permanent", NULL, "{\"attempts\":3}");
    char *hu = wt_add(t, "http-huge", NULL, NULL);
    ferry_worker_options o;
    ferry_redis_options ro;
    ot_options(&s, &o, &ro);
    ferry_worker *w = wt_start(&o, handler, &s);
    WAIT_RECS(&s, 6);
    wt_stop(w);
    assert_true(in_set(t, "completed", ok));
    wt_expect_field(t, tr, "failedReason", "HTTP transient"); /* NULL reason: the class */
    assert_true(in_set(t, "failed", tr));
    wt_expect_field(t, la, "delay", "800");
    wt_expect_field(t, la, "failedReason", "svc: HTTP 503");
    wt_expect_field(t, la, "atm", NULL);
    wt_expect_field(t, th, "delay", "900");      /* no limiter: retry-later */
    wt_expect_field(t, hu, "delay", "86400000"); /* clamped to FERRY_RETRY_AFTER_MAX_MS */
    wt_expect_field(t, pe, "failedReason", "svc: HTTP 404");
    wt_expect_field(t, pe, "atm", "1"); /* attempts left, but permanent */
    assert_true(in_set(t, "failed", pe));
    free(ok), free(tr), free(la), free(th), free(pe), free(hu);
    wt_fini(t);
}

/* ---- validation -------------------------------------------------------------------------- */

static void expect_create_error(const ferry_worker_options *o, const char *needle) {
    ferry_worker *w = (ferry_worker *)1;
    ferry_error e = {0};
    assert_int_equal(ferry_worker_create(WT_QUEUE, o, handler, NULL, &w, &e), FERRY_EINVAL);
    assert_null(w);
    if (!strstr(e.message, needle)) fail_msg("message '%s' lacks '%s'", e.message, needle);
}

static void test_option_validation(void **state) {
    (void)state;
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    o.limiter_max = 5;
    expect_create_error(&o, "limiter_max (5) and limiter_duration_ms (0) must both be > 0");
    o.limiter_max = 0;
    o.limiter_duration_ms = 1000;
    expect_create_error(&o, "must both be > 0");
    o.limiter_duration_ms = -1;
    expect_create_error(&o, "limiter_duration_ms -1 out of range");
    o.limiter_duration_ms = 0;
    o.limiter_max = -3;
    expect_create_error(&o, "limiter_max -3 out of range");
    o.limiter_max = 0;
    ferry_backoff_strategy bad = {"exponential", strat_never, NULL};
    o.backoff_strategies = &bad;
    o.nbackoff_strategies = 1;
    expect_create_error(&o, "built into BullMQ");
    o.backoff_strategies = NULL;
    expect_create_error(&o, "backoff_strategies is NULL");
    o.nbackoff_strategies = 0;
    /* what start would refuse is refused here, naming it: timeouts, a prefix or a name
     * that cannot be part of a Redis client name */
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.command_timeout_ms = -5;
    o.redis = &ro;
    expect_create_error(&o, "command_timeout_ms -5 out of range");
    ro.command_timeout_ms = 0;
    ro.connect_timeout_ms = 86400001;
    expect_create_error(&o, "connect_timeout_ms 86400001 out of range");
    o.redis = NULL;
    o.prefix = "my prefix";
    expect_create_error(&o, "the prefix may hold only printable ASCII without spaces");
    o.prefix = NULL;
    o.name = "w\xc3\xa9";
    expect_create_error(&o, "name may hold only printable ASCII without spaces");
    o.name = NULL;
    o.nbackoff_strategies = 1;
    /* valid: both set, a strategy */
    ferry_backoff_strategy good = {"capped", ferry_backoff_capped, NULL};
    o.backoff_strategies = &good;
    o.limiter_max = 4;
    o.limiter_duration_ms = 1000;
    ferry_worker *w = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_worker_create(WT_QUEUE, &o, handler, NULL, &w, &e), 0);
    ferry_worker_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_option_validation),
        cmocka_unit_test(test_retry_later),
        cmocka_unit_test(test_retry_later_bounded_by_max_started),
        cmocka_unit_test(test_throttled_with_limiter),
        cmocka_unit_test(test_throttled_without_limiter),
        cmocka_unit_test(test_limiter_window),
        cmocka_unit_test(test_custom_backoff),
        cmocka_unit_test(test_job_log_records),
        cmocka_unit_test(test_http_outcome),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
