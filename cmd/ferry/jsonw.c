/* jsonw.c - see jsonw.h. */
#include "jsonw.h"

#include <jansson.h>
#include <string.h>

void jsonw_write_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
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
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
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
