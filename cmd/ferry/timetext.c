/* timetext.c - the CLI's durations and timestamps (timetext.h). */
#include "timetext.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_AGE_S (100LL * 365 * 86400)

long long cli_duration_s(const char *s) {
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    long long n = strtoll(s, &end, 10);
    if (errno || end == s || !end[0] || end[1]) return -1;
    long long mul = end[0] == 's'   ? 1
                    : end[0] == 'm' ? 60
                    : end[0] == 'h' ? 3600
                    : end[0] == 'd' ? 86400
                                    : 0;
    if (!mul || n > MAX_AGE_S / mul) return -1;
    return n * mul;
}

/* n digits at s into *v; returns the position after them or NULL. */
static const char *digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return NULL;
        *v = *v * 10 + (s[i] - '0');
    }
    return s + n;
}

int cli_time_ms(const char *s, long long now_ms, long long *out) {
    if (!s || !*s) return -1;
    long long ago = cli_duration_s(s);
    if (ago >= 0) {
        *out = now_ms - ago * 1000;
        return *out > 0 ? 0 : -1;
    }
    int Y, M, D, h = 0, m = 0, sec = 0;
    const char *p = digits(s, 4, &Y);
    if (!p || *p++ != '-' || !(p = digits(p, 2, &M)) || *p++ != '-' || !(p = digits(p, 2, &D)))
        return -1;
    long long frac_ms = 0, offset_s = 0;
    if (*p == 'T' || *p == 't' || *p == ' ') {
        p++;
        if (!(p = digits(p, 2, &h)) || *p++ != ':' || !(p = digits(p, 2, &m)) || *p++ != ':' ||
            !(p = digits(p, 2, &sec)))
            return -1;
        if (*p == '.') {
            p++;
            int nd = 0;
            long long scale = 100;
            while (*p >= '0' && *p <= '9') {
                if (nd < 3) frac_ms += (*p - '0') * scale, scale /= 10;
                nd++;
                p++;
            }
            if (nd == 0) return -1;
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p++ == '-' ? -1 : 1, oh, om;
            if (!(p = digits(p, 2, &oh)) || *p++ != ':' || !(p = digits(p, 2, &om)) || oh > 23 ||
                om > 59)
                return -1;
            offset_s = sign * (oh * 3600LL + om * 60LL);
        } else {
            return -1; /* a time without a zone would be read in an unknown one */
        }
    }
    if (*p) return -1;
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60 || Y < 1970) return -1;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != D) return -1; /* 2026-02-31 */
    *out = ((long long)t - offset_s) * 1000 + frac_ms;
    return *out > 0 ? 0 : -1;
}

const char *cli_utc_text(long long ms, char *buf, size_t cap) {
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

const char *cli_age_text(long long ms, char *buf, size_t cap) {
    double s = ms < 0 ? 0 : (double)ms / 1000;
    if (s < 120)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1f min", s / 60);
    else if (s < 172800)
        snprintf(buf, cap, "%.1f h", s / 3600);
    else
        snprintf(buf, cap, "%.1f d", s / 86400);
    return buf;
}
