/* jsonw.c - see jsonw.h. */
#include "jsonw.h"

#include <jansson.h>
#include <string.h>

size_t jsonw_utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (len > n || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    return len;
}

void jsonw_write_string(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t len = jsonw_utf8_seq(p + i, n - i);
            if (len) {
                fwrite(p + i, 1, len, f);
                i += len;
            } else {
                fputs("\\ufffd", f); /* not UTF-8: the replacement character */
                i++;
            }
            continue;
        }
        switch (c) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (c < 0x20)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
        }
        i++;
    }
    fputc('"', f);
}

static void key(jsonw *w, const char *k) {
    if (w->count++) fputc(',', w->f);
    jsonw_write_string(w->f, k);
    fputc(':', w->f);
}

void jsonw_begin(jsonw *w, FILE *f) {
    w->f = f;
    w->count = 0;
    fputc('{', f);
}

void jsonw_end(jsonw *w) {
    fputs("}\n", w->f);
}

void jsonw_str(jsonw *w, const char *k, const char *val) {
    key(w, k);
    if (val)
        jsonw_write_string(w->f, val);
    else
        fputs("null", w->f);
}

void jsonw_int(jsonw *w, const char *k, long long val) {
    key(w, k);
    fprintf(w->f, "%lld", val);
}

void jsonw_int_or_null(jsonw *w, const char *k, long long val) {
    if (val < 0)
        jsonw_null(w, k);
    else
        jsonw_int(w, k, val);
}

void jsonw_double(jsonw *w, const char *k, double val) {
    key(w, k);
    fprintf(w->f, "%.6g", val);
}

void jsonw_null(jsonw *w, const char *k) {
    key(w, k);
    fputs("null", w->f);
}

void jsonw_raw(jsonw *w, const char *k, const char *json) {
    if (!json) {
        jsonw_null(w, k);
        return;
    }
    json_t *v = json_loads(json, JSON_DECODE_ANY, NULL);
    if (!v) {
        jsonw_str(w, k, json);
        return;
    }
    json_decref(v);
    key(w, k);
    /* Trim surrounding whitespace. Valid JSON has no raw line breaks inside strings, so
     * any inside the text are insignificant whitespace: turn them into spaces to keep one
     * object per line. */
    const char *s = json + strspn(json, " \t\r\n");
    size_t n = strlen(s);
    while (n && strchr(" \t\r\n", s[n - 1]))
        n--;
    for (size_t i = 0; i < n; i++)
        fputc(s[i] == '\n' || s[i] == '\r' ? ' ' : s[i], w->f);
}
