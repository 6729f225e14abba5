/* jsonw.c - see jsonw.h. */
#include "jsonw.h"

#include <string.h>

#include "util/json_text.h"

/* nesting accepted when embedding stored JSON (the check's own maximum; deeper text is
 * printed as a string) */
#define RAW_MAX_DEPTH 4096

void jsonw_write_string(FILE *f, const char *s) {
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t len = ferryx_utf8_seq(p + i, n - i);
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

void jsonw_bool(jsonw *w, const char *k, int val) {
    key(w, k);
    fputs(val ? "true" : "false", w->f);
}

void jsonw_raw(jsonw *w, const char *k, const char *json) {
    if (!json) {
        jsonw_null(w, k);
        return;
    }
    /* the library's JSON check, as wide as JSON.parse (jansson would refuse \u0000 and
     * integers past 64 bits, and this would print such stored JSON as a string) */
    if (ferryx_json_check(json, strlen(json), RAW_MAX_DEPTH, NULL) != 0) {
        jsonw_str(w, k, json);
        return;
    }
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
