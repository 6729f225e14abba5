/* job_opts_stored.c - the lenient read of a job's stored opts (ferry__job_opts_from_stored):
 * JSON that Node or ferry wrote into the job hash, possibly through Redis' cjson (integers
 * as reals like 1.2345678901234e+14), read for what the worker needs (attempts, backoff,
 * keepJobs, ...). Nothing here fails: what cannot be read takes BullMQ's default, so a job
 * is never stuck on its own options. Numbers stored as strings (only hand-written opts or
 * a JavaScript producer passing "5" where a number belongs: neither ferry nor cjson writes
 * them) are read as the numbers they spell, where Node's worker would not (it takes
 * removeOnComplete "5" as {count: 0}, backoff "1000" as an unknown strategy): a deliberate
 * difference, in favour of what the producer meant. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts.h"
#include "queue/job_opts_ext.h"
#include "util/numtext.h"

/* A number however it was stored: integer, real (cjson's 1.2345678901234e+14), or a
 * numeric string. Returns 0 and *d on success. */
static int lenient_number(const json_t *v, double *d) {
    if (json_is_number(v)) {
        *d = json_number_value(v);
        return isfinite(*d) ? 0 : -1;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end;
        if (!*s) return -1;
        *d = ferryx_strtod_c(s, &end);
        return (*end == 0 && isfinite(*d)) ? 0 : -1;
    }
    return -1;
}

static long long lenient_int(const json_t *v, long long lo, long long hi, long long dflt) {
    double d;
    return lenient_number(v, &d) ? dflt : ferryx_clamp_ll(d, lo, hi);
}

/* A count, limit or delay: 0..JS_SAFE_MAX (past what JavaScript holds exactly, Node too
 * treats it as unbounded). */
static long long whole(double d) {
    return ferryx_clamp_ll(d, 0, FERRY__JS_SAFE_MAX);
}

static void keep_lenient(const json_t *v, ferry__keep_jobs *k) {
    double d;
    memset(k, 0, sizeof *k);
    k->set = 1;
    if (json_is_true(v)) {
        k->count = 0;
    } else if (json_is_object(v)) {
        const json_t *c = json_object_get(v, "count"), *a = json_object_get(v, "age"),
                     *l = json_object_get(v, "limit");
        k->count = (c && !lenient_number(c, &d)) ? (d < 0 ? -1 : whole(d)) : -1;
        if (a && !lenient_number(a, &d)) {
            const double max = (double)(FERRY__JS_SAFE_MAX / 1000);
            k->age_set = 1;
            k->age_s = d > max ? max : d < -max ? -max : d;
        }
        if (l && !lenient_number(l, &d) && d >= 1) k->limit = whole(d);
    } else if (!lenient_number(v, &d)) {
        k->count = d < 0 ? -1 : whole(d);
    } else {
        k->count = -1; /* false, or anything unreadable: keep */
    }
}

static void backoff_lenient(const json_t *v, ferry__backoff *b) {
    double d;
    memset(b, 0, sizeof *b);
    if (!lenient_number(v, &d)) {
        b->set = 1;
        strcpy(b->type, "fixed");
        b->delay_ms = whole(d);
        return;
    }
    if (!json_is_object(v)) return;
    b->set = 1;
    const json_t *t = json_object_get(v, "type");
    /* A name we cannot hold stays empty so the worker reports an unknown strategy rather
     * than running a different one. */
    if (t && json_is_string(t) && json_string_length(t) < sizeof b->type)
        strcpy(b->type, json_string_value(t));
    b->delay_ms = lenient_int(json_object_get(v, "delay"), 0, FERRY__JS_SAFE_MAX, 0);
    const json_t *j = json_object_get(v, "jitter");
    if (j && !lenient_number(j, &d)) b->jitter = d < 0 ? 0 : d > 1 ? 1 : d;
}

void ferry__job_opts_from_stored(const char *json, ferry__job_opts *out) {
    ferry__job_opts_init(out);
    json_t *o = NULL;
    if (json && *json) {
        json_error_t je;
        o = json_loads(json, 0, &je);
        if (!o) o = json_loads(json, JSON_DECODE_INT_AS_REAL, &je); /* integers > int64 */
    }
    if (!o || !json_is_object(o)) {
        json_decref(o);
        out->stored_json = strdup("{}");
        return;
    }
    out->stored_json = strdup(json);
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (json_is_null(v)) continue;
        if (!strcmp(key, "jobId")) {
            if (json_is_string(v) && json_string_length(v) > 0 &&
                strlen(json_string_value(v)) == json_string_length(v)) {
                free(out->job_id);
                out->job_id = strdup(json_string_value(v));
            }
        } else if (!strcmp(key, "attempts")) {
            out->attempts = lenient_int(v, 0, FERRY__JS_SAFE_MAX, 0);
        } else if (!strcmp(key, "backoff")) {
            backoff_lenient(v, &out->backoff);
        } else if (!strcmp(key, "delay")) {
            out->delay_ms = lenient_int(v, 0, FERRY__JS_SAFE_MAX, 0);
        } else if (!strcmp(key, "priority")) {
            out->priority = lenient_int(v, 0, FERRY_JOB_PRIORITY_MAX, 0);
        } else if (!strcmp(key, "lifo")) {
            double d;
            out->lifo = json_is_true(v) || (!json_is_string(v) && !lenient_number(v, &d) && d != 0);
        } else if (!strcmp(key, "timestamp")) {
            out->timestamp = lenient_int(v, 0, FERRY__JS_SAFE_MAX, -1);
        } else if (!strcmp(key, "stackTraceLimit")) {
            out->stack_trace_limit = lenient_int(v, 0, FERRY__JS_SAFE_MAX, -1);
        } else if (!strcmp(key, "removeOnComplete")) {
            keep_lenient(v, &out->remove_on_complete);
        } else if (!strcmp(key, "removeOnFail")) {
            keep_lenient(v, &out->remove_on_fail);
        }
    }
    json_decref(o);
}
