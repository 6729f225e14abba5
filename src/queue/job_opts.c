/* job_opts.c - BullMQ JobsOptions: strict parse of user input, shallow merge, keepJobs
 * values (the lenient read of stored opts is in job_opts_stored.c).
 *
 * The stored form mirrors what BullMQ 6.7.0 writes into the job hash: public option names
 * except the short aliases (de fpof cpof idof rdof kl tm omc), backoff normalised to an
 * object, "attempts":0 added when absent, jobId only for custom ids, null members dropped
 * (BullMQ's msgpack round trip loses them). Keys BullMQ 6.7.0 does not know are refused
 * (naming the nearest known one), or with FERRY__OPTS_ALLOW_UNKNOWN kept as they are. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts.h"
#include "queue/job_opts_ext.h"
#include "util/json_text.h"
#include "util/nearest_name.h"
#include "util/error.h"
#include "util/printable.h"

#define STORED_MAX (2 * FERRY_JOB_OPTS_MAX + 256) /* stored opts JSON, bytes */

enum opt_kind {
    K_JOBID,
    K_ATTEMPTS,
    K_BACKOFF,
    K_DELAY,
    K_PRIORITY,
    K_LIFO,
    K_TIMESTAMP,
    K_RMC,
    K_RMF,
    K_STL,
    K_KEEPLOGS,
    K_SIZELIMIT,
    K_DEDUP,
    K_PARENT_FLAG, /* fpof cpof idof rdof */
    K_TELEMETRY,
    K_TM,
    K_OMC,
    K_PARENT,
    K_REPEATJOBKEY,
    K_DEBOUNCE,
    K_REPEAT,
    K_PASS, /* known to Node, stored as given (prevMillis) */
};

/* Both the public and the stored spelling are accepted on input (Node passes a stored
 * spelling through unchanged, so it means the same option). */
static const struct known_opt {
    const char *name;
    const char *stored;
    enum opt_kind kind;
} KNOWN[] = {
    {"jobId", "jobId", K_JOBID},
    {"attempts", "attempts", K_ATTEMPTS},
    {"backoff", "backoff", K_BACKOFF},
    {"delay", "delay", K_DELAY},
    {"priority", "priority", K_PRIORITY},
    {"lifo", "lifo", K_LIFO},
    {"timestamp", "timestamp", K_TIMESTAMP},
    {"removeOnComplete", "removeOnComplete", K_RMC},
    {"removeOnFail", "removeOnFail", K_RMF},
    {"stackTraceLimit", "stackTraceLimit", K_STL},
    {"keepLogs", "kl", K_KEEPLOGS},
    {"kl", "kl", K_KEEPLOGS},
    {"sizeLimit", "sizeLimit", K_SIZELIMIT},
    {"deduplication", "de", K_DEDUP},
    {"de", "de", K_DEDUP},
    {"failParentOnFailure", "fpof", K_PARENT_FLAG},
    {"fpof", "fpof", K_PARENT_FLAG},
    {"continueParentOnFailure", "cpof", K_PARENT_FLAG},
    {"cpof", "cpof", K_PARENT_FLAG},
    {"ignoreDependencyOnFailure", "idof", K_PARENT_FLAG},
    {"idof", "idof", K_PARENT_FLAG},
    {"removeDependencyOnFailure", "rdof", K_PARENT_FLAG},
    {"rdof", "rdof", K_PARENT_FLAG},
    {"telemetry", NULL, K_TELEMETRY},
    {"tm", "tm", K_TM},
    {"omc", "omc", K_OMC},
    {"parent", "parent", K_PARENT},
    {"repeatJobKey", NULL, K_REPEATJOBKEY},
    {"debounce", NULL, K_DEBOUNCE},
    {"repeat", NULL, K_REPEAT},
    {"prevMillis", "prevMillis", K_PASS},
};

/* The names a misspelled key is matched against: BullMQ 6.7.0's public JobsOptions keys
 * (its types: DefaultJobOptions, BaseJobOptions, CompressableJobOptions). */
static const char *const PUBLIC_NAMES[] = {
    "jobId",
    "attempts",
    "backoff",
    "delay",
    "priority",
    "lifo",
    "timestamp",
    "removeOnComplete",
    "removeOnFail",
    "stackTraceLimit",
    "keepLogs",
    "sizeLimit",
    "deduplication",
    "failParentOnFailure",
    "continueParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
    "telemetry",
    "parent",
    "prevMillis",
    "repeatJobKey",
};

static const struct known_opt *find_known(const char *key) {
    for (size_t i = 0; i < sizeof KNOWN / sizeof KNOWN[0]; i++)
        if (!strcmp(KNOWN[i].name, key)) return &KNOWN[i];
    return NULL;
}

/* ---- error helpers ------------------------------------------------------------------ */

/* FERRY_EINVAL for a key that is not one of names[0..n): a job option (field NULL: "unknown
 * job option") or a member of the object at `field`, with the nearest known name when one is
 * close. */
static int unknown_key(ferry_error *err, const char *field, const char *key,
                       const char *const *names, size_t n) {
    char shown[96], hint[256];
    ferryx_printable(key, shown, sizeof shown);
    const char *near = ferryx_nearest_name(key, names, n);
    if (near) {
        snprintf(hint, sizeof hint, "did you mean \"%s\"?", near);
    } else if (!field) {
        snprintf(hint, sizeof hint, "not a BullMQ 6.7.0 job option");
    } else {
        size_t at = (size_t)snprintf(hint, sizeof hint, "expected ");
        for (size_t i = 0; i < n && at < sizeof hint; i++)
            at += (size_t)snprintf(hint + at, sizeof hint - at, "%s%s", i ? ", " : "", names[i]);
    }
    if (!field) return ferry__err(err, FERRY_EINVAL, "unknown job option \"%s\" (%s)", shown, hint);
    return ferry__err(err, FERRY_EINVAL, "%s: unknown member \"%s\" (%s)", field, shown, hint);
}

#define NAMES(a) (a), sizeof(a) / sizeof(a)[0]

static void show_value(const json_t *v, char *buf, size_t cap) {
    char *s = ferryx_json_serialize(v, 0, 4096);
    if (!s) {
        snprintf(buf, cap, "(a large value)");
        return;
    }
    if (strlen(s) > 40)
        snprintf(buf, cap, "%.37s...", s);
    else
        snprintf(buf, cap, "%s", s);
    free(s);
}

static int bad(ferry_error *err, const char *field, const char *expect, const json_t *v) {
    char got[48];
    show_value(v, got, sizeof got);
    return ferry__err(err, FERRY_EINVAL, "%s: expected %s, got %s", field, expect, got);
}

/* Integer in [min,max]; JSON reals with an integral value count (JS has one number type). */
static int as_int(const json_t *v, long long min, long long max, long long *out) {
    if (json_is_integer(v)) {
        long long x = json_integer_value(v);
        if (x < min || x > max) return -1;
        *out = x;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != floor(d) || d < (double)min || d > (double)max) return -1;
        *out = (long long)d;
        return 0;
    }
    return -1;
}

/* ---- jobId rules (Node's Queue.addJob + Job.validateOptions) ------------------------ */

/* True when String(parseInt(s, 10)) === s in JavaScript, i.e. Node calls it an integer. */
static int js_integer_string(const char *s) {
    if (!strcmp(s, "NaN")) return 1; /* parseInt("NaN") is NaN, printed "NaN": Node refuses it */
    const char *p = s[0] == '-' ? s + 1 : s;
    size_t nd = strlen(p);
    if (nd == 0 || (p[0] == '0' && nd > 1)) return 0;
    for (size_t i = 0; i < nd; i++)
        if (p[i] < '0' || p[i] > '9') return 0;
    if (s[0] == '-' && !strcmp(p, "0")) return 0; /* -0 prints as "0" */
    if (nd <= 15) return 1;                       /* exact in a double */
    if (nd > 21) return 0;                        /* >= 1e21 prints in exponent form */
    /* JS prints the nearest double as its shortest round-trip digits, zero-padded. */
    double d = strtod(p, NULL);
    char t[40], digits[24];
    int exp10 = 0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(t, sizeof t, "%.*e", prec - 1, d);
        if (strtod(t, NULL) == d || prec == 17) break;
    }
    size_t nd2 = 0;
    const char *q = t;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9' && nd2 < sizeof digits - 1) digits[nd2++] = *q;
    if (*q == 'e') exp10 = atoi(q + 1);
    if (exp10 + 1 != (int)nd || nd2 > nd) return 0;
    for (size_t i = 0; i < nd; i++)
        if (p[i] != (i < nd2 ? digits[i] : '0')) return 0;
    return 1;
}

const char *ferry__job_id_reserved(const char *id) {
    /* every <prefix>:<queue>:<suffix> key BullMQ 6.7.0 uses that a job id could spell (one
     * with a single ':' cannot be an id; metrics:*:data has two, like the legacy ids) */
    static const char *const names[] = {"wait",
                                        "paused",
                                        "active",
                                        "prioritized",
                                        "pc",
                                        "delayed",
                                        "completed",
                                        "failed",
                                        "waiting-children",
                                        "id",
                                        "meta",
                                        "events",
                                        "marker",
                                        "stalled",
                                        "stalled-check",
                                        "limiter",
                                        "repeat",
                                        "priority",
                                        "metrics:completed:data",
                                        "metrics:failed:data"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(id, names[i])) return names[i];
    return NULL;
}

int ferry__job_id_check(const char *id, ferry_error *err) {
    size_t len = strlen(id);
    if (len > FERRY_JOB_ID_MAX)
        return ferry__err(err, FERRY_EINVAL, "opts.jobId: longer than %d bytes", FERRY_JOB_ID_MAX);
    if (!strcmp(id, "0") || !strncmp(id, "0:", 2))
        return ferry__err(err, FERRY_EINVAL, "opts.jobId: cannot be '0' or start with '0:'");
    if (js_integer_string(id))
        return ferry__err(err, FERRY_EINVAL,
                          "opts.jobId: custom ids cannot be integers (\"%s\" would collide with "
                          "generated ids)",
                          id);
    const char *c1 = strchr(id, ':');
    if (c1) {
        const char *c2 = strchr(c1 + 1, ':');
        if (!c2 || strchr(c2 + 1, ':'))
            return ferry__err(err, FERRY_EINVAL,
                              "opts.jobId: cannot contain ':' (except the 3-part legacy "
                              "repeat form a:b:c)");
    }
    if (ferry__job_id_reserved(id))
        return ferry__err(err, FERRY_EINVAL,
                          "opts.jobId: '%s' is the name of one of the queue's own keys", id);
    return 0;
}

/* ---- keepJobs (removeOnComplete / removeOnFail) ------------------------------------- */

static int keep_strict(const json_t *v, const char *field, int flags, ferry__keep_jobs *out,
                       ferry_error *err) {
    static const char *const members[] = {"age", "count", "limit"};
    static const char expect[] = "true, false, a non-negative integer or {age, count, limit}";
    long long n;
    memset(out, 0, sizeof *out);
    out->set = 1;
    if (json_is_true(v)) {
        out->count = 0;
        return 0;
    }
    if (json_is_false(v)) {
        out->count = -1;
        return 0;
    }
    if (json_is_number(v)) {
        if (as_int(v, 0, FERRY__JS_SAFE_MAX, &n)) return bad(err, field, expect, v);
        out->count = n;
        return 0;
    }
    if (!json_is_object(v)) return bad(err, field, expect, v);
    out->count = -1;
    const char *k;
    json_t *m;
    char sub[96];
    json_object_foreach((json_t *)v, k, m) {
        snprintf(sub, sizeof sub, "%s.%.40s", field, k);
        if (json_is_null(m)) continue;
        if (!strcmp(k, "age")) {
            if (!json_is_number(m) || json_number_value(m) < 0 ||
                json_number_value(m) > (double)(FERRY__JS_SAFE_MAX / 1000))
                return bad(err, sub, "a non-negative number of seconds", m);
            out->age_set = 1;
            out->age_s = json_number_value(m);
        } else if (!strcmp(k, "count")) {
            if (as_int(m, 0, FERRY__JS_SAFE_MAX, &n))
                return bad(err, sub, "a non-negative integer", m);
            out->count = n;
        } else if (!strcmp(k, "limit")) {
            if (as_int(m, 1, FERRY__JS_SAFE_MAX, &n)) return bad(err, sub, "a positive integer", m);
            out->limit = n;
        } else if (!(flags & FERRY__OPTS_ALLOW_UNKNOWN)) {
            return unknown_key(err, field, k, NAMES(members));
        }
    }
    return 0;
}

int ferry__keep_jobs_parse(const char *json, ferry__keep_jobs *out, ferry_error *err) {
    memset(out, 0, sizeof *out);
    if (!json || !*json) return 0;
    size_t len = strlen(json);
    if (len > FERRY_JOB_OPTS_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "keepJobs: %zu bytes, limit %d", len,
                          FERRY_JOB_OPTS_MAX);
    if (ferryx_json_depth(json, len, FERRY_JOB_OPTS_DEPTH_MAX) > FERRY_JOB_OPTS_DEPTH_MAX)
        return ferry__err(err, FERRY_EINVAL, "keepJobs: nested deeper than %d levels",
                          FERRY_JOB_OPTS_DEPTH_MAX);
    json_error_t je;
    json_t *v = json_loadb(json, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v)
        return ferry__err(err, FERRY_EINVAL, "keepJobs: invalid JSON at column %d: %s", je.column,
                          je.text);
    int rc = keep_strict(v, "keepJobs", 0, out, err);
    json_decref(v);
    if (rc) memset(out, 0, sizeof *out);
    return rc;
}

/* ---- strict parse -------------------------------------------------------------------- */

static int parse_backoff(const json_t *v, int flags, ferry__backoff *b, json_t **stored,
                         ferry_error *err) {
    static const char expect[] = "a non-negative integer or {type, delay, jitter}";
    static const char *const members[] = {"type", "delay", "jitter"};
    long long n;
    memset(b, 0, sizeof *b);
    b->set = 1;
    if (json_is_number(v)) {
        if (as_int(v, 0, FERRY__JS_SAFE_MAX, &n)) return bad(err, "opts.backoff", expect, v);
        strcpy(b->type, "fixed");
        b->delay_ms = n;
        *stored = json_pack("{s:s, s:I}", "type", "fixed", "delay", (json_int_t)n);
        return *stored ? 0 : ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    if (!json_is_object(v)) return bad(err, "opts.backoff", expect, v);
    const json_t *type = NULL, *delay = NULL, *jitter = NULL;
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m) {
        if (json_is_null(m)) continue;
        if (!strcmp(k, "type"))
            type = m;
        else if (!strcmp(k, "delay"))
            delay = m;
        else if (!strcmp(k, "jitter"))
            jitter = m;
        else if (!(flags & FERRY__OPTS_ALLOW_UNKNOWN))
            return unknown_key(err, "opts.backoff", k, NAMES(members));
    }
    if (!type || !json_is_string(type) || json_string_length(type) == 0 ||
        json_string_length(type) >= sizeof b->type ||
        strlen(json_string_value(type)) != json_string_length(type))
        return bad(err, "opts.backoff.type",
                   "a non-empty string of at most 63 bytes (fixed, exponential or a custom name)",
                   type ? type : json_null());
    strcpy(b->type, json_string_value(type));
    json_t *st = json_object();
    if (!st) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    json_object_set_new(st, "type", json_string(b->type));
    if (delay) {
        if (as_int(delay, 0, FERRY__JS_SAFE_MAX, &n)) {
            json_decref(st);
            return bad(err, "opts.backoff.delay", "a non-negative integer (ms)", delay);
        }
        b->delay_ms = n;
        json_object_set_new(st, "delay", json_integer(n));
    }
    if (jitter) {
        double j = json_is_number(jitter) ? json_number_value(jitter) : -1;
        if (!json_is_number(jitter) || !(j >= 0 && j <= 1)) {
            json_decref(st);
            return bad(err, "opts.backoff.jitter", "a number between 0 and 1", jitter);
        }
        b->jitter = j;
        json_object_set_new(st, "jitter", json_real(j));
    }
    json_object_foreach((json_t *)v, k, m) /* members allowed unknown: kept as given */
        if (!json_is_null(m) && strcmp(k, "type") && strcmp(k, "delay") && strcmp(k, "jitter"))
            json_object_set(st, k, m);
    *stored = st;
    return 0;
}

static int check_dedup(const json_t *v, int flags, ferry_error *err) {
    static const char *const members[] = {"id",      "ttl",        "extend",
                                          "replace", "reschedule", "keepLastIfActive"};
    if (!json_is_object(v)) return bad(err, "opts.deduplication", "an object {id, ttl, ...}", v);
    const json_t *id = json_object_get(v, "id");
    if (!id || !json_is_string(id) || json_string_length(id) == 0)
        return ferry__err(err, FERRY_EINVAL, "opts.deduplication.id: must be a non-empty string");
    const char *k;
    json_t *m;
    long long n;
    json_object_foreach((json_t *)v, k, m) {
        if (json_is_null(m) || !strcmp(k, "id")) continue;
        if (!strcmp(k, "ttl")) {
            if (as_int(m, 1, FERRY__JS_SAFE_MAX, &n))
                return bad(err, "opts.deduplication.ttl", "a positive integer (ms)", m);
        } else if (!strcmp(k, "extend") || !strcmp(k, "replace") ||
                   !strcmp(k, "keepLastIfActive") || !strcmp(k, "reschedule")) {
            if (!json_is_boolean(m)) {
                char f[64];
                snprintf(f, sizeof f, "opts.deduplication.%s", k);
                return bad(err, f, "a boolean", m);
            }
        } else if (!(flags & FERRY__OPTS_ALLOW_UNKNOWN)) {
            return unknown_key(err, "opts.deduplication", k, NAMES(members));
        }
    }
    return 0;
}

static int check_parent(const json_t *v, int flags, ferry_error *err) {
    static const char *const members[] = {"id", "queue"};
    const json_t *id = json_is_object(v) ? json_object_get(v, "id") : NULL;
    const json_t *q = json_is_object(v) ? json_object_get(v, "queue") : NULL;
    if (!id || !q || !json_is_string(id) || !json_is_string(q) || !json_string_length(id) ||
        !json_string_length(q))
        return bad(err, "opts.parent", "{id: string, queue: \"<prefix>:<queue>\"}", v);
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m) {
        if (strcmp(k, "id") && strcmp(k, "queue") && !json_is_null(m) &&
            !(flags & FERRY__OPTS_ALLOW_UNKNOWN))
            return unknown_key(err, "opts.parent", k, NAMES(members));
    }
    return 0;
}

/* ---- the options object, one option group at a time ---------------------------------- */

/* One parse of a merged options object: where results go and the stored form being built. */
typedef struct opts_parse {
    int flags;
    ferry__job_opts *o;
    ferry__job_opts_extra *x; /* may be NULL */
    ferry_error *err;
    json_t *st;          /* the stored form (what Node writes to the job hash's opts) */
    const char *excl[4]; /* parent-failure flags set to true (at most one may be) */
    int nexcl;
} opts_parse;

/* jobId: a string without NUL, "" = no custom id (as in Node), else a valid id. */
static int opt_job_id(opts_parse *p, const char *field, json_t *v, json_t **sv) {
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return bad(p->err, field, "a string", v);
    if (json_string_length(v) == 0) return 0;
    int rc = ferry__job_id_check(json_string_value(v), p->err);
    if (rc) return rc;
    free(p->o->job_id);
    p->o->job_id = strdup(json_string_value(v));
    if (!p->o->job_id) return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    *sv = json_incref(v);
    return 0;
}

/* The counts and times (attempts, delay, timestamp, stackTraceLimit, keepLogs, sizeLimit):
 * non-negative integers up to 2^53-1. */
static int opt_count(opts_parse *p, enum opt_kind kind, const char *field, json_t *v,
                     json_t **sv) {
    long long n;
    if (as_int(v, 0, FERRY__JS_SAFE_MAX, &n))
        return bad(p->err, field, "a non-negative integer up to 2^53-1", v);
    if (kind == K_ATTEMPTS)
        p->o->attempts = n;
    else if (kind == K_DELAY)
        p->o->delay_ms = n;
    else if (kind == K_TIMESTAMP)
        p->o->timestamp = n;
    else if (kind == K_STL)
        p->o->stack_trace_limit = n;
    else if (kind == K_SIZELIMIT && p->x)
        p->x->size_limit = n;
    *sv = json_integer(n);
    return 0;
}

static int opt_priority(opts_parse *p, const char *field, json_t *v, json_t **sv) {
    long long n;
    if (as_int(v, 0, FERRY_JOB_PRIORITY_MAX, &n))
        return bad(p->err, field, "an integer from 0 to 2097151", v);
    p->o->priority = n;
    *sv = json_integer(n);
    return 0;
}

/* The booleans: lifo, the parent-failure flags (of which one at most may be true), omc. */
static int opt_boolean(opts_parse *p, enum opt_kind kind, const char *key, const char *field,
                       json_t *v, json_t **sv) {
    if (!json_is_boolean(v)) return bad(p->err, field, "a boolean", v);
    if (kind == K_LIFO) p->o->lifo = json_is_true(v);
    if (kind == K_PARENT_FLAG && json_is_true(v) && p->nexcl < 4) p->excl[p->nexcl++] = key;
    *sv = json_incref(v);
    return 0;
}

/* telemetry {metadata, omitContext}: stored as tm and omc, as Node does. */
static int opt_telemetry(opts_parse *p, const char *field, json_t *v) {
    if (!json_is_object(v)) return bad(p->err, field, "an object {metadata, omitContext}", v);
    const char *tk;
    json_t *tv;
    json_object_foreach(v, tk, tv) {
        if (json_is_null(tv)) continue;
        if (!strcmp(tk, "metadata") && json_is_string(tv)) {
            json_object_set(p->st, "tm", tv);
        } else if (!strcmp(tk, "omitContext") && json_is_boolean(tv)) {
            json_object_set(p->st, "omc", tv);
        } else if ((p->flags & FERRY__OPTS_ALLOW_UNKNOWN) && strcmp(tk, "metadata") &&
                   strcmp(tk, "omitContext")) {
            continue; /* Node stores only tm and omc of telemetry */
        } else {
            return ferry__err(p->err, FERRY_EINVAL,
                              "opts.telemetry: expected {metadata: string, omitContext: "
                              "boolean}, bad member \"%.40s\"",
                              tk);
        }
    }
    return 0;
}

/* Options Node knows that an add does not take. */
static int opt_refused(opts_parse *p, enum opt_kind kind) {
    if (kind == K_REPEATJOBKEY)
        return ferry__err(p->err, FERRY_EINVAL,
                          "opts.repeatJobKey: set only by job schedulers, not accepted on add");
    if (kind == K_DEBOUNCE)
        return ferry__err(p->err, FERRY_EINVAL,
                          "opts.debounce: removed in BullMQ 6; use deduplication instead");
    return ferry__err(p->err, FERRY_EINVAL,
                      "opts.repeat: not a job option in BullMQ 6.7.0 (a job added with it "
                      "would run once); make repeating jobs with a job scheduler: `ferry "
                      "scheduler upsert`, or ferry_scheduler_upsert() in C");
}

/* One known, non-null option: check it, fill *p->o / *p->x, and set *sv to the value to
 * store under its stored name (NULL = store nothing under it). */
static int parse_known(opts_parse *p, const struct known_opt *k, const char *key, json_t *v,
                       json_t **sv) {
    char field[96];
    snprintf(field, sizeof field, "opts.%s", key);
    int rc;
    switch (k->kind) {
    case K_JOBID:
        return opt_job_id(p, field, v, sv);
    case K_ATTEMPTS:
    case K_DELAY:
    case K_TIMESTAMP:
    case K_STL:
    case K_KEEPLOGS:
    case K_SIZELIMIT:
        return opt_count(p, k->kind, field, v, sv);
    case K_PRIORITY:
        return opt_priority(p, field, v, sv);
    case K_LIFO:
    case K_PARENT_FLAG:
    case K_OMC:
        return opt_boolean(p, k->kind, key, field, v, sv);
    case K_BACKOFF:
        return parse_backoff(v, p->flags, &p->o->backoff, sv, p->err);
    case K_RMC:
    case K_RMF:
        rc = keep_strict(v, field, p->flags,
                         k->kind == K_RMC ? &p->o->remove_on_complete : &p->o->remove_on_fail,
                         p->err);
        if (!rc) *sv = json_incref(v);
        return rc;
    case K_DEDUP:
        if ((rc = check_dedup(v, p->flags, p->err))) return rc;
        if (p->x) p->x->has_dedup = 1;
        *sv = json_incref(v);
        return 0;
    case K_TELEMETRY:
        return opt_telemetry(p, field, v);
    case K_TM:
        if (!json_is_string(v)) return bad(p->err, field, "a string", v);
        *sv = json_incref(v);
        return 0;
    case K_PARENT:
        if ((rc = check_parent(v, p->flags, p->err))) return rc;
        if (p->x) p->x->has_parent = 1;
        *sv = json_incref(v);
        return 0;
    case K_REPEATJOBKEY:
    case K_DEBOUNCE:
    case K_REPEAT:
        return opt_refused(p, k->kind);
    case K_PASS:
        *sv = json_incref(v);
        return 0;
    }
    return 0;
}

/* Every member of obj in order: nulls skipped (not given; the stored form drops them),
 * unknown keys refused or kept as they are (FERRY__OPTS_ALLOW_UNKNOWN), known ones parsed. */
static int parse_members(opts_parse *p, json_t *obj) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        const struct known_opt *k = find_known(key);
        if (json_is_null(v)) continue;
        if (!k) {
            if (!(p->flags & FERRY__OPTS_ALLOW_UNKNOWN))
                return unknown_key(p->err, NULL, key, NAMES(PUBLIC_NAMES));
            json_object_set(p->st, key, v);
            continue;
        }
        json_t *sv = NULL; /* normalised value to store under k->stored */
        int rc = parse_known(p, k, key, v, &sv);
        if (rc) {
            json_decref(sv);
            return rc;
        }
        if (sv && json_object_set_new(p->st, k->stored, sv))
            return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    }
    if (p->nexcl > 1)
        return ferry__err(p->err, FERRY_EINVAL, "opts: %s and %s cannot be used together",
                          p->excl[0], p->excl[1]);
    return 0;
}

/* Parse a merged options object; fills *o and the extras. With st_out, the stored form is
 * handed over as an object (new reference) instead of being serialised into o. */
static int parse_obj(json_t *obj, int flags, ferry__job_opts *o, ferry__job_opts_extra *x,
                     ferry_error *err, json_t **st_out) {
    opts_parse p = {.flags = flags, .o = o, .x = x, .err = err, .st = json_object()};
    if (!p.st) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    json_object_set_new(p.st, "attempts", json_integer(0)); /* Node: {attempts: 0, ...opts} */
    int rc = parse_members(&p, obj);
    if (!rc && st_out) {
        *st_out = p.st;
        return 0;
    }
    if (!rc) {
        o->stored_json = ferryx_json_serialize(p.st, 1, STORED_MAX);
        if (!o->stored_json) rc = ferry__err(err, FERRY_ENOMEM, "out of memory encoding opts");
    }
    json_decref(p.st);
    return rc;
}

void ferry__job_opts_init(ferry__job_opts *o) {
    memset(o, 0, sizeof *o);
    o->timestamp = -1;
    o->stack_trace_limit = -1;
}

json_t *ferry__opts_load_object(const char *json, const char *what, ferry_error *err) {
    if (!json || !*json) {
        json_t *o = json_object();
        if (!o) ferry__err(err, FERRY_ENOMEM, "out of memory");
        return o;
    }
    size_t len = strlen(json);
    if (len > FERRY_JOB_OPTS_MAX) {
        ferry__err(err, FERRY_ETOOBIG, "%s JSON is %zu bytes, limit %d", what, len,
                   FERRY_JOB_OPTS_MAX);
        return NULL;
    }
    if (ferryx_json_depth(json, len, FERRY_JOB_OPTS_DEPTH_MAX) > FERRY_JOB_OPTS_DEPTH_MAX) {
        ferry__err(err, FERRY_EINVAL, "%s: nested deeper than %d levels", what,
                   FERRY_JOB_OPTS_DEPTH_MAX);
        return NULL;
    }
    json_error_t je;
    json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!o) {
        ferry__err(err, FERRY_EINVAL, "%s: invalid JSON at line %d column %d: %s", what, je.line,
                   je.column, je.text);
        return NULL;
    }
    if (!json_is_object(o)) {
        bad(err, what, "a JSON object", o);
        json_decref(o);
        return NULL;
    }
    return o;
}

int ferry__job_opts_parse_over(const json_t *defaults, const char *json, ferry__job_opts *out,
                               ferry__job_opts_extra *extra, ferry_error *err) {
    return ferry__job_opts_parse_flags(defaults, json, 0, out, extra, err);
}

int ferry__job_opts_parse_flags(const json_t *defaults, const char *json, int flags,
                                ferry__job_opts *out, ferry__job_opts_extra *extra,
                                ferry_error *err) {
    ferry__job_opts_extra ignored;
    ferry_error local;
    if (!extra) extra = &ignored;
    if (!err) err = &local;
    memset(extra, 0, sizeof *extra);
    ferry__job_opts_init(out);
    json_t *obj = ferry__opts_load_object(json, "opts", err);
    if (!obj) return err->code;
    if (defaults && json_object_size(defaults)) {
        /* defaults first, then the job's own keys over them (Object.assign order) */
        json_t *merged = json_copy((json_t *)defaults);
        if (!merged || json_object_update(merged, obj)) {
            json_decref(merged);
            json_decref(obj);
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
        json_decref(obj);
        obj = merged;
    }
    int rc = parse_obj(obj, flags, out, extra, err, NULL);
    json_decref(obj);
    if (rc) {
        ferry__job_opts_free(out);
        ferry__job_opts_init(out);
        memset(extra, 0, sizeof *extra);
    }
    return rc;
}

/* Where the id goes: serialise the stored form with two one-byte placeholder ids; they
 * differ at exactly one byte, the id's place, whatever else the options hold. */
static int find_id_slot(json_t *st, ferry__opts_id_slot *slot, ferry_error *err) {
    char *a = NULL, *b = NULL;
    int rc = 0;
    if (json_object_set_new(st, "jobId", json_string("a")) ||
        !(a = ferryx_json_serialize(st, 1, STORED_MAX)) ||
        json_object_set_new(st, "jobId", json_string("b")) ||
        !(b = ferryx_json_serialize(st, 1, STORED_MAX)))
        rc = ferry__err(err, FERRY_ENOMEM, "out of memory encoding opts");
    size_t n = a ? strlen(a) : 0, at = 0;
    while (!rc && at < n && a[at] == b[at])
        at++;
    if (!rc && (strlen(b) != n || at == n || memcmp(a + at + 1, b + at + 1, n - at) != 0))
        rc = ferry__err(err, FERRY_EPROTO, "opts: cannot place the job id in the stored options");
    if (!rc) {
        memmove(a + at, a + at + 1, n - at); /* drop the placeholder, keep the NUL */
        slot->text = a;
        slot->at = at;
        slot->len = n - 1;
        a = NULL;
    }
    free(a);
    free(b);
    return rc;
}

int ferry__job_opts_parse_idslot(const json_t *defaults, const char *json, int flags,
                                 ferry__job_opts *out, ferry__job_opts_extra *extra,
                                 ferry__opts_id_slot *slot, ferry_error *err) {
    ferry__job_opts_extra ignored;
    ferry_error local;
    if (!extra) extra = &ignored;
    if (!err) err = &local;
    memset(extra, 0, sizeof *extra);
    memset(slot, 0, sizeof *slot);
    ferry__job_opts_init(out);
    json_t *obj = ferry__opts_load_object(json, "opts", err), *merged = NULL, *st = NULL;
    if (!obj) return err->code;
    int rc = 0;
    if (json_object_get(obj, "jobId"))
        rc = ferry__err(err, FERRY_EINVAL,
                        "opts.jobId: the job id is given separately, opts cannot set it too");
    /* The key order of {"jobId": <id>, ...json} merged over the defaults: the defaults' keys,
     * then jobId, then the job's keys the defaults lack. A valid placeholder id holds the
     * place through the parse. */
    if (!rc &&
        (!(merged = defaults ? json_copy((json_t *)defaults) : json_object()) ||
         json_object_set_new(merged, "jobId", json_string("a")) || json_object_update(merged, obj)))
        rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (!rc) rc = parse_obj(merged, flags, out, extra, err, &st);
    if (!rc) {
        free(out->job_id); /* the placeholder */
        out->job_id = NULL;
        rc = find_id_slot(st, slot, err);
    }
    if (!rc) {
        /* an empty id means no custom id, as opts.jobId "" does: no jobId key stored */
        json_object_del(st, "jobId");
        out->stored_json = ferryx_json_serialize(st, 1, STORED_MAX);
        if (!out->stored_json) rc = ferry__err(err, FERRY_ENOMEM, "out of memory encoding opts");
    }
    json_decref(st);
    json_decref(merged);
    json_decref(obj);
    if (rc) {
        ferry__job_opts_free(out);
        ferry__job_opts_init(out);
        memset(extra, 0, sizeof *extra);
        ferry__opts_id_slot_free(slot);
    }
    return rc;
}

void ferry__opts_id_slot_free(ferry__opts_id_slot *slot) {
    if (!slot) return;
    free(slot->text);
    memset(slot, 0, sizeof *slot);
}

int ferry__job_opts_parse(const char *json, ferry__job_opts *out, ferry_error *err) {
    return ferry__job_opts_parse_over(NULL, json, out, NULL, err);
}

void ferry__job_opts_free(ferry__job_opts *o) {
    if (!o) return;
    free(o->job_id);
    free(o->stored_json);
    o->job_id = NULL;
    o->stored_json = NULL;
}

/* ---- shallow merge ----------------------------------------------------------------- */

char *ferry__json_merge_shallow(const char *base, const char *over, ferry_error *err) {
    json_t *b = ferry__opts_load_object(base, "base options", err);
    if (!b) return NULL;
    json_t *o = ferry__opts_load_object(over, "options", err);
    if (!o) {
        json_decref(b);
        return NULL;
    }
    char *out = NULL;
    if (json_object_update(b, o) == 0) out = ferryx_json_serialize(b, 0, 2 * FERRY_JOB_OPTS_MAX);
    if (!out) ferry__err(err, FERRY_ENOMEM, "out of memory merging options");
    json_decref(b);
    json_decref(o);
    return out;
}
