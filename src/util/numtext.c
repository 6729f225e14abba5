/* numtext.c - locale-independent double formatting and parsing (see numtext.h). */
#include "util/numtext.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The locale's decimal separator, when it is not "." (else NULL). */
static const char *locale_point(void) {
    const struct lconv *lc = localeconv();
    const char *p = lc ? lc->decimal_point : NULL;
    return p && *p && strcmp(p, ".") ? p : NULL;
}

int ferry__fmt_g(char *buf, size_t size, int prec, double x) {
    int n = snprintf(buf, size, "%.*g", prec, x);
    const char *dp = locale_point();
    if (!dp || n < 0 || size == 0) return n;
    char *at = strstr(buf, dp);
    if (!at) return n;
    size_t dl = strlen(dp);
    *at = '.';
    memmove(at + 1, at + dl, strlen(at + dl) + 1); /* a multibyte separator shrinks to one */
    return n - (int)(dl - 1);
}

double ferry__strtod_c(const char *s, char **end) {
    const char *dp = locale_point();
    const char *dot = dp ? strchr(s, '.') : NULL;
    if (!dot) return strtod(s, end);
    /* rewrite the '.' into the locale's separator in a copy (numbers here are short) */
    char tmp[128];
    size_t len = strlen(s), dl = strlen(dp), off = (size_t)(dot - s);
    if (len + dl >= sizeof tmp) return strtod(s, end);
    memcpy(tmp, s, off);
    memcpy(tmp + off, dp, dl);
    memcpy(tmp + off + dl, dot + 1, len - off);
    char *e = NULL;
    double v = strtod(tmp, &e);
    if (end) {
        size_t used = (size_t)(e - tmp);
        /* map the end back onto s: past the separator, the copy is dl - 1 bytes longer */
        *end = (char *)s + (used > off ? used - (dl - 1) : used);
    }
    return v;
}

long long ferry__clamp_ll(double d, long long lo, long long hi) {
    if (d != d) d = 0;
    /* (double)lo and (double)hi may round away from the bound (2^63 - 1 becomes 2^63): test
     * with <= / >= so the cast below only sees values strictly inside. */
    if (d <= (double)lo) return lo;
    if (d >= (double)hi) return hi;
    long long v = (long long)d;
    return v < lo ? lo : v > hi ? hi : v;
}
