/* http_classify.c - HTTP status + Retry-After -> job outcome (ferry/http_classify.h).
 *
 * Pure code for handlers that call third-party APIs: the usual mapping of HTTP answers to
 * retry decisions, made strict where JavaScript-based parsers lean on Number() and
 * Date.parse() (which accept "+5", "5.0", "0x10" and local-time dates). */
#include "ferry/http_classify.h"

#include <string.h>

#include "util/clock.h"
#include "util/httpdate.h"

static int is_ows(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* delta-seconds = 1*DIGIT. Saturates instead of overflowing: once the value passes the
 * maximum, further digits cannot bring it back under. */
static int delta_seconds(const char *s, size_t len, long long *delay_ms) {
    const long long max_s = FERRY_RETRY_AFTER_MAX_MS / 1000;
    long long secs = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        if (secs <= max_s) secs = secs * 10 + (s[i] - '0');
    }
    *delay_ms = secs > max_s ? FERRY_RETRY_AFTER_MAX_MS : secs * 1000;
    return 1;
}

/* Delay until `at_ms`, clamped to [0, max], without overflow for any now_ms: at_ms is
 * bounded by the HTTP-date range, so at_ms - max cannot overflow either. */
static long long delay_until(long long at_ms, long long now_ms) {
    if (now_ms >= at_ms) return 0;
    if (now_ms < at_ms - FERRY_RETRY_AFTER_MAX_MS) return FERRY_RETRY_AFTER_MAX_MS;
    return at_ms - now_ms;
}

int ferry_retry_after_parse(const char *value, long long now_ms, long long *delay_ms) {
    if (!value) return FERRY_EINVAL;
    size_t len = strnlen(value, FERRY_RETRY_AFTER_MAX_LEN + 1);
    if (len > FERRY_RETRY_AFTER_MAX_LEN) return FERRY_EINVAL;
    while (len > 0 && is_ows(value[0])) {
        value++;
        len--;
    }
    while (len > 0 && is_ows(value[len - 1]))
        len--;
    if (len == 0) return FERRY_EINVAL;

    long long d;
    if (value[0] >= '0' && value[0] <= '9') {
        if (!delta_seconds(value, len, &d)) return FERRY_EINVAL;
    } else {
        int64_t at_ms;
        if (ferry__httpdate_parse(value, len, now_ms, &at_ms) != 0) return FERRY_EINVAL;
        d = delay_until(at_ms, now_ms);
    }
    if (delay_ms) *delay_ms = d;
    return 0;
}

int ferry_retry_after_parse_now(const char *value, long long *delay_ms) {
    return ferry_retry_after_parse(value, ferry__now_ms(), delay_ms);
}

ferry_http_verdict ferry_http_classify(int status, const char *retry_after, long long now_ms) {
    ferry_http_verdict v = {FERRY_HTTP_PERMANENT, 0};
    long long hint;
    if (status == 0) {
        v.cls = FERRY_HTTP_TRANSIENT;
    } else if (status >= 200 && status <= 299) {
        v.cls = FERRY_HTTP_OK;
    } else if (status == 429) {
        v.cls = FERRY_HTTP_THROTTLED;
        v.delay_ms = ferry_retry_after_parse(retry_after, now_ms, &hint) == 0
                         ? hint
                         : FERRY_THROTTLE_DEFAULT_MS;
    } else if (status == 408 || (status >= 500 && status <= 599)) {
        if (ferry_retry_after_parse(retry_after, now_ms, &hint) == 0) {
            v.cls = FERRY_HTTP_RETRY_LATER;
            v.delay_ms = hint;
        } else {
            v.cls = FERRY_HTTP_TRANSIENT;
        }
    }
    /* everything else (other 4xx, 1xx, 3xx, invalid codes) stays PERMANENT */
    return v;
}

ferry_http_verdict ferry_http_classify_now(int status, const char *retry_after) {
    return ferry_http_classify(status, retry_after, ferry__now_ms());
}

const char *ferry_http_class_name(ferry_http_class cls) {
    switch (cls) {
    case FERRY_HTTP_OK:
        return "ok";
    case FERRY_HTTP_TRANSIENT:
        return "transient";
    case FERRY_HTTP_RETRY_LATER:
        return "retry-later";
    case FERRY_HTTP_THROTTLED:
        return "throttled";
    case FERRY_HTTP_PERMANENT:
        return "permanent";
    }
    return "unknown";
}
