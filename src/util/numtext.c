/* numtext.c - locale-independent double formatting and parsing (see numtext.h). */
#include "util/numtext.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The locale's decimal separator, when it is not "." (else NULL). */
static const char *locale_point(void) {
    const struct lconv *lc = localeconv();
    const char *p = lc ? lc->decimal_point : NULL;
    return p && *p && strcmp(p, ".") ? p : NULL;
}

int ferryx_fmt_g(char *buf, size_t size, int prec, double x) {
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

double ferryx_strtod_c(const char *s, char **end) {
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

long long ferryx_clamp_ll(double d, long long lo, long long hi) {
    if (d != d) d = 0;
    /* (double)lo and (double)hi may round away from the bound (2^63 - 1 becomes 2^63): test
     * with <= / >= so the cast below only sees values strictly inside. */
    if (d <= (double)lo) return lo;
    if (d >= (double)hi) return hi;
    long long v = (long long)d;
    return v < lo ? lo : v > hi ? hi : v;
}

size_t ferryx_js_space(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
    if (c == 0xC2 && n >= 2 && s[1] == 0xA0) return 2; /* U+00A0 */
    if (n < 3) return 0;
    unsigned c1 = s[1], c2 = s[2];
    if (c == 0xEF && c1 == 0xBB && c2 == 0xBF) return 3; /* U+FEFF */
    if (c == 0xE1 && c1 == 0x9A && c2 == 0x80) return 3; /* U+1680 */
    if (c == 0xE3 && c1 == 0x80 && c2 == 0x80) return 3; /* U+3000 */
    if (c == 0xE2 && c1 == 0x80 &&
        ((c2 >= 0x80 && c2 <= 0x8A) || c2 == 0xA8 || c2 == 0xA9 || c2 == 0xAF))
        return 3;                                        /* U+2000..200A, U+2028, U+2029, U+202F */
    if (c == 0xE2 && c1 == 0x81 && c2 == 0x9F) return 3; /* U+205F */
    return 0;
}

double ferryx_js_number(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t a = 0, b = n, w;
    while (a < b && (w = ferryx_js_space((const char *)s + a, b - a)) > 0)
        a += w;
    size_t end = a; /* just past the last character that is not a blank */
    for (size_t k = a; k < b;) {
        if ((w = ferryx_js_space((const char *)s + k, b - k)) > 0)
            k += w;
        else
            end = ++k; /* lead bytes of blanks are never continuation bytes */
    }
    b = end;
    if (a == b) return 0;
    if (b - a > 2 && s[a] == '0' && s[a + 1] && strchr("xXoObB", s[a + 1])) {
        int base = s[a + 1] == 'x' || s[a + 1] == 'X'   ? 16
                   : s[a + 1] == 'o' || s[a + 1] == 'O' ? 8
                                                        : 2;
        double v = 0;
        for (size_t k = a + 2; k < b; k++) {
            int d = s[k] >= '0' && s[k] <= '9'   ? s[k] - '0'
                    : s[k] >= 'a' && s[k] <= 'f' ? s[k] - 'a' + 10
                    : s[k] >= 'A' && s[k] <= 'F' ? s[k] - 'A' + 10
                                                 : 99;
            if (d >= base) return NAN;
            v = v * base + d;
        }
        return v;
    }
    size_t k = a;
    int neg = s[k] == '-';
    if (s[k] == '+' || s[k] == '-') k++;
    if (b - k == 8 && !memcmp(s + k, "Infinity", 8)) return neg ? -INFINITY : INFINITY;
    size_t digits = 0;
    while (k < b && s[k] >= '0' && s[k] <= '9')
        k++, digits++;
    if (k < b && s[k] == '.')
        for (k++; k < b && s[k] >= '0' && s[k] <= '9'; k++)
            digits++;
    if (digits == 0) return NAN;
    if (k < b && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < b && (s[k] == '+' || s[k] == '-')) k++;
        size_t ed = 0;
        while (k < b && s[k] >= '0' && s[k] <= '9')
            k++, ed++;
        if (ed == 0) return NAN;
    }
    if (k != b) return NAN;
    /* the grammar is checked; strtod reads a terminated copy of just s[a..b) (s need not be
     * terminated at n) */
    char small[128], *t = b - a < sizeof small ? small : malloc(b - a + 1);
    if (!t) return NAN;
    memcpy(t, str + a, b - a);
    t[b - a] = '\0';
    double v = ferryx_strtod_c(t, NULL);
    if (t != small) free(t);
    return v;
}
