/* scheduler.c - ferry_scheduler_upsert / ferry_scheduler_remove: validate a scheduler spec,
 * compute what Node BullMQ 6.7.0's queue.upsertJobScheduler() computes on the client (cron
 * slot, template and iteration options) and run the upsert script, which leaves Redis as
 * Node's addJobScheduler does. Reading schedulers back: scheduler_list.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/scheduler.h"
#include "queue/job_opts_ext.h"
#include "queue/queue_module.h"
#include "sched/cron.h"
#include "sched/scheduler_internal.h"
#include "sched/tz.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/json_text.h"

#define DUE_MS_MAX 2199023255551LL /* 2^41 - 1: due * 4096 stays an exact double */
#define UPSERT_KEYS 4
#define UPSERT_ARGS 17

void ferry_scheduler_spec_init(ferry_scheduler_spec *s) {
    if (s) memset(s, 0, sizeof *s);
}

/* ---- validation ---------------------------------------------------------------------- */

int ferry__sched_check_id(const char *id, size_t max, ferry_error *err) {
    if (!id || !*id) return ferry__err(err, FERRY_EINVAL, "scheduler id is empty");
    size_t n = strlen(id);
    if (n > max)
        return ferry__err(err, FERRY_ETOOBIG, "scheduler id is %zu bytes, limit %zu", n, max);
    if (!ferryx_utf8_valid(id, n))
        return ferry__err(err, FERRY_EINVAL, "scheduler id is not valid UTF-8");
    return 0;
}

/* Number of whitespace-separated fields of a cron expression (ASCII blanks). */
static int cron_fields(const char *p) {
    int n = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p) break;
        n++;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    return n;
}

/* The spec alone (no clock, no Redis). */
static int check_spec(const ferry_scheduler_spec *s, ferry_error *err) {
    int has_every = s->every_ms != 0, has_pattern = s->pattern != NULL;
    if (has_every && has_pattern)
        return ferry__err(err, FERRY_EINVAL, "scheduler: give either every or pattern, not both");
    if (!has_every && !has_pattern)
        return ferry__err(err, FERRY_EINVAL, "scheduler: give every (ms) or a cron pattern");
    if (has_every && (s->every_ms < 1 || s->every_ms > FERRY_SCHEDULER_EVERY_MAX))
        return ferry__err(err, FERRY_EINVAL, "scheduler: every %lld ms is out of range 1..%lld",
                          s->every_ms, FERRY_SCHEDULER_EVERY_MAX);
    if (s->limit < 0 || s->limit > FERRY_SCHEDULER_NUM_MAX)
        return ferry__err(err, FERRY_EINVAL, "scheduler: limit %lld is out of range 0..%lld",
                          s->limit, FERRY_SCHEDULER_NUM_MAX);
    if (s->start_date_ms < 0 || s->start_date_ms > DUE_MS_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "scheduler: start_date_ms %lld is out of range 0..%lld (2039-09)",
                          s->start_date_ms, DUE_MS_MAX);
    if (s->end_date_ms < 0 || s->end_date_ms > FERRY_SCHEDULER_NUM_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "scheduler: end_date_ms %lld is out of range 0..%lld (2^53-1, the "
                          "largest integer JavaScript holds exactly)",
                          s->end_date_ms, FERRY_SCHEDULER_NUM_MAX);
    if (s->end_date_ms && s->start_date_ms > s->end_date_ms)
        return ferry__err(err, FERRY_EINVAL, "scheduler: start_date_ms is after end_date_ms");
    if (s->offset_ms < 0 || s->offset_ms > FERRY_SCHEDULER_EVERY_MAX)
        return ferry__err(err, FERRY_EINVAL, "scheduler: offset %lld ms is out of range 0..%lld",
                          s->offset_ms, FERRY_SCHEDULER_EVERY_MAX);
    if (s->offset_ms && !has_every)
        return ferry__err(err, FERRY_EINVAL,
                          "scheduler: offset applies to every only (a pattern sets its own "
                          "times)");
    if (s->immediately && s->start_date_ms)
        return ferry__err(err, FERRY_EINVAL,
                          "scheduler: immediately and start_date cannot be used together");
    if (has_pattern) {
        int f = cron_fields(s->pattern);
        if (s->pattern[0] != '@' && (f < 5 || f > 6))
            return ferry__err(err, FERRY_EINVAL,
                              "scheduler: cron pattern '%.80s' has %d fields; give 5 (minute "
                              "hour day month weekday) or 6 (seconds first)",
                              s->pattern, f);
    }
    if (s->tz) {
        ferry__tz *z = NULL;
        ferry_error e = {0};
        int rc = ferry__tz_open(s->tz, &z, &e);
        ferry__tz_close(z);
        if (rc) return ferry__err(err, rc, "scheduler: tz: %s", e.message);
    }
    return 0;
}

/* ---- options --------------------------------------------------------------------------- */

/* Keys a template may not set: the scheduler sets them on every iteration (Node overwrites
 * them silently) or ferry does not support them on schedulers. */
static const char *const FORBIDDEN[] = {"jobId",      "delay",        "repeat",        "timestamp",
                                        "prevMillis", "repeatJobKey", "deduplication", "de",
                                        "parent",     "debounce"};

typedef struct built {
    char *template_opts; /* stored in the hash ("{}" = none) */
    char *iter_opts;     /* the first iteration's opts, without jobId / delay */
    long long priority;
    int lifo;
} built;

static void built_free(built *b) {
    free(b->template_opts);
    free(b->iter_opts);
}

/* Template opts merged over the queue defaults as Node does ({...defaultJobOptions,
 * ...template.opts}), validated strictly, then the first iteration's opts. Caller holds the queue's
 * lock (the defaults object is shared). */
static int build_opts(ferry_queue *q, const char *id, const ferry_scheduler_spec *s, int64_t now,
                      long long next, built *b, ferry_error *err) {
    ferry_error e = {0};
    json_t *user = ferry__opts_load_object(s->opts_json, "opts", &e);
    if (!user) return ferry__err(err, e.code, "scheduler: %s", e.message);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof FORBIDDEN / sizeof FORBIDDEN[0]; i++)
        if (json_object_get(user, FORBIDDEN[i]))
            rc = ferry__err(err, FERRY_EINVAL,
                            "scheduler: opts.%s cannot be set on a job scheduler's template",
                            FORBIDDEN[i]);
    const json_t *ua = json_object_get(user, "attempts");
    const json_t *da =
        ferry__queue_defaults(q) ? json_object_get(ferry__queue_defaults(q), "attempts") : NULL;
    int had_attempts = (ua && !json_is_null(ua)) || (da && !json_is_null(da));
    /* a numeric backoff stays a number, as Node stores it (the strict parser normalises it to
     * {type: fixed, delay}; Node's worker does that only when it reads the job) */
    const json_t *bo = json_object_get(user, "backoff");
    if (!bo && ferry__queue_defaults(q)) bo = json_object_get(ferry__queue_defaults(q), "backoff");
    json_t *num_backoff = json_is_number(bo) ? json_incref((json_t *)bo) : NULL;
    json_decref(user);
    if (rc) {
        json_decref(num_backoff);
        return rc;
    }

    ferry__job_opts jo;
    ferry__job_opts_extra x;
    rc = ferry__job_opts_parse_over(ferry__queue_defaults(q), s->opts_json, &jo, &x, &e);
    if (rc) {
        json_decref(num_backoff);
        return ferry__err(err, rc, "scheduler: %s", e.message);
    }
    if (x.has_dedup || x.has_parent)
        rc = ferry__err(err, FERRY_EINVAL,
                        "scheduler: default job options set %s, which job "
                        "schedulers do not support",
                        x.has_dedup ? "deduplication" : "parent");
    json_t *t = rc ? NULL : json_loads(jo.stored_json, 0, NULL);
    b->priority = jo.priority;
    b->lifo = jo.lifo;
    ferry__job_opts_free(&jo);
    if (!rc && !t) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (!rc && num_backoff && json_object_get(t, "backoff"))
        json_object_set(t, "backoff", num_backoff);
    json_decref(num_backoff);
    if (rc) {
        json_decref(t);
        return rc;
    }
    /* the strict parser adds attempts 0 as Node's Job constructor does; the scheduler path
     * stores the template before any Job exists, so only a given attempts is kept */
    if (!had_attempts) json_object_del(t, "attempts");
    b->template_opts = ferryx_json_serialize(t, 1, 2 * FERRY_JOB_OPTS_MAX + 256);

    /* repeat: what was given (Node keeps the user's repeatOpts minus `immediately`), count 1,
     * offset only with every */
    json_t *r = json_object();
    if (r) {
        if (s->every_ms) json_object_set_new(r, "every", json_integer(s->every_ms));
        if (s->pattern) json_object_set_new(r, "pattern", json_string(s->pattern));
        if (s->tz) json_object_set_new(r, "tz", json_string(s->tz));
        if (s->limit) json_object_set_new(r, "limit", json_integer(s->limit));
        if (s->start_date_ms) json_object_set_new(r, "startDate", json_integer(s->start_date_ms));
        if (s->end_date_ms) json_object_set_new(r, "endDate", json_integer(s->end_date_ms));
        if (s->offset_ms) json_object_set_new(r, "offset", json_integer(s->offset_ms));
        json_object_set_new(r, "count", json_integer(1));
    }
    json_object_set_new(t, "repeat", r);
    json_object_set_new(t, "timestamp", json_integer(now));
    if (s->pattern) json_object_set_new(t, "prevMillis", json_integer(next));
    json_object_set_new(t, "repeatJobKey", json_string(id));
    b->iter_opts = r ? ferryx_json_serialize(t, 1, 4 * FERRY_JOB_OPTS_MAX) : NULL;
    json_decref(t);
    if (!b->template_opts || !b->iter_opts) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    return 0;
}

/* ---- upsert ---------------------------------------------------------------------------- */

static void fmt_ll(char *buf, size_t cap, long long v, int present) {
    if (present)
        snprintf(buf, cap, "%lld", v);
    else
        buf[0] = 0;
}

static int run_upsert(ferry_queue *q, const char *id, const ferry_scheduler_spec *s,
                      const char *name, const char *data, int64_t now, long long next,
                      const built *b, char **job_id, long long *delay_ms, ferry_error *err) {
    size_t klen = ferry__queue_keys(q)->base_len + strlen(id) + 16;
    char *kbuf = malloc(klen);
    if (!kbuf) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    snprintf(kbuf, klen, "%srepeat:%s", ferry__queue_keys(q)->base, id);
    const char *keys[UPSERT_KEYS] = {ferry__queue_key(q, QK_REPEAT), kbuf,
                                     ferry__queue_key(q, QK_META), ferry__queue_key(q, QK_EVENTS)};
    char nowb[24], nextb[24], every[24], offset[24], start[24], end[24], limit[24], prio[24];
    fmt_ll(nowb, sizeof nowb, now, 1);
    fmt_ll(nextb, sizeof nextb, next, s->pattern != NULL);
    fmt_ll(every, sizeof every, s->every_ms, s->every_ms != 0);
    fmt_ll(offset, sizeof offset, s->offset_ms, s->offset_ms != 0);
    fmt_ll(start, sizeof start, s->start_date_ms, s->start_date_ms != 0);
    fmt_ll(end, sizeof end, s->end_date_ms, s->end_date_ms != 0);
    fmt_ll(limit, sizeof limit, s->limit, s->limit != 0);
    fmt_ll(prio, sizeof prio, b->priority, 1);
    const char *args[UPSERT_ARGS] = {ferry__queue_keys(q)->base,
                                     id,
                                     nowb,
                                     nextb,
                                     every,
                                     offset,
                                     start,
                                     end,
                                     s->tz ? s->tz : "",
                                     limit,
                                     s->pattern ? s->pattern : "",
                                     name,
                                     data,
                                     b->template_opts,
                                     b->iter_opts,
                                     prio,
                                     b->lifo ? "1" : "0"};
    redisReply *r = NULL;
    /* idempotent: a repeated upsert replaces what the first one wrote */
    int rc = ferry__queue_eval(q, "upsertJobScheduler", UPSERT_KEYS, keys, UPSERT_ARGS, args, NULL,
                               1, &r, err);
    free(kbuf);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "upsert job scheduler", err);
    if (rc == 0 && r->type == REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_ESTATE, "queue %s: scheduler %s: %s (BullMQ code %lld)",
                        ferry__queue_keys(q)->queue, id,
                        r->integer == -10
                            ? "the next slot is held by an iteration that is running or "
                              "finished"
                            : "the next slot and the 32 after it are held by earlier "
                              "iterations",
                        r->integer);
    else if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                         r->element[0]->type != REDIS_REPLY_STRING ||
                         r->element[1]->type != REDIS_REPLY_INTEGER))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: upsert job scheduler: unexpected reply",
                        ferry__queue_keys(q)->queue);
    if (rc == 0) {
        if (delay_ms) *delay_ms = r->element[1]->integer;
        if (job_id && !(*job_id = strndup(r->element[0]->str, r->element[0]->len)))
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    if (r) freeReplyObject(r);
    return rc;
}

int ferry_scheduler_upsert(ferry_queue *q, const char *id, const ferry_scheduler_spec *s,
                           char **job_id, long long *delay_ms, ferry_error *err) {
    if (job_id) *job_id = NULL;
    if (delay_ms) *delay_ms = 0;
    if (!q || !s) return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_upsert: NULL argument");
    int rc = ferry__sched_check_id(id, FERRY_SCHEDULER_ID_MAX, err);
    if (rc) return rc;
    if ((rc = check_spec(s, err))) return rc;
    const char *name = s->name ? s->name : id;
    size_t nlen = strlen(name);
    if (!*name) return ferry__err(err, FERRY_EINVAL, "scheduler: job name is empty");
    if (nlen > FERRY_JOB_NAME_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "scheduler: job name is %zu bytes, limit %d", nlen,
                          FERRY_JOB_NAME_MAX);
    if (!ferryx_utf8_valid(name, nlen))
        return ferry__err(err, FERRY_EINVAL, "scheduler: job name is not valid UTF-8");
    const char *data = s->data_json ? s->data_json : "{}";
    size_t dlen = strlen(data);
    if (dlen > ferry__queue_max_payload(q))
        return ferry__err(err, FERRY_ETOOBIG, "scheduler: job data is %zu bytes, limit %zu", dlen,
                          ferry__queue_max_payload(q));
    ferryx_json_check_error je;
    if (ferryx_json_check(data, dlen, FERRY_JOB_DATA_DEPTH_MAX, &je))
        return ferry__err(err, FERRY_EINVAL, "scheduler: job data: invalid JSON at byte %zu: %s",
                          je.offset, je.reason);

    int64_t now = ferry__now_ms();
    if (s->end_date_ms && s->end_date_ms < now)
        return ferry__err(err, FERRY_EINVAL, "scheduler: end_date_ms %lld is in the past",
                          s->end_date_ms);
    long long next = 0;
    if (s->pattern) {
        ferry_error e = {0};
        if (s->immediately) {
            /* Node returns Date.now() without searching, once the pattern parses */
            rc = ferry__sched_cron_next(s->pattern, s->tz, now, 0, 0, now, &next, &e);
            if (rc == FERRY_ENOTFOUND) rc = 0;
            next = now;
        } else {
            rc = ferry__sched_cron_next(s->pattern, s->tz, now, s->start_date_ms, s->end_date_ms,
                                        now, &next, &e);
        }
        if (rc == FERRY_ENOTFOUND)
            return ferry__err(err, FERRY_EINVAL,
                              "scheduler: cron pattern '%.80s' has no run time "
                              "%s(%s)",
                              s->pattern, s->end_date_ms ? "before end_date " : "", e.message);
        if (rc) return ferry__err(err, rc, "scheduler: %s", e.message);
        if (next > DUE_MS_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "scheduler: first run %lld is past 2039-09, "
                              "where delayed scores lose precision",
                              next);
    } else {
        long long first =
            (s->start_date_ms > now ? s->start_date_ms : now) + s->every_ms + s->offset_ms;
        if (first > DUE_MS_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "scheduler: runs would start past 2039-09, "
                              "where delayed scores lose precision");
    }

    built b = {0};
    ferry__queue_lock(q);
    rc = build_opts(q, id, s, now, next, &b, err);
    if (rc == 0) rc = run_upsert(q, id, s, name, data, now, next, &b, job_id, delay_ms, err);
    ferry__queue_unlock(q);
    built_free(&b);
    return rc;
}

/* ---- remove ---------------------------------------------------------------------------- */

int ferry_scheduler_remove(ferry_queue *q, const char *id, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_scheduler_remove: queue is NULL");
    /* Node's schedulers may have longer ids than upsert takes; they must be removable */
    int rc = ferry__sched_check_id(id, FERRY_SCHEDULER_FOREIGN_ID_MAX, err);
    if (rc) return rc;
    size_t klen = ferry__queue_keys(q)->base_len + strlen(id) + 16;
    char *kbuf = malloc(klen);
    if (!kbuf) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    snprintf(kbuf, klen, "%srepeat:%s", ferry__queue_keys(q)->base, id);
    const char *keys[] = {ferry__queue_key(q, QK_REPEAT), kbuf, ferry__queue_key(q, QK_META),
                          ferry__queue_key(q, QK_EVENTS)};
    const char *args[] = {ferry__queue_keys(q)->base, id};
    redisReply *r = NULL;
    ferry__queue_lock(q);
    /* not idempotent: a retry after a lost reply would say "not found" */
    rc = ferry__queue_eval(q, "removeJobScheduler", 4, keys, 2, args, NULL, 0, &r, err);
    ferry__queue_unlock(q);
    free(kbuf);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "remove job scheduler", err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: remove job scheduler: unexpected reply",
                        ferry__queue_keys(q)->queue);
    if (rc == 0 && r->integer == 1)
        rc = ferry__err(err, FERRY_ENOTFOUND, "queue %s: no job scheduler '%s'",
                        ferry__queue_keys(q)->queue, id);
    if (r) freeReplyObject(r);
    return rc;
}
