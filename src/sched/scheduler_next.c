/* scheduler_next.c - the worker side of job schedulers: when a worker fetches an iteration
 * (a job with `rjk`), add the next one, as Node BullMQ 6.7.0's worker does with
 * upsertJobScheduler(override=false) + the updateJobScheduler script (protocol §8.3).
 * Also the cron step and legacy-key test that the producer side (scheduler.c) shares. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts_ext.h"
#include "util/json_text.h"
#include "sched/cron.h"
#include "sched/scheduler_internal.h"
#include "sched/tz.h"
#include "util/error.h"
#include "util/numtext.h"

#define NEXT_KEYS 4
#define NEXT_ARGS 11
#define PRIORITY_MAX 2097151

/* ---- shared pure helpers ------------------------------------------------------------- */

int ferry__sched_json_num(const json_t *v, double *out) {
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        *out = json_real_value(v);
        return 1;
    }
    return 0;
}

/* JavaScript truthiness of a number member (absent, 0, NaN and non-numbers are falsy). */
static int truthy_num(const json_t *obj, const char *key, double *out) {
    double d;
    if (!ferry__sched_json_num(json_object_get(obj, key), &d) || d == 0 || isnan(d)) return 0;
    *out = d;
    return 1;
}

/* ToNumber of a JSON value, as JavaScript's relational operators apply it: numbers as they
 * are, strings as Number(), true 1, false and null 0. Objects and arrays are NaN (JavaScript
 * would convert them through their string form; no client writes them here). */
static double js_to_number(const json_t *v) {
    double d;
    if (ferry__sched_json_num(v, &d)) return d;
    if (json_is_string(v)) return ferryx_js_number(json_string_value(v), json_string_length(v));
    if (json_is_true(v)) return 1;
    if (json_is_false(v) || json_is_null(v)) return 0;
    return NAN;
}

/* JavaScript truthiness of a JSON member (v NULL = absent = undefined). */
static int js_truthy(const json_t *v) {
    double d;
    if (!v || json_is_null(v) || json_is_false(v)) return 0;
    if (ferry__sched_json_num(v, &d)) return d != 0 && !isnan(d);
    if (json_is_string(v)) return json_string_length(v) > 0;
    return 1; /* true, objects, arrays */
}

/* Lua truthiness of a JSON member after Node's msgpack round trip: null and absent are nil,
 * so only those and false are false (0 and "" are true in Lua). */
static int lua_truthy(const json_t *v) {
    return v && !json_is_null(v) && !json_is_false(v);
}

/* A double from JSON as a long long, clamped to JavaScript's safe integers. */
static long long js_ll(double d) {
    return ferryx_clamp_ll(d, -FERRY__JS_SAFE_MAX, FERRY__JS_SAFE_MAX);
}

int ferry__sched_cron_next(const char *pattern, const char *tz, long long from_ms,
                           long long start_ms, long long end_ms, long long clamp_ms,
                           long long *next_ms, ferry_error *err) {
    ferry__cron *cron = NULL;
    ferry__tz *zone = NULL;
    int rc = ferry__cron_parse(pattern, &cron, err);
    if (rc == 0) rc = tz && *tz ? ferry__tz_open(tz, &zone, err) : 0;
    if (rc == 0) {
        /* cron-parser: currentDate below startDate starts at startDate; past endDate (or past
         * its own range) nothing can follow */
        long long from = start_ms > from_ms ? start_ms : from_ms;
        long long next = 0;
        if ((end_ms > 0 && from > end_ms) || from > FERRY_CRON_MS_MAX || from < FERRY_CRON_MS_MIN)
            rc = ferry__err(err, FERRY_ENOTFOUND, "no run time after %lld", from);
        else
            rc = ferry__cron_next_in(cron, zone ? zone : ferry__tz_utc(), from, &next, err);
        if (rc == 0 && end_ms > 0 && next > end_ms)
            rc = ferry__err(err, FERRY_ENOTFOUND, "next run time %lld is past the end date %lld",
                            next, end_ms);
        if (rc == 0) *next_ms = next < clamp_ms ? clamp_ms : next;
    }
    ferry__tz_close(zone);
    ferry__cron_free(cron);
    return rc;
}

static int all_digits(const char *s, size_t from, size_t to) {
    if (from >= to) return 0;
    for (size_t i = from; i < to; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

int ferry__sched_legacy_shape(const char *key) {
    /* name:id:endDate:tz:<cron with a space | every digits>, endDate empty or digits */
    const char *c[4];
    const char *p = key;
    for (int i = 0; i < 4; i++) {
        c[i] = strchr(p, ':');
        if (!c[i]) return 0;
        p = c[i] + 1;
    }
    size_t end_from = (size_t)(c[1] - key) + 1, end_to = (size_t)(c[2] - key);
    if (end_from < end_to && !all_digits(key, end_from, end_to)) return 0;
    const char *suffix = c[3] + 1;
    if (!*suffix) return 0;
    if (strchr(suffix, ' ')) return 1;
    return all_digits(suffix, 0, strlen(suffix));
}

/* ---- one job: decide, and build the script arguments ------------------------------- */

typedef struct next_call {
    char *keybuf; /* repeat \0 repeat:<id> \0 meta \0 events \0 */
    const char *keys[NEXT_KEYS];
    char *opts; /* next iteration's opts JSON, without jobId / delay */
    char now[24], next[24], every[32], offset[24], priority[24];
    int lifo, legacy;
    int sent; /* appended in the current round */
} next_call;

static void call_free(next_call *c) {
    free(c->keybuf);
    free(c->opts);
    memset(c, 0, sizeof *c);
}

static ferry__sched_outcome fail(ferry__sched_result *r, int code, const char *fmt, ...)
    FERRY_PRINTF(3, 4);
static ferry__sched_outcome fail(ferry__sched_result *r, int code, const char *fmt, ...) {
    char msg[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ferry__err(&r->error, code, "%s", msg);
    return FERRY__SCHED_ERROR;
}

/* The next iteration's opts from the current one's, as Node rebuilds them: the Job constructor
 * adds attempts 0 and normalises a numeric backoff; getNextJobOpts sets repeat (count+1, offset
 * for every only, no `immediately`), timestamp, prevMillis (patterns) and repeatJobKey; the
 * msgpack/cjson round trip drops nulls. jobId and delay are added by the script. */
static char *next_opts(const json_t *opts, const json_t *rep, const char *rjk, long long now,
                       long long count, int has_next, long long next, int has_offset,
                       long long offset) {
    json_t *o = json_deep_copy(opts);
    json_t *r = json_deep_copy(rep);
    char *out = NULL;
    if (!o || !r) goto done;
    if (!json_object_get(o, "attempts") || json_is_null(json_object_get(o, "attempts")))
        json_object_set_new(o, "attempts", json_integer(0));
    double b;
    if (ferry__sched_json_num(json_object_get(o, "backoff"), &b) && isfinite(b)) {
        json_t *nb =
            json_pack("{s:s,s:O}", "type", "fixed", "delay", json_object_get(o, "backoff"));
        if (!nb || json_object_set_new(o, "backoff", nb)) goto done;
    }
    json_object_del(o, "jobId");
    json_object_del(o, "delay");
    json_object_del(o, "prevMillis");
    json_object_del(r, "immediately");
    json_object_set_new(r, "count", json_integer(count));
    if (has_offset)
        json_object_set_new(r, "offset", json_integer(offset));
    else
        json_object_del(r, "offset");
    static const char *const dates[] = {"startDate", "endDate"};
    for (int i = 0; i < 2; i++) {
        double d;
        if (truthy_num(r, dates[i], &d) && isfinite(d))
            json_object_set_new(r, dates[i], json_integer(js_ll(d)));
        else
            json_object_del(r, dates[i]); /* Node: new Date(x).getTime() or undefined */
    }
    json_object_set(o, "repeat", r);
    json_object_set_new(o, "timestamp", json_integer(now));
    if (has_next) json_object_set_new(o, "prevMillis", json_integer(next));
    json_object_set_new(o, "repeatJobKey", json_string(rjk));
    out = ferryx_json_serialize(o, 1, 2 * FERRY_JOB_OPTS_MAX + 256);
done:
    json_decref(o);
    json_decref(r);
    return out;
}

/* Decide what job j needs. Returns the outcome when no script call is needed, or
 * FERRY__SCHED_PRODUCED (provisionally) with *call filled. -1 = out of memory. */
static int prepare(const ferry__sched_fetched *j, const char *base, int64_t now,
                   ferry__sched_result *res, next_call *call) {
    const char *rjk = j->rjk;
    if (!rjk || !*rjk) return FERRY__SCHED_NONE;
    size_t rlen = strlen(rjk);
    if (rlen > FERRY__SCHED_RJK_MAX)
        return fail(res, FERRY_ETOOBIG, "job %s: scheduler id is %zu bytes, limit %d", j->job_id,
                    rlen, FERRY__SCHED_RJK_MAX);
    ferry_error e = {0};
    json_t *opts = ferry__opts_load_object(j->opts, "opts", &e);
    if (!opts) return fail(res, e.code, "job %s: %s", j->job_id, e.message);
    int outcome = FERRY__SCHED_PRODUCED;
    const json_t *rep = json_object_get(opts, "repeat");
    double every = 0, d;
    const char *pattern = NULL, *tz = NULL;
    if (!json_is_object(rep)) {
        outcome = fail(res, FERRY_EINVAL, "job %s (scheduler %s): opts.repeat is missing",
                       j->job_id, rjk);
        goto out;
    }
    /* Node's worker only checks that exactly one of every and pattern is truthy; its script
     * then takes `every` from the scheduler hash (else tonumber of the job's), so a numeric
     * string or a fraction is fine, and the script refuses an `every` it cannot use */
    const json_t *jevery = json_object_get(rep, "every"), *jpat = json_object_get(rep, "pattern");
    int has_every = js_truthy(jevery), has_pattern = js_truthy(jpat);
    if (json_is_string(jpat)) pattern = json_string_value(jpat);
    if (json_is_string(json_object_get(rep, "tz")))
        tz = json_string_value(json_object_get(rep, "tz"));
    if (has_every == has_pattern) {
        outcome = fail(res, FERRY_EINVAL,
                       "job %s (scheduler %s): opts.repeat needs exactly one of every and pattern "
                       "(it has %s)",
                       j->job_id, rjk, has_every ? "both" : "neither");
        goto out;
    }
    if (has_pattern && !pattern) {
        outcome =
            fail(res, FERRY_EINVAL, "job %s (scheduler %s): opts.repeat.pattern is not a string",
                 j->job_id, rjk);
        goto out;
    }
    if (!has_pattern) pattern = NULL;
    if (has_every) every = js_to_number(jevery); /* NaN or out of range: the script decides */
    long long count = truthy_num(rep, "count", &d) ? js_ll(d) + 1 : 1;
    /* Node: typeof limit !== 'undefined' && count > limit, with JavaScript's coercion (a
     * numeric string compares as its number; NaN compares false, i.e. no limit) */
    const json_t *jlimit = json_object_get(rep, "limit");
    if (jlimit && (double)count > js_to_number(jlimit)) {
        outcome = FERRY__SCHED_ENDED;
        goto out;
    }
    double end = 0, start = 0, prev = 0, off = 0;
    truthy_num(rep, "endDate", &end);
    truthy_num(rep, "startDate", &start);
    truthy_num(opts, "prevMillis", &prev);
    if (end != 0 && (double)now > end) {
        outcome = FERRY__SCHED_ENDED;
        goto out;
    }
    long long cur = prev > (double)now ? js_ll(prev) : now;
    long long next = 0;
    if (pattern) {
        int rc = ferry__sched_cron_next(pattern, tz, cur, js_ll(start), js_ll(end), cur, &next, &e);
        if (rc == FERRY_ENOTFOUND) {
            outcome = FERRY__SCHED_ENDED;
            goto out;
        }
        if (rc) {
            outcome = fail(res, rc, "job %s (scheduler %s): %s", j->job_id, rjk, e.message);
            goto out;
        }
    }
    int has_offset = has_every && truthy_num(rep, "offset", &off) && isfinite(off);
    call->opts =
        next_opts(opts, rep, rjk, now, count, pattern != NULL, next, has_offset, js_ll(off));
    size_t blen = strlen(base);
    call->keybuf = malloc(4 * blen + rlen + 32);
    if (!call->opts || !call->keybuf) {
        outcome = -1;
        goto out;
    }
    char *k = call->keybuf;
    const char *suffix[NEXT_KEYS] = {"repeat", "repeat:", "meta", "events"};
    for (int i = 0; i < NEXT_KEYS; i++) {
        call->keys[i] = k;
        k += sprintf(k, "%s%s%s", base, suffix[i], i == 1 ? rjk : "") + 1;
    }
    snprintf(call->now, sizeof call->now, "%lld", (long long)now);
    if (pattern) snprintf(call->next, sizeof call->next, "%lld", next);
    if (has_every && isfinite(every)) ferryx_fmt_g(call->every, sizeof call->every, 17, every);
    if (has_offset) snprintf(call->offset, sizeof call->offset, "%lld", js_ll(off));
    double pr = 0;
    ferry__sched_json_num(json_object_get(opts, "priority"), &pr);
    if (!(pr > 0)) pr = 0;
    if (pr > PRIORITY_MAX) pr = PRIORITY_MAX;
    snprintf(call->priority, sizeof call->priority, "%lld", (long long)pr);
    call->lifo = lua_truthy(json_object_get(opts, "lifo")); /* Node's script: opts['lifo'] and */
    call->legacy = ferry__sched_legacy_shape(rjk);
out:
    json_decref(opts);
    return outcome;
}

static int append_call(ferry_conn *c, const char *base, const ferry__sched_fetched *j,
                       const next_call *call, const ferry_script *s, ferry_error *err) {
    const char *args[NEXT_ARGS] = {base,
                                   j->rjk,
                                   j->job_id,
                                   call->now,
                                   call->next,
                                   call->every,
                                   call->offset,
                                   call->opts,
                                   call->priority,
                                   call->lifo ? "1" : "0",
                                   call->legacy ? "1" : "0"};
    const char *keys[NEXT_KEYS];
    memcpy(keys, call->keys, sizeof keys);
    return ferry__conn_append_evalsha(c, s, NEXT_KEYS, keys, NEXT_ARGS, args, NULL, err);
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8);
}

static long long tail_ms(const char *job_id, size_t len) {
    while (len > 0 && job_id[len - 1] != ':')
        len--;
    return len > 0 ? strtoll(job_id + len, NULL, 10) : 0;
}

/* The text of reply element i when it is a string, else "". */
static const char *reply_text(const redisReply *r, size_t i) {
    return r->elements > i && r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "";
}

/* Read a script reply into res. */
static void take_reply(const redisReply *r, const char *base, const ferry__sched_fetched *j,
                       const next_call *call, ferry__sched_result *res) {
    if (r->type == REDIS_REPLY_ERROR) {
        res->outcome = fail(res, FERRY_EREDIS, "job %s (scheduler %s): next iteration: %s",
                            j->job_id, j->rjk, r->str);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER) {
        res->outcome =
            fail(res, FERRY_EPROTO, "job %s: next iteration: unexpected reply", j->job_id);
        return;
    }
    long long code = r->element[0]->integer;
    const redisReply *id = r->elements > 1 ? r->element[1] : NULL;
    if ((code == 1 || code == 2) && (!id || id->type != REDIS_REPLY_STRING)) {
        res->outcome =
            fail(res, FERRY_EPROTO, "job %s: next iteration: unexpected reply", j->job_id);
        return;
    }
    switch (code) {
    case 0:
        res->outcome = FERRY__SCHED_NOT_CURRENT;
        break;
    case 1:
        res->outcome = FERRY__SCHED_PRODUCED;
        res->next_ms = tail_ms(id->str, id->len);
        res->delay_ms = r->elements > 2 && r->element[2]->type == REDIS_REPLY_INTEGER
                            ? r->element[2]->integer
                            : 0;
        break;
    case 2:
        res->outcome = FERRY__SCHED_DUPLICATED;
        res->next_ms = tail_ms(id->str, id->len);
        break;
    case 3:
        ferry__err(&res->error, FERRY_ESTATE,
                   "job %s: '%s' is a legacy repeatable job key, not supported by BullMQ 6; "
                   "migrate it to a job scheduler",
                   j->job_id, j->rjk);
        res->outcome = FERRY__SCHED_LEGACY;
        break;
    case 4:
        if (!strcmp(reply_text(r, 1), "nohash"))
            res->outcome = fail(res, FERRY_ESTATE,
                                "job %s: scheduler %s is in %srepeat but its hash %srepeat:%s "
                                "does not exist: corrupted or half-removed; no next iteration",
                                j->job_id, j->rjk, base, base, j->rjk);
        else
            res->outcome = fail(res, FERRY_ESTATE,
                                "job %s: scheduler hash %srepeat:%s has no name: corrupted or "
                                "half-removed; no next iteration",
                                j->job_id, base, j->rjk);
        break;
    case 5:
        res->outcome = fail(res, FERRY_EINVAL,
                            "job %s (scheduler %s): no usable every: the hash %srepeat:%s has "
                            "'%s', the job's opts.repeat.every gives '%s'; the one used must be "
                            "a number of ms in (0, 2^53-1]; no next iteration",
                            j->job_id, j->rjk, base, j->rjk, reply_text(r, 1), call->every);
        break;
    case 6:
        res->outcome = fail(res, FERRY_ESTATE,
                            "job %s: scheduler hash %srepeat:%s has ic '%s', not an integer: "
                            "corrupted; no next iteration",
                            j->job_id, base, j->rjk, reply_text(r, 1));
        break;
    default:
        res->outcome = fail(res, FERRY_EPROTO, "job %s: next iteration: unexpected code %lld",
                            j->job_id, code);
    }
}

int ferry__scheduler_on_fetch(ferry_conn *c, const char *base, const ferry__sched_fetched *jobs,
                              size_t n, int64_t now_ms, ferry__sched_result *results,
                              ferry_error *err) {
    if ((!c && n) || !base || (n && (!jobs || !results)))
        return ferry__err(err, FERRY_EINVAL, "ferry__scheduler_on_fetch: NULL argument");
    if (n > FERRY__SCHED_BATCH_MAX)
        return ferry__err(err, FERRY_EINVAL, "ferry__scheduler_on_fetch: %zu jobs, limit %d", n,
                          FERRY__SCHED_BATCH_MAX);
    size_t ncalls = 0;
    for (size_t i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        if (jobs[i].rjk && *jobs[i].rjk) ncalls++;
    }
    if (ncalls == 0) return 0; /* the common case: no scheduler jobs, no work */

    const ferry_script *s = ferry__script_get("nextSchedulerIteration");
    if (!s) return ferry__err(err, FERRY_EINVAL, "script nextSchedulerIteration is not built in");
    next_call *calls = calloc(n, sizeof *calls);
    redisReply **replies = calloc(n, sizeof *replies);
    int rc = 0;
    if (!calls || !replies) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    size_t pending = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int o = prepare(&jobs[i], base, now_ms, &results[i], &calls[i]);
        if (o < 0)
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
        else if (o == FERRY__SCHED_PRODUCED)
            calls[i].sent = 1, pending++;
        else
            results[i].outcome = (ferry__sched_outcome)o;
    }
    /* one round trip; the calls answered NOSCRIPT (script cache flushed) did nothing and are
     * sent once more after reloading */
    for (int round = 0; rc == 0 && pending > 0 && round < 2; round++) {
        size_t k = 0;
        ferry_error ae = {0};
        int arc = 0;
        for (size_t i = 0; arc == 0 && i < n; i++) {
            if (!calls[i].sent) continue;
            arc = append_call(c, base, &jobs[i], &calls[i], s, &ae);
            if (arc == 0) k++;
        }
        if (arc != 0) {
            /* out of memory, or over the request limit: the connection dropped every call
             * appended in this round (none was sent), so none of them is read */
            for (size_t i = 0; i < n; i++)
                if (calls[i].sent) {
                    calls[i].sent = 0;
                    results[i].outcome =
                        fail(&results[i], arc, "job %s: %s", jobs[i].job_id, ae.message);
                }
            break;
        }
        if (k == 0) break;
        rc = ferry__conn_pipeline_read(c, k, replies, err);
        if (rc) break;
        size_t again = 0;
        k = 0;
        for (size_t i = 0; i < n; i++) {
            if (!calls[i].sent) continue;
            redisReply *r = replies[k++];
            if (is_noscript(r) && round == 0) {
                again++;
            } else {
                calls[i].sent = 0;
                if (is_noscript(r))
                    results[i].outcome =
                        fail(&results[i], FERRY_EREDIS, "job %s: %s", jobs[i].job_id, r->str);
                else
                    take_reply(r, base, &jobs[i], &calls[i], &results[i]);
            }
            freeReplyObject(r);
        }
        pending = again;
        if (pending) rc = ferry__conn_load_scripts(c, err);
    }
    for (size_t i = 0; calls && i < n; i++)
        call_free(&calls[i]);
    free(calls);
    free(replies);
    return rc;
}
