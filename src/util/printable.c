/* printable.c - text from outside (database rows, job fields) made safe for one line of
 * output (see printable.h). */
#include "util/printable.h"

#include <string.h>

#include "util/utf8.h"

static const char hex[] = "0123456789abcdef";

/* The escaped form of the character at p[0..left) (left >= 1) into esc[6]; its length,
 * and in *take how many input bytes it stands for. */
static size_t escape_one(const unsigned char *p, size_t left, unsigned char esc[6], size_t *take) {
    unsigned char c = *p;
    size_t len = 0, seq = c >= 0x80 ? ferryx_utf8_seq(p, left) : 1;
    *take = 1;
    if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
        esc[len++] = '\\';
        esc[len++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
    } else if (c >= 0x20 && c < 0x7f) {
        esc[len++] = c;
    } else if (seq == 2 && c == 0xC2 && p[1] <= 0x9F) { /* C1 control U+0080-U+009F */
        memcpy(esc, "\\u00", 4);
        esc[4] = (unsigned char)hex[p[1] >> 4];
        esc[5] = (unsigned char)hex[p[1] & 15];
        len = 6;
        *take = 2;
    } else if (seq > 1) { /* valid, shortest-form sequence of a scalar value */
        memcpy(esc, p, seq);
        len = *take = seq;
    } else { /* C0 control, DEL, or a byte of no valid sequence */
        esc[len++] = '\\';
        esc[len++] = 'x';
        esc[len++] = (unsigned char)hex[c >> 4];
        esc[len++] = (unsigned char)hex[c & 15];
    }
    return len;
}

const char *ferryx_printable(const char *s, char *out, size_t cap) {
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s), k = 0;
    while (left > 0) {
        unsigned char esc[6];
        size_t take, len = escape_one(p, left, esc, &take);
        if (k + len + 4 > cap) {
            memcpy(out + k, "...", 4);
            return out;
        }
        memcpy(out + k, esc, len);
        k += len;
        p += take;
        left -= take;
    }
    out[k] = '\0';
    return out;
}

int ferryx_printable_clean(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left > 0) {
        unsigned char esc[6];
        size_t take, len = escape_one(p, left, esc, &take);
        if (*p != '\\' && (len != take || memcmp(esc, p, len) != 0)) return 0;
        p += take;
        left -= take;
    }
    return 1;
}
