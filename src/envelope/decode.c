/* decode.c - reading an outbox envelope back from job data (envelope.h:
 * ferry__envelope_parse). One pass over the top-level members, no tree: job data can be
 * large and most of it (the payload) is only located, never decoded. */
#include <stdint.h>
#include <string.h>

#include "envelope/envelope.h"
#include "envelope/trace.h"
#include "util/json_text.h"
#include "util/uuid7.h"

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_blanks(const char *s, size_t n, size_t i) {
    while (i < n && is_blank(s[i]))
        i++;
    return i;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static long hex4(const char *s) {
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Decode the JSON string whose quotes are at s[a] and s[b - 1] (text already checked) into
 * out (capacity cap, NUL-terminated). Returns the decoded length, or (size_t)-1 when it
 * does not fit (or holds U+0000, which no id can). Lone surrogates become U+FFFD, as
 * JSON.parse keeps them and no id accepts them anyway. */
static size_t decode_string(const char *s, size_t a, size_t b, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = a + 1; i + 1 < b; i++) {
        uint32_t cp;
        if (s[i] != '\\') {
            if (k + 1 >= cap) return (size_t)-1;
            out[k++] = s[i];
            continue;
        }
        char e = s[++i];
        switch (e) {
        case 'n':
            cp = '\n';
            break;
        case 't':
            cp = '\t';
            break;
        case 'r':
            cp = '\r';
            break;
        case 'b':
            cp = '\b';
            break;
        case 'f':
            cp = '\f';
            break;
        case 'u': {
            long u = hex4(s + i + 1);
            i += 4;
            cp = (uint32_t)u;
            if (u >= 0xD800 && u <= 0xDBFF && i + 6 < b && s[i + 1] == '\\' && s[i + 2] == 'u') {
                long lo = hex4(s + i + 3);
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + (((uint32_t)u - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
            break;
        }
        default:
            cp = (unsigned char)e;
            break; /* \" \\ \/ */
        }
        if (cp == 0) return (size_t)-1;
        char buf[4];
        size_t m;
        if (cp < 0x80) {
            buf[0] = (char)cp;
            m = 1;
        } else if (cp < 0x800) {
            buf[0] = (char)(0xC0 | (cp >> 6));
            buf[1] = (char)(0x80 | (cp & 0x3F));
            m = 2;
        } else if (cp < 0x10000) {
            buf[0] = (char)(0xE0 | (cp >> 12));
            buf[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[2] = (char)(0x80 | (cp & 0x3F));
            m = 3;
        } else {
            buf[0] = (char)(0xF0 | (cp >> 18));
            buf[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            buf[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
            buf[3] = (char)(0x80 | (cp & 0x3F));
            m = 4;
        }
        if (k + m >= cap) return (size_t)-1;
        memcpy(out + k, buf, m);
        k += m;
    }
    out[k] = '\0';
    return k;
}

enum { M_OTHER, M_EVENT, M_TRACE, M_PAYLOAD };

static int member_kind(const char *s, size_t a, size_t b) {
    char key[16];
    size_t len;
    if (memchr(s + a, '\\', b - a)) {
        len = decode_string(s, a, b, key, sizeof key);
        if (len == (size_t)-1) return M_OTHER;
    } else {
        len = b - a - 2;
        if (len >= sizeof key) return M_OTHER;
        memcpy(key, s + a + 1, len);
        key[len] = '\0';
    }
    if (len == 7 && !memcmp(key, "eventId", 7)) return M_EVENT;
    if (len == 7 && !memcmp(key, "traceId", 7)) return M_TRACE;
    if (len == 7 && !memcmp(key, "payload", 7)) return M_PAYLOAD;
    return M_OTHER;
}

int ferry__envelope_parse(const char *data, size_t n, int max_depth, ferry__envelope_view *v) {
    memset(v, 0, sizeof *v);
    if (!data) return 0;
    size_t i = skip_blanks(data, n, 0);
    if (i >= n || data[i] != '{') return 0;
    if (ferryx_json_check(data, n, max_depth, NULL) != 0) return 0;
    /* last member of each name wins (JSON.parse); spans of the string values */
    size_t ev_a = 0, ev_b = 0, tr_a = 0, tr_b = 0;
    int has_event_string = 0, has_payload = 0, has_trace_string = 0;
    i = skip_blanks(data, n, i + 1);
    while (i < n && data[i] == '"') {
        size_t ka = i, kb = ferryx_json_value_end(data, n, i);
        i = skip_blanks(data, n, kb);
        if (i >= n || data[i] != ':') return 0; /* cannot happen in checked text */
        size_t va = skip_blanks(data, n, i + 1);
        size_t vb = ferryx_json_value_end(data, n, va);
        switch (member_kind(data, ka, kb)) {
        case M_EVENT:
            has_event_string = data[va] == '"';
            ev_a = va;
            ev_b = vb;
            break;
        case M_TRACE:
            has_trace_string = data[va] == '"';
            tr_a = va;
            tr_b = vb;
            break;
        case M_PAYLOAD:
            has_payload = 1;
            v->payload_off = va;
            v->payload_len = vb - va;
            break;
        default:
            break;
        }
        i = skip_blanks(data, n, vb);
        if (i < n && data[i] == ',') i = skip_blanks(data, n, i + 1);
    }
    char buf[sizeof v->event_id];
    size_t len;
    if (has_event_string) {
        len = decode_string(data, ev_a, ev_b, buf, sizeof buf);
        if (len != (size_t)-1 && ferry__uuid_text_valid(buf, len))
            memcpy(v->event_id, buf, len + 1);
    }
    if (has_trace_string) {
        len = decode_string(data, tr_a, tr_b, v->trace_id, sizeof v->trace_id);
        if (len == (size_t)-1 || !ferry__trace_id_valid(v->trace_id, len)) v->trace_id[0] = '\0';
    }
    v->is_envelope = has_event_string && has_payload;
    if (!v->is_envelope) v->payload_off = v->payload_len = 0;
    return v->is_envelope;
}
