/* format.c - the two "format" values contracts assert: "date-time" (RFC 3339 section 5.6)
 * and "uuid" (RFC 4122's text form, any version, either case). Pure predicates. */
#include <stddef.h>

#include "contract/contract_internal.h"

static int digits(const char *s, size_t n, int *out) {
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0; /* ASCII digits only */
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static int days_in_month(int y, int m) {
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return d[m - 1];
}

/* full-date "T" full-time: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), T and Z in either
 * case. A leap second (:60) is accepted only at 23:59 UTC, once the offset is applied. */
int ferry__contract_is_date_time(const char *s, size_t n) {
    int y, mo, d, h, mi, sec, oh = 0, om = 0;
    if (n < 20) return 0;
    if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
        !digits(s + 8, 2, &d))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)) return 0;
    if (s[10] != 'T' && s[10] != 't') return 0;
    if (!digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return 0;
    if (h > 23 || mi > 59 || sec > 60) return 0;
    size_t i = 19;
    if (i < n && s[i] == '.') {
        size_t f = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == f) return 0;
    }
    if (i >= n) return 0;
    int sign = 0;
    if (s[i] == 'Z' || s[i] == 'z') {
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        sign = s[i] == '+' ? 1 : -1;
        if (n - i != 6 || !digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
            !digits(s + i + 4, 2, &om))
            return 0;
        if (oh > 23 || om > 59) return 0;
        i += 6;
    } else {
        return 0;
    }
    if (i != n) return 0;
    if (sec == 60) {
        int utc = ((h * 60 + mi - sign * (oh * 60 + om)) % 1440 + 1440) % 1440;
        if (utc != 23 * 60 + 59) return 0;
    }
    return 1;
}
