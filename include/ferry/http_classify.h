/* ferry/http_classify.h - turn a third-party HTTP response into a job outcome.
 *
 * For handlers that call other services over HTTP: from the status code and the
 * Retry-After header decide whether the job succeeded, should be retried with backoff,
 * retried after the server's delay, should throttle the queue, or must not be retried.
 * See docs/http-classify.md for the full table and the reasoning behind each choice.
 *
 * Everything here is pure: no I/O, no allocation, no global state (the *_now variants only
 * read the wall clock). All functions are thread-safe and never block. */
#ifndef FERRY_HTTP_CLASSIFY_H
#define FERRY_HTTP_CLASSIFY_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest delay a Retry-After hint can yield: one day. Larger delta-seconds or later dates
 * clamp to it, so a broken or hostile server cannot park a job for years. */
#define FERRY_RETRY_AFTER_MAX_MS 86400000LL

/* Delay used for 429 when Retry-After is absent or unusable (10 s). */
#define FERRY_THROTTLE_DEFAULT_MS 10000LL

/* Longest Retry-After value looked at, surrounding whitespace included. Longer values are
 * no valid delta-seconds or HTTP-date a server would send and count as "no hint". */
#define FERRY_RETRY_AFTER_MAX_LEN 256

typedef enum ferry_http_class {
    FERRY_HTTP_OK = 0,          /* 2xx: success */
    FERRY_HTTP_TRANSIENT = 1,   /* retry with the job's backoff, spending an attempt */
    FERRY_HTTP_RETRY_LATER = 2, /* retry after delay_ms without spending an attempt */
    FERRY_HTTP_THROTTLED = 3,   /* the service is rate limiting us: pause for delay_ms */
    FERRY_HTTP_PERMANENT = 4,   /* retrying the same request cannot succeed */
} ferry_http_class;

typedef struct ferry_http_verdict {
    ferry_http_class cls;
    long long delay_ms; /* >= 0; meaningful for RETRY_LATER and THROTTLED, else 0 */
} ferry_http_verdict;

/* Classify a final HTTP response:
 *   0                      -> TRANSIENT  (no response at all: libcurl reports status 0 when
 *                                         the connection failed or timed out)
 *   200-299                -> OK
 *   429                    -> THROTTLED, delay = Retry-After, or FERRY_THROTTLE_DEFAULT_MS
 *                             when absent or unusable
 *   408, 500-599           -> RETRY_LATER with delay = Retry-After when it gives a hint,
 *                             else TRANSIENT
 *   other 400-499          -> PERMANENT
 *   1-199, 300-399, < 0, >= 600 -> PERMANENT (not a final response a handler can act on by
 *                             retrying: informational, an unfollowed redirect, or invalid)
 * `retry_after` is the header's value (NULL or "" = absent), parsed as by
 * ferry_retry_after_parse against `now_ms` (ms since the epoch). It is ignored for classes
 * that do not use it.
 * Returns: the verdict (by value). Cannot fail.
 * Ownership: `retry_after` is borrowed; not kept. */
FERRY_API ferry_http_verdict ferry_http_classify(int status, const char *retry_after,
                                                 long long now_ms);

/* ferry_http_classify against the current wall-clock time. Returns: as ferry_http_classify. */
FERRY_API ferry_http_verdict ferry_http_classify_now(int status, const char *retry_after);

/* Parse a Retry-After value (RFC 9110 §10.2.3). Surrounding spaces, tabs, CR and LF are
 * ignored (so a raw header line tail like "120\r\n" works). Accepted:
 *   delta-seconds: ASCII digits only (no sign, no decimal point); any length up to
 *                  FERRY_RETRY_AFTER_MAX_LEN, values over the maximum clamp to it;
 *   HTTP-date:     IMF-fixdate, RFC 850 or asctime, case-sensitive as RFC 9110 requires;
 *                  the delay is date - now_ms, 0 for a date in the past, clamped to the
 *                  maximum. The weekday name must be valid but need not match the date.
 * Returns: 0 and *delay_ms in [0, FERRY_RETRY_AFTER_MAX_MS] when the value gives a hint.
 * Errors: FERRY_EINVAL ("no hint", *delay_ms untouched) for NULL, empty, over-long or
 *   malformed values.
 * Ownership: `value` is borrowed; delay_ms may be NULL to only test the value. */
FERRY_API int ferry_retry_after_parse(const char *value, long long now_ms, long long *delay_ms);

/* ferry_retry_after_parse against the current wall-clock time. Returns, Errors: as
 * ferry_retry_after_parse. */
FERRY_API int ferry_retry_after_parse_now(const char *value, long long *delay_ms);

/* The lower-case name of a class ("ok", "transient", "retry-later", "throttled",
 * "permanent"; "unknown" for other values).
 * Returns: a static string; never NULL, never freed. */
FERRY_API const char *ferry_http_class_name(ferry_http_class cls);

#ifdef __cplusplus
}
#endif
#endif
