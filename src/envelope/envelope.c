/* envelope.c - encoding the outbox job envelope. Strings are escaped the way JSON.stringify
 * does (\" \\ \b \f \n \r \t, other control characters as \u00xx) and the payload is copied
 * without insignificant blanks, so a Node consumer sees what a Node relay (which parses
 * the jsonb and stringifies it again) would have written. */
#include "envelope/envelope.h"

#include <string.h>

static const char K_EVENT[] = "{\"eventId\":";
static const char K_TRACE[] = ",\"traceId\":";
static const char K_PAYLOAD[] = ",\"payload\":";

static char short_escape(unsigned char c) {
    switch (c) {
    case '"':
        return '"';
    case '\\':
        return '\\';
    case '\b':
        return 'b';
    case '\f':
        return 'f';
    case '\n':
        return 'n';
    case '\r':
        return 'r';
    case '\t':
        return 't';
    default:
        return 0;
    }
}

static size_t escaped_len(const char *s, size_t n) {
    size_t out = 2;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        out += short_escape(c) ? 2 : c < 0x20 ? 6 : 1;
    }
    return out;
}

static size_t put_escaped(char *o, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    o[k++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e = short_escape(c);
        if (e) {
            o[k++] = '\\';
            o[k++] = e;
        } else if (c < 0x20) {
            memcpy(o + k, "\\u00", 4);
            o[k + 4] = hex[c >> 4];
            o[k + 5] = hex[c & 15];
            k += 6;
        } else {
            o[k++] = (char)c;
        }
    }
    o[k++] = '"';
    return k;
}

/* Copy JSON text without the blanks outside strings (jsonb's text output puts a space
 * after every ':' and ','; JSON.stringify does not). */
static size_t put_compact(char *o, const char *s, size_t n) {
    size_t k = 0;
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            o[k++] = c;
            if (c == '\\' && i + 1 < n)
                o[k++] = s[++i];
            else if (c == '"')
                in_str = 0;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            continue;
        } else {
            if (c == '"') in_str = 1;
            o[k++] = c;
        }
    }
    return k;
}

size_t ferry__envelope_size(const char *event_id, size_t event_id_len, const char *trace_id,
                            size_t trace_len, size_t payload_len) {
    size_t n = sizeof K_EVENT - 1 + escaped_len(event_id, event_id_len) + sizeof K_PAYLOAD - 1 +
               payload_len + 1;
    if (trace_id) n += sizeof K_TRACE - 1 + escaped_len(trace_id, trace_len);
    return n;
}

size_t ferry__envelope_write(char *out, size_t cap, const char *event_id, size_t event_id_len,
                             const char *trace_id, size_t trace_len, const char *payload,
                             size_t payload_len) {
    size_t need = ferry__envelope_size(event_id, event_id_len, trace_id, trace_len, payload_len);
    if (!out || cap < need + 1) return 0;
    size_t k = 0;
    memcpy(out + k, K_EVENT, sizeof K_EVENT - 1);
    k += sizeof K_EVENT - 1;
    k += put_escaped(out + k, event_id, event_id_len);
    if (trace_id) {
        memcpy(out + k, K_TRACE, sizeof K_TRACE - 1);
        k += sizeof K_TRACE - 1;
        k += put_escaped(out + k, trace_id, trace_len);
    }
    memcpy(out + k, K_PAYLOAD, sizeof K_PAYLOAD - 1);
    k += sizeof K_PAYLOAD - 1;
    k += put_compact(out + k, payload, payload_len);
    out[k++] = '}';
    out[k] = '\0';
    return k;
}

size_t ferry__json_compact_copy(const char *s, size_t n, char *out) {
    size_t k = put_compact(out, s, n);
    out[k] = '\0';
    return k;
}
