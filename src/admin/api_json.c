/* api_json.c - the admin API's shared JSON builders and request checks (api_json.h): jobs
 * and times as JSON, stored JSON texts parsed back, and the checks every query parameter
 * and body member passes before a handler acts (each refusal a 400 naming it). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/api_json.h"
#include "util/json_text.h"
#include "util/printable.h"

/* ---- JSON builders -------------------------------------------------------------------- */

json_t *ferry__api_str(const char *s) {
    if (!s) return json_null();
    size_t n = strlen(s);
    if (ferryx_utf8_valid(s, n)) return json_stringn(s, n);
    /* each byte that does not start a valid sequence becomes U+FFFD (3 bytes) */
    char *fixed = malloc(3 * n + 1);
    if (!fixed) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = 1;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0xc0) len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (c >= 0x80 && (i + len > n || !ferryx_utf8_valid(s + i, len))) {
            memcpy(fixed + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
            continue;
        }
        memcpy(fixed + o, s + i, len);
        o += len;
        i += len;
    }
    json_t *v = json_stringn(fixed, o);
    free(fixed);
    return v;
}

json_t *ferry__api_stored_json(const char *text) {
    if (!text) return json_null();
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    return v ? v : ferry__api_str(text);
}

/* Stored option names back to the public ones, as Node's Job.optsFromJSON does (and
 * `ferry scheduler list --json`). */
static void decode_opts(json_t *o) {
    static const char *const names[][2] = {{"de", "deduplication"},
                                           {"fpof", "failParentOnFailure"},
                                           {"cpof", "continueParentOnFailure"},
                                           {"idof", "ignoreDependencyOnFailure"},
                                           {"kl", "keepLogs"},
                                           {"rdof", "removeDependencyOnFailure"}};
    if (!json_is_object(o)) return;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        json_t *v = json_object_get(o, names[k][0]);
        if (v && json_object_set(o, names[k][1], v) == 0) json_object_del(o, names[k][0]);
    }
    static const char *const tele[][2] = {{"tm", "metadata"}, {"omc", "omitContext"}};
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_object_get(o, tele[k][0]);
        if (!v) continue;
        json_t *t = json_object_get(o, "telemetry");
        if (!json_is_object(t)) {
            t = json_object();
            if (json_object_set_new(o, "telemetry", t) != 0) return; /* no memory */
        }
        if (json_object_set(t, tele[k][1], v) == 0) json_object_del(o, tele[k][0]);
    }
}

json_t *ferry__api_stored_opts(const char *text) {
    json_t *v = ferry__api_stored_json(text);
    decode_opts(v);
    return v;
}

const char *ferry__api_iso(long long ms, char *buf, size_t cap) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char day[40] = "1970-01-01T00:00:00";
    if (ms >= 0 && gmtime_r(&secs, &tm)) strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03lldZ", day, ms >= 0 ? ms % 1000 : 0);
    return buf;
}

void ferry__api_set_time(json_t *o, const char *key, long long ms, int zero_is_none) {
    char iso_key[64], iso[40];
    snprintf(iso_key, sizeof iso_key, "%sIso", key);
    if (ms < 0 || (zero_is_none && ms == 0)) {
        json_object_set_new(o, key, json_null());
        json_object_set_new(o, iso_key, json_null());
        return;
    }
    json_object_set_new(o, key, json_integer(ms));
    json_object_set_new(o, iso_key, json_string(ferry__api_iso(ms, iso, sizeof iso)));
}

json_t *ferry__api_job_json(const ferry_job_info *j) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "id", ferry__api_str(j->id));
    json_object_set_new(o, "name", ferry__api_str(j->name));
    json_object_set_new(o, "state", ferry__api_str(j->state));
    json_object_set_new(o, "data", ferry__api_stored_json(j->data));
    json_object_set_new(o, "opts", ferry__api_stored_opts(j->opts));
    json_object_set_new(o, "progress", ferry__api_stored_json(j->progress));
    json_object_set_new(o, "attemptsMade", json_integer(j->attempts_made));
    json_object_set_new(o, "attemptsStarted", json_integer(j->attempts_started));
    json_object_set_new(o, "stalledCounter", json_integer(j->stalled_count));
    ferry__api_set_time(o, "timestamp", j->timestamp, 0);
    json_object_set_new(o, "delay", json_integer(j->delay > 0 ? j->delay : 0));
    json_object_set_new(o, "priority", json_integer(j->priority > 0 ? j->priority : 0));
    ferry__api_set_time(o, "processedOn", j->processed_on, 0);
    ferry__api_set_time(o, "finishedOn", j->finished_on, 0);
    json_object_set_new(o, "failedReason", ferry__api_str(j->failed_reason));
    json_object_set_new(o, "stacktrace",
                        j->stacktrace ? ferry__api_stored_json(j->stacktrace) : json_array());
    json_object_set_new(o, "returnvalue", ferry__api_stored_json(j->returnvalue));
    json_object_set_new(o, "processedBy", ferry__api_str(j->processed_by));
    return o;
}

json_t *ferry__api_counts_json(const ferry_job_counts *c) {
    return json_pack("{sI sI sI sI sI sI sI sI}", "waiting", (json_int_t)c->waiting, "active",
                     (json_int_t)c->active, "completed", (json_int_t)c->completed, "failed",
                     (json_int_t)c->failed, "delayed", (json_int_t)c->delayed, "prioritized",
                     (json_int_t)c->prioritized, "waiting-children",
                     (json_int_t)c->waiting_children, "paused", (json_int_t)c->paused);
}

/* ---- parsing -------------------------------------------------------------------------- */

const char *ferry__api_shown(const char *s, char *buf, size_t cap) {
    char tmp[96];
    ferryx_printable(s ? s : "", tmp, sizeof tmp);
    snprintf(buf, cap, "%s", tmp);
    return buf;
}

/* A decimal integer, the whole text; -1 when it is not one (or overflows). */
static int parse_ll(const char *s, long long *v) {
    if (!s || !*s) return -1;
    const char *p = s;
    if (*p == '-') p++;
    if (*p < '0' || *p > '9') return -1;
    errno = 0;
    char *end = NULL;
    long long n = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *v = n;
    return 0;
}

/* n digits at s into *v; the position after them, or NULL. */
static const char *digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return NULL;
        *v = *v * 10 + (s[i] - '0');
    }
    return s + n;
}

int ferry__api_parse_time(const char *s, long long *ms) {
    long long n;
    if (!s || !*s) return -1;
    if (parse_ll(s, &n) == 0) {
        if (n < 0) return -1;
        *ms = n;
        return 0;
    }
    int Y, M, D, h = 0, mi = 0, sec = 0;
    const char *p = digits(s, 4, &Y);
    if (!p || *p++ != '-' || !(p = digits(p, 2, &M)) || *p++ != '-' || !(p = digits(p, 2, &D)))
        return -1;
    long long frac = 0, off = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (!(p = digits(p, 2, &h)) || *p++ != ':' || !(p = digits(p, 2, &mi)) || *p++ != ':' ||
            !(p = digits(p, 2, &sec)))
            return -1;
        if (*p == '.') {
            p++;
            int nd = 0;
            long long scale = 100;
            for (; *p >= '0' && *p <= '9'; p++, nd++)
                if (nd < 3) frac += (*p - '0') * scale, scale /= 10;
            if (!nd) return -1;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (!(p = digits(p, 2, &oh)) || *p++ != ':' || !(p = digits(p, 2, &om)) || oh > 23 ||
                om > 59)
                return -1;
            off = sign * (oh * 3600LL + om * 60LL);
        } else {
            return -1; /* a time without a zone would be read in an unknown one */
        }
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sec > 60 || Y < 1970)
        return -1;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != D) return -1; /* 2026-02-31 */
    *ms = ((long long)t - off) * 1000 + frac;
    return *ms >= 0 ? 0 : -1;
}

int ferry__api_parse_duration(const char *s, long long *ms) {
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    long long n = strtoll(s, &end, 10);
    if (errno) return -1;
    long long mul = !strcmp(end, "") || !strcmp(end, "ms") ? 1
                    : !strcmp(end, "s")                    ? 1000
                    : !strcmp(end, "m")                    ? 60000
                    : !strcmp(end, "h")                    ? 3600000
                    : !strcmp(end, "d")                    ? 86400000
                                                           : 0;
    if (!mul || n > FERRY_LIMIT_MS_MAX / mul) return -1;
    *ms = n * mul;
    return 0;
}

/* ---- query parameters ----------------------------------------------------------------- */

int ferry__api_query_ll(ferry__admin_req *r, ferry__admin_resp *out, const char *key, long long min,
                        long long max, long long def, long long *v) {
    const char *s = ferry__admin_query(r, key);
    if (!s) {
        *v = def;
        return 0;
    }
    long long n;
    char shown[128];
    if (parse_ll(s, &n))
        return ferry__admin_fail(out, 400, "parameter %s: expected an integer, got \"%s\"", key,
                                 ferry__api_shown(s, shown, sizeof shown));
    if (n < min || n > max)
        return ferry__admin_fail(out, 400, "parameter %s: must be %lld..%lld (got %lld)", key, min,
                                 max, n);
    *v = n;
    return 0;
}

static int text_ok(ferry__admin_resp *out, const char *what, const char *key, const char *s) {
    size_t n = strlen(s);
    if (n == 0) return ferry__admin_fail(out, 400, "%s %s: must not be empty", what, key);
    if (n > FERRY__API_TEXT_MAX)
        return ferry__admin_fail(out, 400, "%s %s: over %d bytes", what, key, FERRY__API_TEXT_MAX);
    if (!ferryx_utf8_valid(s, n))
        return ferry__admin_fail(out, 400, "%s %s: not valid UTF-8", what, key);
    return 0;
}

int ferry__api_query_text(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                          const char **v) {
    const char *s = ferry__admin_query(r, key);
    *v = NULL;
    if (!s) return 0;
    if (text_ok(out, "parameter", key, s)) return -1;
    *v = s;
    return 0;
}

int ferry__api_query_bool(ferry__admin_req *r, ferry__admin_resp *out, const char *key, int def,
                          int *v) {
    const char *s = ferry__admin_query(r, key);
    char shown[128];
    if (!s)
        *v = def;
    else if (!strcmp(s, "true") || !strcmp(s, "1"))
        *v = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "0"))
        *v = 0;
    else
        return ferry__admin_fail(out, 400, "parameter %s: expected true or false, got \"%s\"", key,
                                 ferry__api_shown(s, shown, sizeof shown));
    return 0;
}

int ferry__api_query_time(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                          long long *ms) {
    const char *s = ferry__admin_query(r, key);
    char shown[128];
    *ms = 0;
    if (!s) return 0;
    if (ferry__api_parse_time(s, ms))
        return ferry__admin_fail(out, 400,
                                 "parameter %s: expected an ISO-8601 time with a zone "
                                 "(2026-12-01T10:00:00Z), a date or epoch milliseconds, got "
                                 "\"%s\"",
                                 key, ferry__api_shown(s, shown, sizeof shown));
    return 0;
}

/* ---- the body ------------------------------------------------------------------------- */

int ferry__api_body_check(ferry__admin_req *r, ferry__admin_resp *out, const char *const *allowed) {
    if (!r->body) return 0;
    if (!json_is_object(r->body))
        return ferry__admin_fail(out, 400, "body: expected a JSON object");
    const char *k;
    json_t *v;
    json_object_foreach(r->body, k, v) {
        int known = 0;
        for (size_t i = 0; allowed && allowed[i] && !known; i++)
            known = !strcmp(allowed[i], k);
        if (!known) {
            char shown[128];
            (void)v;
            return ferry__admin_fail(out, 400, "body: unknown member \"%s\" (nothing was done)",
                                     ferry__api_shown(k, shown, sizeof shown));
        }
    }
    return 0;
}

static json_t *member(ferry__admin_req *r, const char *key) {
    json_t *v = r->body ? json_object_get(r->body, key) : NULL;
    return v && !json_is_null(v) ? v : NULL;
}

int ferry__api_body_ll(ferry__admin_req *r, ferry__admin_resp *out, const char *key, long long min,
                       long long max, long long def, long long *v) {
    json_t *m = member(r, key);
    if (!m) {
        *v = def;
        return 0;
    }
    if (!json_is_integer(m))
        return ferry__admin_fail(out, 400, "body member %s: expected an integer", key);
    long long n = (long long)json_integer_value(m);
    if (n < min || n > max)
        return ferry__admin_fail(out, 400, "body member %s: must be %lld..%lld (got %lld)", key,
                                 min, max, n);
    *v = n;
    return 0;
}

int ferry__api_body_bool(ferry__admin_req *r, ferry__admin_resp *out, const char *key, int def,
                         int *v) {
    json_t *m = member(r, key);
    if (!m) {
        *v = def;
        return 0;
    }
    if (!json_is_boolean(m))
        return ferry__admin_fail(out, 400, "body member %s: expected true or false", key);
    *v = json_is_true(m);
    return 0;
}

int ferry__api_body_text(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                         const char **v) {
    json_t *m = member(r, key);
    *v = NULL;
    if (!m) return 0;
    if (!json_is_string(m))
        return ferry__admin_fail(out, 400, "body member %s: expected a string", key);
    const char *s = json_string_value(m);
    if (strlen(s) != json_string_length(m))
        return ferry__admin_fail(out, 400, "body member %s: contains a NUL character", key);
    if (text_ok(out, "body member", key, s)) return -1;
    *v = s;
    return 0;
}

int ferry__api_body_time(ferry__admin_req *r, ferry__admin_resp *out, const char *key,
                         long long *ms) {
    json_t *m = member(r, key);
    *ms = 0;
    if (!m) return 0;
    if (json_is_integer(m) && json_integer_value(m) >= 0) {
        *ms = (long long)json_integer_value(m);
        return 0;
    }
    if (json_is_string(m) && ferry__api_parse_time(json_string_value(m), ms) == 0) return 0;
    return ferry__admin_fail(out, 400,
                             "body member %s: expected an ISO-8601 time with a zone "
                             "(2026-12-01T10:00:00Z), a date or epoch milliseconds",
                             key);
}

/* ---- resources ------------------------------------------------------------------------ */

int ferry__api_queue(ferry__admin_req *r, ferry__admin_resp *out, ferry_queue **q) {
    ferry_error err = {0};
    *q = NULL;
    if (r->nparams < 1) return ferry__admin_fail(out, 500, "route without a queue");
    if (ferry__admin_queue(r, r->params[0], q, &err)) return ferry__admin_fail_err(out, &err);
    int exists = 0;
    if (ferry_queue_exists(*q, &exists, &err)) {
        ferry__admin_queue_release(r, *q);
        *q = NULL;
        return ferry__admin_fail_err(out, &err);
    }
    if (!exists) {
        char shown[128];
        ferry__admin_queue_release(r, *q);
        *q = NULL;
        return ferry__admin_fail(out, 404, "no queue \"%s\" under prefix \"%s\"",
                                 ferry__api_shown(r->params[0], shown, sizeof shown),
                                 r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX);
    }
    return 0;
}

char *ferry__api_summary(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}
