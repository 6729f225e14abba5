/* joblog.c - the per-job log record (callbacks.job_log): one record per job outcome once it
 * was written to Redis (or refused), with the fields an operator needs to follow a job (name,
 * id, attempt, trace id, duration, age) plus the outcome, delay and reason; and
 * ferry_job_log_format, which renders a record as one text (logfmt-like) or JSON line.
 * Records never carry job data: only the envelope's "traceId" (ferry__job_envelope). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope/trace.h"
#include "util/clock.h"
#include "util/json_text.h"
#include "worker/worker_internal.h"

/* ---- emitting ----------------------------------------------------------------------- */

void ferry__job_log_emit(ferry__lane *lane, const ferry_job *j, const char *outcome) {
    if (!lane->cb.job_log) return;
    ferry_job_log rec;
    memset(&rec, 0, sizeof rec);
    rec.queue = lane->queue;
    rec.name = j->name;
    rec.id = j->id;
    rec.attempt = j->attempts_made + 1;
    rec.outcome = outcome;

    char dflt[128];
    char *heap = NULL;
    if (j->env_done && j->env.trace_id[0]) {
        rec.trace_id = j->env.trace_id;
    } else {
        /* the fallback: job-<queue>-<id> */
        size_t need = 4 + strlen(lane->queue) + 1 + strlen(j->id) + 1;
        char *b = need <= sizeof dflt ? dflt : (heap = malloc(need));
        if (b) {
            snprintf(b, need, "job-%s-%s", lane->queue, j->id);
            rec.trace_id = b;
        } else {
            rec.trace_id = "job";
        }
    }

    int lost = !strcmp(outcome, "lock-lost");
    switch (j->kind) {
    case FERRY__FIN_COMPLETE:
        rec.reason = lost ? j->reason : NULL; /* j->value is the return value here */
        break;
    case FERRY__FIN_RETRY_DELAY:
    case FERRY__FIN_RETRY_LATER:
    case FERRY__FIN_THROTTLE:
        if (!lost) rec.delay_ms = j->delay_ms;
        rec.reason = j->value ? j->value : j->reason;
        break;
    default:
        rec.reason = j->value ? j->value : j->reason;
        break;
    }
    rec.duration_ms = j->ran ? j->run_us / 1000 : 0;
    long long now = (long long)ferry__now_ms();
    rec.age_ms = j->timestamp > 0 && now > j->timestamp ? now - j->timestamp : 0;

    if (ferry__cb_enter(lane) == 0) {
        lane->cb.job_log(&rec, lane->cb_ud);
        ferry__cb_leave(lane);
    }
    free(heap);
}

/* ---- formatting --------------------------------------------------------------------- */

/* snprintf-like output: counts every byte, stores what fits below cap - 1. */
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

static void put(out *o, const char *s, size_t n) {
    if (o->cap > 0 && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void puts_(out *o, const char *s) {
    put(o, s, strlen(s));
}

static void putll(out *o, long long v) {
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", v);
    put(o, b, (size_t)n);
}

static void put_hex(out *o, const char *pfx, unsigned c) {
    char b[8];
    int n = snprintf(b, sizeof b, "%s%02x", pfx, c & 0xffu);
    put(o, b, (size_t)n);
}

/* s[0..n) between double quotes with \" \\ \n \r \t escaped and valid UTF-8 kept as is.
 * Other control bytes and invalid UTF-8: \xNN in text mode; in JSON \u00NN and U+FFFD
 * (DEL needs no escape in JSON). */
static void put_quoted(out *o, const char *s, size_t n, int json) {
    put(o, "\"", 1);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t len = 1;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(o, e, 2);
        } else if (c == '\n') {
            put(o, "\\n", 2);
        } else if (c == '\r') {
            put(o, "\\r", 2);
        } else if (c == '\t') {
            put(o, "\\t", 2);
        } else if (c < 0x20 || (c == 0x7f && !json)) {
            put_hex(o, json ? "\\u00" : "\\x", c);
        } else if (c < 0x80) {
            put(o, (const char *)u + i, 1);
        } else if ((len = ferryx_utf8_seq(u + i, n - i)) != 0) {
            put(o, (const char *)u + i, len);
        } else {
            len = 1;
            if (json)
                put(o, "\\ufffd", 6);
            else
                put_hex(o, "\\x", c);
        }
        i += len;
    }
    put(o, "\"", 1);
}

/* A text value: bare when it is non-empty printable ASCII without '"', '\\' or '=';
 * otherwise quoted (put_quoted, text mode). */
static void put_text_value(out *o, const char *s, int force_quotes) {
    if (!s) s = "";
    size_t n = strlen(s);
    int bare = !force_quotes && n > 0;
    for (size_t i = 0; bare && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '=') bare = 0;
    }
    if (bare)
        put(o, s, n);
    else
        put_quoted(o, s, n, 0);
}

/* A JSON string literal, or null for NULL. */
static void put_json_string(out *o, const char *s) {
    if (!s)
        puts_(o, "null");
    else
        put_quoted(o, s, strlen(s), 1);
}

size_t ferry_job_log_format(const ferry_job_log *rec, int json, char *buf, size_t cap) {
    out o = {buf, buf ? cap : 0, 0};
    if (rec && json) {
        puts_(&o, "{\"queue\":");
        put_json_string(&o, rec->queue ? rec->queue : "");
        puts_(&o, ",\"job\":");
        put_json_string(&o, rec->name ? rec->name : "");
        puts_(&o, ",\"id\":");
        put_json_string(&o, rec->id ? rec->id : "");
        puts_(&o, ",\"attempt\":");
        putll(&o, rec->attempt);
        puts_(&o, ",\"trace\":");
        put_json_string(&o, rec->trace_id ? rec->trace_id : "");
        puts_(&o, ",\"outcome\":");
        put_json_string(&o, rec->outcome ? rec->outcome : "");
        puts_(&o, ",\"duration_ms\":");
        putll(&o, rec->duration_ms);
        puts_(&o, ",\"age_ms\":");
        putll(&o, rec->age_ms);
        puts_(&o, ",\"delay_ms\":");
        putll(&o, rec->delay_ms);
        puts_(&o, ",\"reason\":");
        put_json_string(&o, rec->reason);
        puts_(&o, "}");
    } else if (rec) {
        puts_(&o, "queue=");
        put_text_value(&o, rec->queue, 0);
        puts_(&o, " job=");
        put_text_value(&o, rec->name, 0);
        puts_(&o, " id=");
        put_text_value(&o, rec->id, 0);
        puts_(&o, " attempt=");
        putll(&o, rec->attempt);
        puts_(&o, " trace=");
        put_text_value(&o, rec->trace_id, 0);
        puts_(&o, " outcome=");
        put_text_value(&o, rec->outcome, 0);
        puts_(&o, " duration_ms=");
        putll(&o, rec->duration_ms);
        puts_(&o, " age_ms=");
        putll(&o, rec->age_ms);
        if (rec->delay_ms > 0) {
            puts_(&o, " delay_ms=");
            putll(&o, rec->delay_ms);
        }
        if (rec->reason) {
            puts_(&o, " reason=");
            put_text_value(&o, rec->reason, 1);
        }
    }
    if (o.cap > 0) o.buf[o.len < o.cap ? o.len : o.cap - 1] = 0;
    return o.len;
}
