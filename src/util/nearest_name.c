/* nearest_name.c - the "did you mean" hint for a misspelt key or option name (see
 * nearest_name.h). */
#include "util/nearest_name.h"

#include <string.h>

static int lower(int c) {
    return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Edit distance (insert, delete, substitute, swap of neighbours), case-insensitive; names
 * longer than 63 bytes count as far from everything. */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return (size_t)-1;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = lower((unsigned char)a[i - 1]) != lower((unsigned char)b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 &&
                lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 2]) &&
                lower((unsigned char)a[i - 2]) == lower((unsigned char)b[j - 1]) &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

const char *ferryx_nearest_name(const char *key, const char *const *names, size_t n) {
    const char *best = NULL;
    size_t best_d = (size_t)-1, len = strlen(key);
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(key, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    /* close enough to be a slip: at most 2 edits, 3 for long names, never most of the key */
    size_t allowed = len >= 10 ? 3 : len >= 4 ? 2 : 1;
    return best && best_d <= allowed && best_d < len ? best : NULL;
}
