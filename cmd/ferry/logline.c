/* logline.c - the log lines of the long-running subcommands, text or JSON (see logline.h). */
#include "logline.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ferry/common.h"
#include "util/utf8.h"

/* Set once on the main thread before other threads start (logline_set_format). */
static logline_format g_format = LOGLINE_TEXT;

const char *logline_time(char *out, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    return out;
}

void logline_set_format(logline_format f) {
    g_format = f;
}

logline_format logline_get_format(void) {
    return g_format;
}

int logline_format_parse(const char *s, logline_format *out) {
    if (!s) return -1;
    if (!strcmp(s, "text"))
        *out = LOGLINE_TEXT;
    else if (!strcmp(s, "json"))
        *out = LOGLINE_JSON;
    else
        return -1;
    return 0;
}

/* ---- fields ------------------------------------------------------------------------------ */

/* s as a JSON string, invalid UTF-8 replaced by U+FFFD (jansson refuses invalid text). */
static json_t *utf8_string(const char *s) {
    size_t n = strlen(s), bad = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t len = u[i] < 0x80 ? 1 : ferryx_utf8_seq(u + i, n - i);
        if (!len) {
            bad++;
            len = 1;
        }
        i += len;
    }
    if (!bad) return json_stringn(s, n);
    char *fixed = malloc(n + 2 * bad + 1);
    if (!fixed) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t len = u[i] < 0x80 ? 1 : ferryx_utf8_seq(u + i, n - i);
        if (len) {
            memcpy(fixed + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(fixed + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
        }
    }
    json_t *j = json_stringn(fixed, k);
    free(fixed);
    return j;
}

void logline_set_str(json_t *o, const char *key, const char *s) {
    if (o && s) json_object_set_new(o, key, utf8_string(s));
}

void logline_set_int(json_t *o, const char *key, long long v) {
    if (o) json_object_set_new(o, key, json_integer(v));
}

static int hex_lower(const char *s, size_t n, int *all_zero) {
    *all_zero = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 0;
        if (c != '0') *all_zero = 0;
    }
    return 1;
}

int logline_traceparent(const char *s, char *trace_id, char *span_id, char *flags) {
    if (!s) return 0;
    size_t len = strlen(s);
    int z;
    if (len < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-') return 0;
    if (!hex_lower(s, 2, &z) || !strncmp(s, "ff", 2)) return 0;
    if (!strncmp(s, "00", 2) ? len != 55 : len > 55 && s[55] != '-') return 0;
    if (!hex_lower(s + 3, 32, &z) || z) return 0;
    if (!hex_lower(s + 36, 16, &z) || z) return 0;
    if (!hex_lower(s + 53, 2, &z)) return 0;
    if (trace_id) snprintf(trace_id, 33, "%.32s", s + 3);
    if (span_id) snprintf(span_id, 17, "%.16s", s + 36);
    if (flags) snprintf(flags, 3, "%.2s", s + 53);
    return 1;
}

void logline_set_trace(json_t *o, const char *trace) {
    if (!o || !trace || !*trace) return;
    char tid[33], sid[17], fl[3];
    logline_set_str(o, "trace", trace);
    if (logline_traceparent(trace, tid, sid, fl)) {
        logline_set_str(o, "trace_id", tid);
        logline_set_str(o, "span_id", sid);
        logline_set_str(o, "trace_flags", fl);
    } else {
        logline_set_str(o, "trace_id", trace);
    }
}

/* ---- masking ----------------------------------------------------------------------------- */

static void mask(char *buf, size_t cap, const char *secret, size_t slen) {
    if (slen == 0) return;
    char *from = buf, *hit;
    while ((hit = strstr(from, secret)) != NULL) {
        size_t at = (size_t)(hit - buf), tail = strlen(hit + slen);
        if (at + 3 >= cap) { /* no room even for the mark: cut here */
            *hit = '\0';
            return;
        }
        size_t keep = at + 3 + tail < cap ? tail : cap - 1 - at - 3;
        memmove(hit + 3, hit + slen, keep);
        memcpy(hit, "***", 3);
        hit[3 + keep] = '\0';
        from = hit + 3;
    }
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

void logline_mask_url_password(char *buf, size_t cap, const char *url) {
    const char *p = url ? strstr(url, "://") : NULL;
    if (!p || !buf || !cap) return;
    p += 3;
    size_t alen = strcspn(p, "/?#");
    const char *at = NULL;
    for (const char *q = p; q < p + alen; q++)
        if (*q == '@') at = q;
    if (!at) return;
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (!colon) return;
    char raw[256], dec[256];
    size_t rlen = (size_t)(at - colon - 1);
    if (rlen >= sizeof raw) rlen = sizeof raw - 1;
    memcpy(raw, colon + 1, rlen);
    raw[rlen] = 0;
    size_t dl = 0;
    for (size_t i = 0; i < rlen; i++) {
        int h, l;
        if (raw[i] == '%' && i + 2 < rlen && (h = hexval(raw[i + 1])) >= 0 &&
            (l = hexval(raw[i + 2])) >= 0) {
            dec[dl++] = (char)(h * 16 + l);
            i += 2;
        } else {
            dec[dl++] = raw[i];
        }
    }
    dec[dl] = 0;
    mask(buf, cap, raw, rlen);
    if (dl && memchr(dec, '\0', dl) == NULL) mask(buf, cap, dec, dl);
}

/* ---- writing ----------------------------------------------------------------------------- */

/* vsnprintf into buf, or a heap copy when longer (at most LOGLINE_MAX); *heap to free. */
__attribute__((format(printf, 5, 0))) static const char *
format_text(char *buf, size_t cap, char **heap, int *cut, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(buf, cap, fmt, ap);
    *heap = NULL;
    *cut = 0;
    if (n < 0) {
        va_end(ap2);
        buf[0] = '\0';
        return buf;
    }
    if ((size_t)n >= cap) {
        size_t want = (size_t)n < LOGLINE_MAX ? (size_t)n : LOGLINE_MAX;
        *cut = (size_t)n > want;
        if ((*heap = malloc(want + 1)) != NULL) {
            vsnprintf(*heap, want + 1, fmt, ap2);
            va_end(ap2);
            return *heap;
        }
        *cut = 1; /* no memory: the line is cut, losing it would be worse */
    }
    va_end(ap2);
    return buf;
}

static const char *level_name(int level) {
    switch (level) {
    case FERRY_LOG_DEBUG:
        return "debug";
    case FERRY_LOG_WARN:
        return "warn";
    case FERRY_LOG_ERROR:
        return "error";
    default:
        return "info";
    }
}

static void write_text(const char *prog, const char *text, int cut) {
    char t[LOGLINE_TIME_MAX];
    fprintf(stderr, "%s ferry %s: %s%s\n", logline_time(t, sizeof t), prog, text, cut ? "..." : "");
}

static void write_json(const char *prog, int level, const char *event, json_t *fields,
                       const char *text, int cut) {
    char t[LOGLINE_TIME_MAX], ev[64];
    json_t *o = json_object();
    if (!o) {
        json_decref(fields);
        write_text(prog, text, cut);
        return;
    }
    if (!event) {
        snprintf(ev, sizeof ev, "%s.log", prog);
        event = ev;
    }
    logline_set_str(o, "time", logline_time(t, sizeof t));
    logline_set_str(o, "level", level_name(level));
    logline_set_str(o, "event", event);
    logline_set_str(o, "msg", text);
    if (cut) json_object_set_new(o, "truncated", json_true());
    const char *key;
    json_t *val;
    json_object_foreach(fields, key, val) {
        if (strcmp(key, "time") && strcmp(key, "level") && strcmp(key, "event") &&
            strcmp(key, "msg") && strcmp(key, "truncated"))
            json_object_set(o, key, val);
    }
    json_decref(fields);
    char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (line) {
        fprintf(stderr, "%s\n", line);
        free(line);
    } else {
        write_text(prog, text, cut); /* no memory: a text line beats none */
    }
}

void logline(const char *prog, const char *fmt, ...) {
    char buf[2048], *heap;
    int cut;
    va_list ap;
    va_start(ap, fmt);
    const char *text = format_text(buf, sizeof buf, &heap, &cut, fmt, ap);
    va_end(ap);
    if (g_format == LOGLINE_JSON)
        write_json(prog, FERRY_LOG_INFO, NULL, NULL, text, cut);
    else
        write_text(prog, text, cut);
    free(heap);
}

void logline_event(const char *prog, int level, const char *event, json_t *fields, const char *fmt,
                   ...) {
    char buf[2048], *heap;
    int cut;
    va_list ap;
    va_start(ap, fmt);
    const char *text = format_text(buf, sizeof buf, &heap, &cut, fmt, ap);
    va_end(ap);
    if (g_format == LOGLINE_JSON) {
        write_json(prog, level, event, fields, text, cut);
    } else {
        json_decref(fields);
        write_text(prog, text, cut);
    }
    free(heap);
}

void logline_json(const char *obj) {
    char t[LOGLINE_TIME_MAX];
    if (obj[0] != '{') {
        fprintf(stderr, "%s\n", obj);
        return;
    }
    const char *rest = obj + 1;
    while (*rest == ' ')
        rest++;
    fprintf(stderr, "{\"time\":\"%s\"%s%s\n", logline_time(t, sizeof t), *rest == '}' ? "" : ",",
            rest);
}
