/* text_array.c - the PostgreSQL text[] literal of a list of strings (pg.h). Pure: no I/O,
 * so the pure sources that build parameters with it (src/deadletter/filter.c) stay pure
 * (cmake/pure_sources.cmake). */
#include <stdlib.h>

#include "pg/pg.h"

char *ferry__pg_text_array(const char *const *items, size_t n) {
    size_t len = 3;
    for (size_t i = 0; i < n; i++) {
        len += 3;
        for (const char *p = items[i]; *p; p++)
            len += (*p == '"' || *p == '\\') ? 2 : 1;
    }
    char *out = malloc(len);
    if (!out) return NULL;
    size_t k = 0;
    out[k++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i) out[k++] = ',';
        out[k++] = '"';
        for (const char *p = items[i]; *p; p++) {
            if (*p == '"' || *p == '\\') out[k++] = '\\';
            out[k++] = *p;
        }
        out[k++] = '"';
    }
    out[k++] = '}';
    out[k] = '\0';
    return out;
}
