/* httpdate.c - HTTP-date parsing (RFC 9110 §5.6.7); see httpdate.h.
 *
 * A small cursor over a length-bounded buffer, one function per format. Each format must
 * consume the whole input, so trailing bytes or a NUL inside the text reject the date. */
#include "util/httpdate.h"

#include <string.h>

#define MS_PER_DAY 86400000LL

typedef struct cursor {
    const char *p, *end;
} cursor;

static int lit(cursor *c, const char *s) {
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* Exactly n ASCII digits (n <= 4). */
static int digits(cursor *c, int n, int *out) {
    if (c->end - c->p < n) return 0;
    int v = 0;
    for (int i = 0; i < n; i++) {
        char ch = c->p[i];
        if (ch < '0' || ch > '9') return 0;
        v = v * 10 + (ch - '0');
    }
    c->p += n;
    *out = v;
    return 1;
}

/* One of `count` names, matched case-sensitively; writes its index. */
static int name(cursor *c, const char *const *names, int count, int *out) {
    for (int i = 0; i < count; i++) {
        if (lit(c, names[i])) {
            *out = i;
            return 1;
        }
    }
    return 0;
}

static const char *const day_short[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const char *const day_long[] = {"Monday", "Tuesday",  "Wednesday", "Thursday",
                                       "Friday", "Saturday", "Sunday"};
static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

static int month(cursor *c, int *m) {
    if (!name(c, months, 12, m)) return 0;
    *m += 1;
    return 1;
}

typedef struct fields {
    int year, month, day, hour, minute, second;
} fields;

/* time-of-day = hour ":" minute ":" second */
static int time_of_day(cursor *c, fields *f) {
    return digits(c, 2, &f->hour) && lit(c, ":") && digits(c, 2, &f->minute) && lit(c, ":") &&
           digits(c, 2, &f->second);
}

/* "Sun, 06 Nov 1994 08:49:37 GMT" */
static int imf_fixdate(cursor *c, fields *f) {
    int wd;
    return name(c, day_short, 7, &wd) && lit(c, ", ") && digits(c, 2, &f->day) && lit(c, " ") &&
           month(c, &f->month) && lit(c, " ") && digits(c, 4, &f->year) && lit(c, " ") &&
           time_of_day(c, f) && lit(c, " GMT") && c->p == c->end;
}

/* "Sunday, 06-Nov-94 08:49:37 GMT"; f->year gets the two digits, resolved by the caller. */
static int rfc850_date(cursor *c, fields *f) {
    int wd;
    return name(c, day_long, 7, &wd) && lit(c, ", ") && digits(c, 2, &f->day) && lit(c, "-") &&
           month(c, &f->month) && lit(c, "-") && digits(c, 2, &f->year) && lit(c, " ") &&
           time_of_day(c, f) && lit(c, " GMT") && c->p == c->end;
}

/* "Sun Nov  6 08:49:37 1994" or "Sun Nov 06 08:49:37 1994" (date3's 2DIGIT / SP DIGIT) */
static int asctime_date(cursor *c, fields *f) {
    int wd;
    if (!(name(c, day_short, 7, &wd) && lit(c, " ") && month(c, &f->month) && lit(c, " ")))
        return 0;
    if (!(lit(c, " ") ? digits(c, 1, &f->day) : digits(c, 2, &f->day))) return 0;
    return lit(c, " ") && time_of_day(c, f) && lit(c, " ") && digits(c, 4, &f->year) &&
           c->p == c->end;
}

/* RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is the most recent
 * past year with those digits. Picks the year ≡ yy (mod 100) in (now_year-50, now_year+50]. */
static int64_t resolve_two_digit_year(int yy, int64_t now_ms) {
    int64_t now_year = ferry__year_from_days(now_ms / MS_PER_DAY);
    int64_t y = now_year - now_year % 100 + yy;
    if (y > now_year + 50)
        y -= 100;
    else if (y <= now_year - 50)
        y += 100;
    return y;
}

static int valid(const fields *f) {
    if (f->month < 1 || f->month > 12 || f->day < 1) return 0;
    int dim = ferry__days_in_month(f->year, f->month);
    return f->day <= dim && f->hour <= 23 && f->minute <= 59 && f->second <= 60;
}

int ferry__httpdate_parse(const char *s, size_t len, int64_t now_ms, int64_t *out_ms) {
    if (!s || !out_ms) return -1;
    fields f = {0};
    cursor c = {s, s + len};
    if (!imf_fixdate(&c, &f)) {
        c.p = s;
        if (!asctime_date(&c, &f)) {
            c.p = s;
            if (!rfc850_date(&c, &f)) return -1;
            if (now_ms < 0 || now_ms > FERRY_HTTPDATE_MAX_MS) return -1;
            int64_t y = resolve_two_digit_year(f.year, now_ms);
            if (y > 9999) return -1; /* keeps the FERRY_HTTPDATE_MAX_MS bound */
            f.year = (int)y;
        }
    }
    if (!valid(&f)) return -1;
    int64_t days = ferry__days_from_civil(f.year, f.month, f.day);
    int64_t secs = (int64_t)f.hour * 3600 + f.minute * 60 + f.second;
    *out_ms = days * MS_PER_DAY + secs * 1000;
    return 0;
}
