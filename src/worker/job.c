/* job.c - ferry_job: the fetched job a handler sees (accessors, parsing the fetch reply)
 * and the decision of how it finishes (BullMQ 6.7.0 Job.moveToFailed / shouldRetryJob:
 * returnvalue JSON, failedReason, stacktrace, retry with backoff, keepJobs; DelayedError
 * for retry-later, RateLimitError for throttled). */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/http_classify.h"
#include "util/error.h"
#include "util/json_text.h"
#include "worker/backoff.h"
#include "worker/worker_internal.h"

#define STACKTRACE_LIMIT_DEFAULT 10
#define RETURN_JSON_MAX_DEPTH 4096
#define STACK_JSON_MAX_DEPTH 4096 /* a stored stacktrace nested deeper counts as none */

/* ---- construction ------------------------------------------------------------------ */

static int reply_is_str(const redisReply *r) {
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* A stored attempt counter (atm, ats): 0..2^31 - 1, so the +1 of the next attempt never
 * overflows; garbage reads as 0, as Node's Number() would make it NaN and its compares
 * false. */
static long counter_of(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s) return 0;
    return v < 0 ? 0 : v > 2147483647LL ? 2147483647L : (long)v;
}

/* Copy the id, the token and every field name and value into the strings after the job's
 * header (p: their start; the room was counted by the caller). */
static void copy_strings(ferry_job *j, char *p, const redisReply *id, const redisReply *hash,
                         const char *token, size_t toklen) {
#define COPY_INTO(dst, src, n)                                                                     \
    do {                                                                                           \
        memcpy(p, (src), (n));                                                                     \
        p[(n)] = 0;                                                                                \
        (dst) = p;                                                                                 \
        p += (n) + 1;                                                                              \
    } while (0)
    COPY_INTO(j->id, id->str, id->len);
    COPY_INTO(j->token, token, toklen);
    for (size_t i = 0; i < j->nfields; i++) {
        COPY_INTO(j->fname[i], hash->element[2 * i]->str, hash->element[2 * i]->len);
        COPY_INTO(j->fval[i], hash->element[2 * i + 1]->str, hash->element[2 * i + 1]->len);
    }
#undef COPY_INTO
}

/* One pass for the fields the worker reads (first occurrence wins, as in
 * ferry_job_field), defaults for the missing ones. */
static void index_fields(ferry_job *j) {
    const char *atm = NULL, *legacy_atm = NULL, *ats = NULL, *ts = NULL;
#define TAKE(var, lit)                                                                             \
    do {                                                                                           \
        if (!(var) && !strcmp(n, lit)) (var) = v;                                                  \
    } while (0)
    for (size_t i = 0; i < j->nfields; i++) {
        const char *n = j->fname[i], *v = j->fval[i];
        switch (n[0]) {
        case 'n':
            TAKE(j->name, "name");
            break;
        case 'd':
            TAKE(j->data, "data");
            TAKE(j->deid, "deid");
            TAKE(j->defa, "defa");
            break;
        case 'o':
            TAKE(j->opts, "opts");
            break;
        case 'a':
            TAKE(atm, "atm");
            TAKE(ats, "ats");
            TAKE(legacy_atm, "attemptsMade");
            break;
        case 's':
            TAKE(j->stacktrace_prev, "stacktrace");
            break;
        case 't':
            TAKE(ts, "timestamp");
            break;
        default:
            break;
        }
    }
#undef TAKE
    if (!j->name) j->name = "";
    if (!j->data) j->data = "{}";
    if (!j->opts) j->opts = "{}";
    if (!atm) atm = legacy_atm;
    j->attempts_made = atm ? counter_of(atm) : 0;
    j->attempts_started = ats ? counter_of(ats) : 0;
    j->timestamp = ts ? strtoll(ts, NULL, 10) : 0;
}

ferry_job *ferry__job_from_reply(ferry__lane *lane, const redisReply *id, const redisReply *hash,
                                 const char *token) {
    if (!reply_is_str(id) || !hash || hash->type != REDIS_REPLY_ARRAY || hash->elements % 2)
        return NULL;
    size_t nf = hash->elements / 2;
    size_t toklen = strlen(token);
    size_t strbytes = id->len + 1 + toklen + 1;
    for (size_t i = 0; i < hash->elements; i++) {
        if (!reply_is_str(hash->element[i])) return NULL;
        strbytes += hash->element[i]->len + 1;
    }
    size_t head = sizeof(ferry_job) + 2 * nf * sizeof(char *);
    ferry_job *j = calloc(1, head + strbytes);
    if (!j) return NULL;
    j->lane = lane;
    j->fname = (const char **)(void *)(j + 1);
    j->fval = j->fname + nf;
    j->nfields = nf;
    copy_strings(j, (char *)j + head, id, hash, token, toklen);
    index_fields(j);
    j->own_idx = -1;
    return j;
}

void ferry__job_free(ferry_job *j) {
    if (!j) return;
    free(j->ret);
    free(j->reason);
    free(j->stack);
    free(j->value);
    free(j->stacktrace);
    free(j->payload);
    free(j->too_big);
    free(j);
}

/* ---- public accessors -------------------------------------------------------------- */

const char *ferry_job_queue(const ferry_job *j) {
    return j->lane->queue;
}
const char *ferry_job_id(const ferry_job *j) {
    return j->id;
}
const char *ferry_job_name(const ferry_job *j) {
    return j->name;
}
const char *ferry_job_data(const ferry_job *j) {
    return j->data;
}
const char *ferry_job_opts(const ferry_job *j) {
    return j->opts;
}
long ferry_job_attempts_made(const ferry_job *j) {
    return j->attempts_made;
}
long ferry_job_attempts_started(const ferry_job *j) {
    return j->attempts_started;
}
long long ferry_job_timestamp(const ferry_job *j) {
    return j->timestamp;
}
const char *ferry_job_failure_stacktrace(const ferry_job *j) {
    int failed = j->kind == FERRY__FIN_FAIL || j->kind == FERRY__FIN_RETRY_DELAY ||
                 j->kind == FERRY__FIN_RETRY_NOW;
    return failed ? j->stacktrace : NULL;
}

const char *ferry_job_field(const ferry_job *j, const char *field) {
    if (!j || !field) return NULL;
    for (size_t i = 0; i < j->nfields; i++)
        if (!strcmp(j->fname[i], field)) return j->fval[i];
    return NULL;
}

/* ---- JSON text ----------------------------------------------------------------------- */

char *ferry__json_quote(const char *s, size_t n) {
    /* worst case: every byte becomes \u00XX (6) or U+FFFD escaped (6) */
    if (n > (SIZE_MAX - 3) / 6) return NULL;
    char *out = malloc(n * 6 + 3);
    if (!out) return NULL;
    char *o = out;
    *o++ = '"';
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
            i++;
        } else if (c < 0x20) {
            *o++ = '\\';
            switch (c) {
            case '\n':
                *o++ = 'n';
                break;
            case '\r':
                *o++ = 'r';
                break;
            case '\t':
                *o++ = 't';
                break;
            case '\b':
                *o++ = 'b';
                break;
            case '\f':
                *o++ = 'f';
                break;
            default:
                o += sprintf(o, "u%04x", c);
                break;
            }
            i++;
        } else {
            size_t len = ferryx_utf8_seq(u + i, n - i);
            if (!len) {
                memcpy(o, "\\ufffd", 6);
                o += 6;
                i++;
            } else {
                memcpy(o, u + i, len);
                o += len;
                i += len;
            }
        }
    }
    *o++ = '"';
    *o = 0;
    return out;
}

int ferry_job_set_return(ferry_job *j, const char *json) {
    if (!j) return FERRY_EINVAL;
    char *copy;
    size_t n = json ? strlen(json) : 0;
    if (!json) {
        copy = strdup("null");
    } else if (n > FERRY_RETURN_MAX_BYTES) {
        copy = NULL;
    } else if (ferryx_json_check(json, n, RETURN_JSON_MAX_DEPTH, NULL) == 0) {
        copy = strdup(json);
    } else {
        copy = ferry__json_quote(json, n); /* not JSON: store it as a JSON string */
        if (copy && strlen(copy) > FERRY_RETURN_MAX_BYTES) {
            n = strlen(copy);
            free(copy);
            copy = NULL;
        } else if (!copy) {
            return FERRY_ENOMEM;
        }
    }
    if (!copy && json && n > FERRY_RETURN_MAX_BYTES) {
        /* remembered: a completion with this value fails (ferry__job_plan) */
        free(j->ret);
        j->ret = NULL;
        j->ret_over = n;
        return FERRY_ETOOBIG;
    }
    if (!copy) return FERRY_ENOMEM;
    free(j->ret);
    j->ret = copy;
    j->ret_over = 0;
    return 0;
}

/* A copy of s cut to FERRY_REASON_MAX_BYTES, ending with a note of the full size (cut at
 * a UTF-8 character boundary), or NULL when out of memory. */
static char *dup_capped(const char *s) {
    size_t n = strlen(s);
    if (n <= FERRY_REASON_MAX_BYTES) return strdup(s);
    char tail[64];
    size_t t = (size_t)snprintf(tail, sizeof tail, "... [cut: %zu bytes]", n);
    size_t keep = FERRY_REASON_MAX_BYTES - t;
    while (keep > 0 && ((unsigned char)s[keep] & 0xC0) == 0x80)
        keep--;
    char *o = malloc(keep + t + 1);
    if (!o) return NULL;
    memcpy(o, s, keep);
    memcpy(o + keep, tail, t + 1);
    return o;
}

int ferry_job_set_failure(ferry_job *j, const char *reason, const char *stack) {
    if (!j) return FERRY_EINVAL;
    char *r = reason ? dup_capped(reason) : NULL;
    char *s = stack ? dup_capped(stack) : NULL;
    if ((reason && !r) || (stack && !s)) {
        free(r);
        free(s);
        return FERRY_ENOMEM;
    }
    free(j->reason);
    free(j->stack);
    j->reason = r;
    j->stack = s;
    return 0;
}

void ferry_job_set_delay(ferry_job *j, long long delay_ms) {
    if (!j) return;
    j->req_delay_ms = delay_ms < 0                          ? 0
                      : delay_ms > FERRY_RETRY_AFTER_MAX_MS ? FERRY_RETRY_AFTER_MAX_MS
                                                            : delay_ms;
    j->req_delay_set = 1;
}

ferry_outcome ferry_job_http_outcome(ferry_job *j, const ferry_http_verdict *v,
                                     const char *reason) {
    ferry_outcome oc;
    char dflt[64];
    if (!v) {
        if (j) ferry_job_set_failure(j, reason ? reason : "HTTP verdict missing", NULL);
        return FERRY_FAILED;
    }
    switch (v->cls) {
    case FERRY_HTTP_OK:
        return FERRY_COMPLETED;
    case FERRY_HTTP_TRANSIENT:
        oc = FERRY_FAILED;
        break;
    case FERRY_HTTP_RETRY_LATER:
        oc = FERRY_RETRY_LATER;
        ferry_job_set_delay(j, v->delay_ms);
        break;
    case FERRY_HTTP_THROTTLED:
        oc = FERRY_THROTTLED;
        ferry_job_set_delay(j, v->delay_ms);
        break;
    default: /* FERRY_HTTP_PERMANENT, or a value outside the enum */
        oc = FERRY_FAILED_PERMANENT;
        break;
    }
    if (!reason) {
        snprintf(dflt, sizeof dflt, "HTTP %s", ferry_http_class_name(v->cls));
        reason = dflt;
    }
    if (j) ferry_job_set_failure(j, reason, NULL); /* ENOMEM: reason dropped, outcome kept */
    return oc;
}

/* ---- planning the finish ----------------------------------------------------------- */

static char *dup_printf(const char *fmt, ...) FERRY_PRINTF(1, 2);

const char *ferry__job_unrunnable(ferry_job *j) {
    if (j->defa) {
        /* moveStalledJobsToWait's text, as BullMQ's */
        j->fail_class = strcmp(j->defa, "job stalled more than allowable limit")
                            ? FERRY__FC_DEFERRED
                            : FERRY__FC_STALLED;
        return j->defa;
    }
    if (j->lane->max_started_attempts > 0 && j->lane->max_started_attempts < j->attempts_started) {
        j->fail_class = FERRY__FC_MAX_STARTED;
        return "job started more than allowable limit";
    }
    size_t max = j->lane->max_payload_bytes, n = 0;
    if (max && j->data && (n = strlen(j->data)) > max) { /* no strlen when there is no limit */
        static const char fallback[] = "job data is over this worker's limit (max_payload_bytes)";
        j->fail_class = FERRY__FC_PAYLOAD;
        if (!j->too_big)
            j->too_big = dup_printf("job data is %zu bytes, over this worker's limit of %zu bytes "
                                    "(max_payload_bytes)",
                                    n, max);
        return j->too_big ? j->too_big : fallback;
    }
    return NULL;
}

/* Previous stacktrace entries (JSON array text, possibly Node/cjson-written, "{}" for an
 * empty array) + the new entry, cut to the last `limit`. malloc'd JSON or NULL (ENOMEM). */
static size_t skip_blanks(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* The stored stacktrace `prev` (a JSON array of strings, as Node writes it; NULL or anything
 * else counts as none) with `entry` appended, keeping the newest `limit` entries (-1 = all).
 * Earlier entries are copied as written, so whatever JSON.parse takes survives (\u0000,
 * lone surrogate escapes). Returns a malloc'd JSON array, NULL on ENOMEM. */
static char *build_stacktrace(const char *prev, const char *entry, long long limit) {
    if (limit == 0) return strdup("[]");
    size_t cap = (size_t)(limit > 0 && limit < 1000000 ? limit : 1000000);
    size_t plen = prev ? strlen(prev) : 0, first = 0, i = 0, nprev = 0, nalloc = 0;
    struct span {
        size_t start, end;
    } *el = NULL; /* the earlier entries: prev[start..end) */
    char *out = NULL, *q = ferry__json_quote(entry, strlen(entry));
    if (!q) return NULL;
    if (prev && ferryx_json_check(prev, plen, STACK_JSON_MAX_DEPTH, NULL) == 0 &&
        prev[i = skip_blanks(prev, plen, 0)] == '[' &&
        prev[i = skip_blanks(prev, plen, i + 1)] != ']') {
        for (;;) {
            if (nprev == nalloc) {
                nalloc = nalloc ? nalloc * 2 : 16;
                struct span *n = realloc(el, nalloc * sizeof *n);
                if (!n) goto done;
                el = n;
            }
            el[nprev].start = i;
            el[nprev++].end = i = ferryx_json_value_end(prev, plen, i);
            i = skip_blanks(prev, plen, i);
            if (i >= plen || prev[i] != ',') break;
            i = skip_blanks(prev, plen, i + 1);
        }
    }
    if (nprev + 1 > cap) first = nprev + 1 - cap;
    size_t ql = strlen(q), len = ql + 3;
    for (size_t k = first; k < nprev; k++)
        len += el[k].end - el[k].start + 1;
    out = malloc(len);
    if (!out) goto done;
    char *o = out;
    *o++ = '[';
    for (size_t k = first; k < nprev; k++) {
        memcpy(o, prev + el[k].start, el[k].end - el[k].start);
        o += el[k].end - el[k].start;
        *o++ = ',';
    }
    memcpy(o, q, ql);
    o += ql;
    *o++ = ']';
    *o = 0;
done:
    free(el);
    free(q);
    return out;
}

static char *dup_printf(const char *fmt, ...) FERRY_PRINTF(1, 2);
static char *dup_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void plan_oom(ferry_job *j) {
    /* Out of memory: still free the slot and write something Node can read. The static
     * strings are copied with plain malloc-free fallbacks, so value may stay NULL; batch.c
     * sends "" then. */
    free(j->value);
    free(j->stacktrace);
    j->value = NULL;
    j->stacktrace = NULL;
    j->kind = FERRY__FIN_FAIL;
    j->keep = j->lane->keep_fail;
}

void ferry__opts_cache_free(ferry__opts_cache *c) {
    if (!c || !c->text) return;
    free(c->text);
    ferry__job_opts_free(&c->opts);
    c->text = NULL;
}

/* The parsed opts of j: from the cache when its text is the same (jobs of one queue
 * usually share their opts text, and parsing JSON per job is a good part of a fast
 * job's cost), else parsed now and remembered. *local receives a parse the caller frees
 * when the result is `local`. */
static const ferry__job_opts *opts_of(const ferry_job *j, ferry__opts_cache *cache,
                                      ferry__job_opts *local) {
    if (cache && cache->text && !strcmp(cache->text, j->opts)) return &cache->opts;
    ferry__job_opts_from_stored(j->opts, local);
    if (!cache) return local;
    char *text = strdup(j->opts);
    if (!text) return local;
    ferry__opts_cache_free(cache);
    cache->text = text;
    cache->opts = *local;
    return &cache->opts;
}

/* A return value too long to store: the attempt fails, saying why (as a Node job whose
 * completion cannot be written fails). */
static void plan_return_too_big(ferry_job *j) {
    char *why = dup_printf("return value of %zu bytes is over the %u-byte limit "
                           "(FERRY_RETURN_MAX_BYTES)",
                           j->ret_over, FERRY_RETURN_MAX_BYTES);
    free(j->reason);
    free(j->stack);
    j->reason = why;
    j->stack = NULL;
    j->outcome = FERRY_FAILED;
    j->fail_class = FERRY__FC_RETURN_TOO_BIG;
}

static void plan_completion(ferry_job *j, const ferry__job_opts *o) {
    j->kind = FERRY__FIN_COMPLETE;
    j->keep = o->remove_on_complete.set ? o->remove_on_complete : j->lane->keep_complete;
    if (j->ret) {
        j->value = j->ret;
        j->ret = NULL;
    } else {
        j->value = strdup("null");
    }
    if (!j->value) plan_oom(j);
}

/* Not a failure: no attempt spent, no stacktrace entry; the reason, when given, is stored
 * as failedReason (it tells why the job waits). */
static void plan_wait(ferry_job *j, ferry_outcome outcome) {
    long long delay = j->req_delay_set ? j->req_delay_ms : 0;
    if (outcome == FERRY_THROTTLED && delay <= 0) delay = FERRY_THROTTLE_DEFAULT_MS;
    j->kind = outcome == FERRY_THROTTLED && j->lane->limiter_max > 0 ? FERRY__FIN_THROTTLE
                                                                     : FERRY__FIN_RETRY_LATER;
    j->delay_ms = delay;
    if (j->reason) j->value = strdup(j->reason); /* ENOMEM: just not stored */
}

/* Whether a failed attempt is retried, and after *delay ms. A backoff that cannot be
 * resolved (e.g. a custom strategy this worker does not know) fails the job now: *why
 * receives the reason saying so (malloc'd), else stays NULL. */
static int plan_retry(ferry_job *j, const ferry__job_opts *o, ferry_outcome outcome,
                      const char *reason, long long *delay, char **why) {
    ferry__lane *lane = j->lane;
    *delay = 0;
    int retry =
        outcome == FERRY_FAILED && j->attempts_made + 1 < o->attempts &&
        !(lane->max_started_attempts > 0 && lane->max_started_attempts <= j->attempts_started);
    if (!retry) return 0;
    ferry_error e = {0};
    j->cur_backoff = &o->backoff;
    int rc = ferry__backoff_resolve(&o->backoff, j->attempts_made + 1, ferry__backoff_random(),
                                    reason, j, lane->backoffs, lane->nbackoffs, delay, &e);
    j->cur_backoff = NULL;
    if (rc != 0) {
        *why = dup_printf("%s (not retried: %s)", reason, e.message);
        return 0;
    }
    return *delay >= 0;
}

static void plan_failure(ferry_job *j, const ferry__job_opts *o, ferry_outcome outcome) {
    const char *reason = j->reason ? j->reason : "failed";
    char *reason_buf = NULL;
    long long delay = 0;
    int retry = plan_retry(j, o, outcome, reason, &delay, &reason_buf);
    if (reason_buf) reason = reason_buf;

    char *default_stack = NULL;
    const char *stack = j->stack;
    if (!stack) {
        default_stack = dup_printf("Error: %s\n    at ferry handler (queue %s, job %s)", reason,
                                   j->lane->queue, j->id);
        stack = default_stack ? default_stack : "Error";
    }
    long long limit = o->stack_trace_limit >= 0 ? o->stack_trace_limit : STACKTRACE_LIMIT_DEFAULT;
    j->stacktrace = build_stacktrace(j->stacktrace_prev, stack, limit);
    j->value = strdup(reason);
    free(default_stack);
    free(reason_buf);
    if (!j->value || !j->stacktrace) {
        plan_oom(j);
        return;
    }
    if (retry) {
        j->kind = delay > 0 ? FERRY__FIN_RETRY_DELAY : FERRY__FIN_RETRY_NOW;
        j->delay_ms = delay;
    } else {
        j->kind = FERRY__FIN_FAIL;
        j->keep = o->remove_on_fail.set ? o->remove_on_fail : j->lane->keep_fail;
    }
}

void ferry__job_plan(ferry_job *j, ferry_outcome outcome, ferry__opts_cache *cache) {
    ferry__job_opts local;
    const ferry__job_opts *o = opts_of(j, cache, &local);
    j->attempts = o->attempts;
    j->lifo = o->lifo;
    free(j->value);
    free(j->stacktrace);
    j->value = j->stacktrace = NULL;

    if (outcome == FERRY_COMPLETED && j->ret_over) {
        plan_return_too_big(j);
        outcome = FERRY_FAILED;
    }
    if (outcome == FERRY_COMPLETED)
        plan_completion(j, o);
    else if (outcome == FERRY_THROTTLED || outcome == FERRY_RETRY_LATER)
        plan_wait(j, outcome);
    else
        plan_failure(j, o, outcome);
    if (o == &local) ferry__job_opts_free(&local);
}

void ferry__job_plan_unsendable(ferry_job *j, const char *why) {
    free(j->reason);
    free(j->stack);
    j->reason = dup_printf("result not written: %s", why);
    j->stack = NULL;
    j->outcome = FERRY_FAILED_PERMANENT;
    j->fail_class = FERRY__FC_UNSENDABLE;
    ferry__job_plan(j, FERRY_FAILED_PERMANENT, NULL);
    free(j->stacktrace);
    j->stacktrace = NULL;
}

int ferry__job_plan_refused(ferry_job *j, int code) {
    if (j->kind != FERRY__FIN_COMPLETE || (code != -4 && code != -9)) return 0;
    /* BullMQ's finishedErrors texts; -9 is an UnrecoverableError (never retried) */
    char *msg = code == -4 ? dup_printf("Job %s has pending dependencies. moveToFinished", j->id)
                           : dup_printf("Cannot complete job %s because it has at least one "
                                        "failed child. moveToFinished",
                                        j->id);
    char *stack = msg ? dup_printf("%s: %s\n    at ferry worker (queue %s, completion refused)",
                                   code == -4 ? "Error" : "UnrecoverableError", msg, j->lane->queue)
                      : NULL;
    free(j->reason);
    free(j->stack);
    j->reason = msg; /* ENOMEM: NULL, planned as "failed" */
    j->stack = stack;
    j->outcome = code == -4 ? FERRY_FAILED : FERRY_FAILED_PERMANENT;
    j->fail_class = FERRY__FC_CHILDREN;
    ferry__job_plan(j, j->outcome, NULL);
    return 1;
}

long long ferry__job_backoff_delay(const ferry_job *j) {
    if (j->cur_backoff) return j->cur_backoff->set ? j->cur_backoff->delay_ms : 0;
    ferry__job_opts o;
    ferry__job_opts_from_stored(j->opts, &o);
    long long d = o.backoff.set ? o.backoff.delay_ms : 0;
    ferry__job_opts_free(&o);
    return d;
}

/* ---- finish texts -------------------------------------------------------------------- */

/* Text of a finish script's negative code (BullMQ's codes). */
const char *ferry__fin_code_text(int code) {
    switch (code) {
    case -1:
        return "job no longer exists";
    case -2:
        return "lock missing (expired: the job may run again elsewhere)";
    case -3:
        return "job is not active";
    case -4:
        return "job has pending children";
    case -6:
        return "lock owned by another worker";
    case -9:
        return "job has failed children";
    default:
        return "unexpected script answer";
    }
}

/* What a finish of this kind is called in messages. */
const char *ferry__fin_kind_text(ferry__fin_kind k) {
    switch (k) {
    case FERRY__FIN_COMPLETE:
        return "completion";
    case FERRY__FIN_FAIL:
        return "failure";
    case FERRY__FIN_RETRY_LATER:
        return "retry-later";
    case FERRY__FIN_THROTTLE:
        return "throttle";
    default:
        return "retry";
    }
}

/* callbacks.job_log outcome name of a job whose finish was written. */
const char *ferry__fin_log_outcome(const ferry_job *j) {
    switch (j->kind) {
    case FERRY__FIN_COMPLETE:
        return "completed";
    case FERRY__FIN_RETRY_DELAY:
    case FERRY__FIN_RETRY_NOW:
        return "retry";
    case FERRY__FIN_RETRY_LATER:
        return "retry-later";
    case FERRY__FIN_THROTTLE:
        return "throttled";
    case FERRY__FIN_FAIL:
    default:
        /* a transient failure that ran out of attempts (or whose backoff said no) */
        return j->ran && j->outcome == FERRY_FAILED ? "failed" : "permanent";
    }
}
