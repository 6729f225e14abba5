/* trace.c - trace id validation for outbox events: a W3C traceparent is checked field by
 * field (so a malformed one is refused at append time, not discovered by a consumer), an
 * opaque id (a request id, say) only for length and printable characters. */
#include "envelope/trace.h"

#include <string.h>

#include "ferry/outbox.h"
#include "util/error.h"

#define TRACEPARENT_LEN 55

static int lower_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int any_hex(char c) {
    return lower_hex(c) || (c >= 'A' && c <= 'F');
}

static int printable_ascii(char c) {
    return (unsigned char)c >= 0x21 && (unsigned char)c <= 0x7e;
}

/* s[0..n) all lower-case hex? */
static int hex_run(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!lower_hex(s[i])) return 0;
    return 1;
}

static int all_zero(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != '0') return 0;
    return 1;
}

int ferry__traceparent_parse(const char *s, size_t len, ferry__traceparent *out, ferry_error *err) {
    if (!s || len < TRACEPARENT_LEN)
        return ferry__err(err, FERRY_EINVAL, "traceparent: %zu characters, expected %d",
                          s ? len : 0, TRACEPARENT_LEN);
    if (len > FERRY_OUTBOX_TRACE_ID_MAX)
        return ferry__err(err, FERRY_EINVAL, "traceparent: %zu characters, limit %d", len,
                          FERRY_OUTBOX_TRACE_ID_MAX);
    if (!hex_run(s, 2) || s[2] != '-')
        return ferry__err(err, FERRY_EINVAL,
                          "traceparent: version must be two lower-case hex digits");
    if (s[0] == 'f' && s[1] == 'f')
        return ferry__err(err, FERRY_EINVAL, "traceparent: version ff is invalid");
    if (!hex_run(s + 3, 32) || s[35] != '-')
        return ferry__err(err, FERRY_EINVAL,
                          "traceparent: trace-id must be 32 lower-case hex digits");
    if (all_zero(s + 3, 32))
        return ferry__err(err, FERRY_EINVAL, "traceparent: trace-id is all zeros");
    if (!hex_run(s + 36, 16) || s[52] != '-')
        return ferry__err(err, FERRY_EINVAL,
                          "traceparent: parent-id must be 16 lower-case hex digits");
    if (all_zero(s + 36, 16))
        return ferry__err(err, FERRY_EINVAL, "traceparent: parent-id is all zeros");
    if (!hex_run(s + 53, 2))
        return ferry__err(err, FERRY_EINVAL,
                          "traceparent: trace-flags must be two lower-case hex digits");
    if (len > TRACEPARENT_LEN) {
        if (s[0] == '0' && s[1] == '0')
            return ferry__err(err, FERRY_EINVAL,
                              "traceparent: version 00 has %zu characters, "
                              "expected %d",
                              len, TRACEPARENT_LEN);
        if (s[TRACEPARENT_LEN] != '-')
            return ferry__err(err, FERRY_EINVAL,
                              "traceparent: unexpected character after trace-flags");
        for (size_t i = TRACEPARENT_LEN; i < len; i++)
            if (!printable_ascii(s[i]))
                return ferry__err(err, FERRY_EINVAL, "traceparent: control or non-ASCII character");
    }
    if (out) {
        memcpy(out->version, s, 2), out->version[2] = 0;
        memcpy(out->trace_id, s + 3, 32), out->trace_id[32] = 0;
        memcpy(out->parent_id, s + 36, 16), out->parent_id[16] = 0;
        memcpy(out->flags, s + 53, 2), out->flags[2] = 0;
    }
    return 0;
}

int ferry__trace_id_valid(const char *s, size_t n) {
    if (!s || n == 0 || n > FERRY_OUTBOX_TRACE_ID_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!printable_ascii(s[i])) return 0;
    return 1;
}

int ferry__trace_id_check(const char *s, ferry_error *err) {
    if (!s) return 0;
    size_t len = strnlen(s, FERRY_OUTBOX_TRACE_ID_MAX + 1);
    if (len == 0) return ferry__err(err, FERRY_EINVAL, "trace_id is empty (use NULL for none)");
    if (len >= 3 && any_hex(s[0]) && any_hex(s[1]) && s[2] == '-')
        return ferry__traceparent_parse(s, len, NULL, err);
    if (ferry__trace_id_valid(s, len)) return 0;
    if (len > FERRY_OUTBOX_TRACE_ID_MAX)
        return ferry__err(err, FERRY_EINVAL, "trace_id is longer than %d bytes",
                          FERRY_OUTBOX_TRACE_ID_MAX);
    size_t i = 0;
    while (printable_ascii(s[i]))
        i++;
    return ferry__err(err, FERRY_EINVAL, "trace_id: byte %zu is not printable ASCII", i);
}
