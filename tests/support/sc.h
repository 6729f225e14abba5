/* sc.h - helpers of the job scheduler tests (test_scheduler.c: layout, re-upsert, removal,
 * validation, reading back; test_scheduler_next.c and test_scheduler_node.c: the worker hook
 * that produces the next iteration), prefix sc_: scheduler specs, upserts that must succeed
 * or fail, reading scores, events and JSON, and a reduced worker fetch. Builds on qt.h.
 * Header-only (each test file is its own executable). */
#ifndef FERRY_TEST_SC_H
#define FERRY_TEST_SC_H

#include <jansson.h>

#include "ferry/scheduler.h"
#include "sched/scheduler_internal.h"
#include "support/qt.h"

#define SC_DAY_MS 86400000LL

static inline ferry_scheduler_spec sc_every(long long every) {
    ferry_scheduler_spec s;
    ferry_scheduler_spec_init(&s);
    s.every_ms = every;
    return s;
}

static inline ferry_scheduler_spec sc_cron(const char *pattern, const char *tz) {
    ferry_scheduler_spec s;
    ferry_scheduler_spec_init(&s);
    s.pattern = pattern;
    s.tz = tz;
    return s;
}

/* noinline: gcc 12 -O3 inlines it and then reports the returned id as a dangling
 * pointer to the local `job` (a false -Wdangling-pointer positive). */
__attribute__((noinline, unused)) static char *
sc_upsert(ferry_queue *q, const char *id, const ferry_scheduler_spec *s, long long *delay) {
    char *job = NULL;
    ferry_error e = {0};
    if (ferry_scheduler_upsert(q, id, s, &job, delay, &e)) fail_msg("upsert %s: %s", id, e.message);
    assert_non_null(job);
    return job;
}

static inline void sc_upsert_fail(ferry_queue *q, const char *id, const ferry_scheduler_spec *s,
                                  int code, const char *msg) {
    char *job = (char *)"x";
    ferry_error e = {0};
    int rc = ferry_scheduler_upsert(q, id, s, &job, NULL, &e);
    if (rc != code)
        fail_msg("upsert %s: rc %d (%s), want %d", id ? id : "(null id)", rc, e.message, code);
    assert_null(job);
    if (!strstr(e.message, msg)) fail_msg("message \"%s\" lacks \"%s\"", e.message, msg);
}

static inline long long sc_millis_of(const char *job_id) {
    const char *c = strrchr(job_id, ':');
    assert_non_null(c);
    return atoll(c + 1);
}

static inline long long sc_zscore(const char *key, const char *member) {
    redisReply *r = qt_cmd("ZSCORE %s %s", key, member);
    long long v = r->type == REDIS_REPLY_NIL ? -1 : (long long)strtod(r->str, NULL);
    freeReplyObject(r);
    return v;
}

/* 1 when the events stream has exactly this entry (as qt_events() spells it). */
static inline int sc_has_event(ferry_queue *q, const char *entry) {
    const char *all = qt_events(q);
    size_t n = strlen(entry);
    for (const char *p = all; (p = strstr(p, entry)) != NULL; p += n)
        if ((p == all || p[-1] == '|') && (p[n] == 0 || p[n] == '|')) return 1;
    return 0;
}

/* Compare two JSON texts as values (key order and `\/` spelling aside). */
static inline void sc_json_same(const char *got, const char *want) {
    json_error_t je;
    json_t *a = json_loads(got, 0, &je), *b = json_loads(want, 0, &je);
    if (!a || !b || !json_equal(a, b)) fail_msg("JSON differs:\n got  %s\n want %s", got, want);
    json_decref(a);
    json_decref(b);
}

/* A worker's fetch, reduced to what matters here: take the job out of wait/delayed into
 * active and read the fields the hook needs. */
typedef struct sc_fetched {
    char id[256], rjk[256], opts[4096];
} sc_fetched;

static inline sc_fetched sc_fetch(ferry_queue *q, const char *id) {
    sc_fetched f;
    redisReply *r = qt_cmd("LREM %s 0 %s", qt_key(q, "wait"), id);
    long long n = qt_ival(r) + qt_ival(qt_cmd("ZREM %s %s", qt_key(q, "delayed"), id)) +
                  qt_ival(qt_cmd("ZREM %s %s", qt_key(q, "prioritized"), id));
    if (n != 1) fail_msg("job %s was not waiting, delayed or prioritized", id);
    freeReplyObject(qt_cmd("LPUSH %s %s", qt_key(q, "active"), id));
    snprintf(f.id, sizeof f.id, "%s", id);
    snprintf(f.rjk, sizeof f.rjk, "%s", qt_hget(qt_key(q, id), "rjk"));
    snprintf(f.opts, sizeof f.opts, "%s", qt_hget(qt_key(q, id), "opts"));
    return f;
}

static inline ferry__sched_result sc_on_fetch(ferry_queue *q, const sc_fetched *f, int64_t now) {
    ferry__sched_fetched j = {f->id, f->rjk, f->opts};
    ferry__sched_result res;
    ferry_error e = {0};
    if (ferry__scheduler_on_fetch(qt_conn, qt_key(q, ""), &j, 1, now, &res, &e))
        fail_msg("on_fetch %s: %s", f->id, e.message);
    return res;
}

#endif
