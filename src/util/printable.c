/* printable.c - text from outside (database rows) made safe for one line of output (see
 * printable.h). */
#include "util/printable.h"

#include <string.h>

const char *ferry__printable(const char *s, char *out, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t k = 0;
    while (*p) {
        unsigned char c = *p, esc[6];
        size_t len = 0, take = 1;
        if (c == '\\' || c == '\n' || c == '\r' || c == '\t') {
            esc[len++] = '\\';
            esc[len++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
        } else if (c >= 0x20 && c < 0x7f) {
            esc[len++] = c;
        } else {
            size_t need = c >= 0xC2 && c <= 0xDF   ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
            size_t j = 1;
            while (j < need && (p[j] & 0xC0) == 0x80)
                j++;
            if (need && j == need && !(c == 0xC2 && p[1] <= 0x9F)) {
                memcpy(esc, p, need);
                len = take = need;
            } else {
                int c1 = need && j == need; /* U+0080-U+009F */
                unsigned char v = c1 ? p[1] : c;
                esc[len++] = '\\';
                esc[len++] = c1 ? 'u' : 'x';
                if (c1) {
                    esc[len++] = '0';
                    esc[len++] = '0';
                    take = 2;
                }
                esc[len++] = (unsigned char)hex[v >> 4];
                esc[len++] = (unsigned char)hex[v & 15];
            }
        }
        if (k + len + 4 > cap) {
            memcpy(out + k, "...", 4);
            return out;
        }
        memcpy(out + k, esc, len);
        k += len;
        p += take;
    }
    out[k] = '\0';
    return out;
}
