/* cron.c - cron expressions: a faithful C rendering of cron-parser 5.10.3 (the parser, its
 * CronExpression#findSchedule search, and the luxon DateTime arithmetic that search relies
 * on), so a ferry worker and Node BullMQ compute the same next run to the millisecond,
 * DST quirks included. Where the code looks odd, it is because cron-parser does the same;
 * docs/cron.md lists the behaviours this reproduces. */
#include "sched/cron.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/civil.h"
#include "util/error.h"
#include "util/numtext.h"

enum { F_SECOND, F_MINUTE, F_HOUR, F_DOM, F_MONTH, F_DOW, F_COUNT };

static const struct {
    const char *name;
    int min, max;
    const char *chars; /* characters cron-parser's validChars allows, besides digits */
} SPEC[F_COUNT] = {
    {"second", 0, 59, "?,*/-H"}, {"minute", 0, 59, "?,*/-H"},
    {"hour", 0, 23, "?,*/-H"},   {"day-of-month", 1, 31, "?,*/-HL"},
    {"month", 1, 12, "?,*/-H"},  {"day-of-week", 0, 7, "?,*/-HL"},
};

struct ferry__cron {
    uint64_t set[F_COUNT]; /* bit v: numeric value v listed */
    uint8_t dow_last;      /* weekdays of the "last <weekday> of the month" branch */
    bool dom_wild, dow_wild, dom_has_l, dow_has_l;
    int nth;        /* from d#n: n (1-5); 0 none; -1 a fractional n, which never matches */
    int hour_count; /* number of hours listed; 24 turns cron-parser's DST marks off */
    char text[];
};

static const char *const PREDEFINED[][2] = {
    {"@yearly", "0 0 0 1 1 *"},     {"@annually", "0 0 0 1 1 *"}, {"@monthly", "0 0 0 1 * *"},
    {"@weekly", "0 0 0 * * 0"},     {"@daily", "0 0 0 * * *"},    {"@hourly", "0 0 * * * *"},
    {"@minutely", "0 * * * * *"},   {"@secondly", "* * * * * *"}, {"@weekdays", "0 0 0 * * 1-5"},
    {"@weekends", "0 0 0 * * 0,6"},
};

/* Month names then weekday names; cron-parser resolves both lists in both fields. */
static const char *const ALIASES[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                      "aug", "sep", "oct", "nov", "dec", "sun", "mon",
                                      "tue", "wed", "thu", "fri", "sat"};

static int bad(ferry_error *err, int f, const char *raw, const char *fmt, ...) FERRY_PRINTF(4, 5);
static int bad(ferry_error *err, int f, const char *raw, const char *fmt, ...) {
    char detail[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return ferry__err(err, FERRY_EINVAL, "cron: %s field '%s': %s", SPEC[f].name, raw, detail);
}

static bool is_digit(char ch) {
    return ch >= '0' && ch <= '9';
}

/* JavaScript parseInt(s, 10) on [s, s+n): leading digits, -1 when there are none (NaN).
 * Saturates far above any field maximum. */
static long long js_parse_int(const char *s, size_t n) {
    long long v = 0;
    size_t i = 0;
    for (; i < n && is_digit(s[i]); i++)
        v = v < 1000000000LL ? v * 10 + (s[i] - '0') : v;
    return i ? v : -1;
}

/* JavaScript Number(s) for the n of `d#n`, as cron-parser reads it: the n (1-5), -1 for a
 * value in range with a fraction (it never matches), or 0 when Number(s) is not within 1..5. */
static int js_number_nth(const char *s) {
    double v = ferryx_js_number(s, strlen(s));
    if (!(v >= 1 && v <= 5)) return 0;
    return v == (double)(int)v ? (int)v : -1;
}

/* cron-parser refuses a field that has grown past this many values before its next list
 * element (duplicates count, so only lists with repeats reach it). */
#define FIELD_VALUES_MAX 256

/* The smallest value in a non-empty set. */
static int lowest(uint64_t set) {
    return __builtin_ctzll(set);
}

/* One field being parsed. Numbers above `limit` are kept apart: cron-parser's
 * CronDayOfMonth.fromMonth drops the days a single month does not have before it looks for
 * duplicates, unless that would leave no value at all. */
typedef struct field_acc {
    uint64_t nums;    /* numbers <= limit */
    uint64_t dropped; /* numbers > limit */
    uint64_t strs[2]; /* "L", "dL", "ddL" seen (codes 0..110), to catch duplicates */
    int limit;        /* the field maximum, or the length of the day-of-month's single month */
    int dropped_dup;  /* a number > limit listed twice, or -1 */
    int count;        /* values so far, repeats included (cron-parser's stack length) */
    bool kept;        /* a string or a number <= limit was listed */
    uint8_t last_wdays;
} field_acc;

/* One value as cron-parser's handleResult receives it: a number or an "L" string. */
static int add_value(field_acc *a, int f, const char *raw, const char *v, size_t n,
                     ferry_error *err) {
    if (memchr(v, 'L', n)) { /* kept as a string; valid only as \d{0,2}L */
        bool ok = n <= 3 && v[n - 1] == 'L';
        for (size_t i = 0; ok && i + 1 < n; i++)
            ok = is_digit(v[i]);
        if (!ok) return bad(err, f, raw, "'%.*s' is not L, dL or ddL", (int)n, v);
        if (f == F_DOW && n == 1)
            return bad(err, f, raw, "a standalone L needs a weekday (e.g. 5L)");
        int code = n == 1 ? 0 : n == 2 ? 1 + (v[0] - '0') : 11 + (v[0] - '0') * 10 + (v[1] - '0');
        if (a->strs[code / 64] >> (code % 64) & 1)
            return bad(err, f, raw, "duplicate value %.*s", (int)n, v);
        a->strs[code / 64] |= 1ULL << (code % 64);
        a->count++;
        a->kept = true;
        if (n > 1) a->last_wdays |= (uint8_t)(1u << ((v[0] - '0') % 7));
        return 0;
    }
    long long x = js_parse_int(v, n);
    if (x < SPEC[f].min || x > SPEC[f].max)
        return bad(err, f, raw, "value %.*s out of range %d-%d", (int)n, v, SPEC[f].min,
                   SPEC[f].max);
    if (f == F_DOW) x %= 7;
    a->count++;
    if (x > a->limit) { /* a repeat here only matters if no other value is kept */
        if ((a->dropped >> x & 1) && a->dropped_dup < 0) a->dropped_dup = (int)x;
        a->dropped |= 1ULL << x;
        return 0;
    }
    if (a->nums >> x & 1) return bad(err, f, raw, "duplicate value %lld", x);
    a->nums |= 1ULL << x;
    a->kept = true;
    a->last_wdays |= (uint8_t)(1u << (x % 7));
    return 0;
}

/* cron-parser's parseRange + createRange for "a-b[-...]" with a step. */
static int add_range(field_acc *a, int f, const char *raw, const char *v, size_t n, long long step,
                     ferry_error *err) {
    const char *dash = memchr(v, '-', n);
    const char *p1 = dash + 1;
    const char *dash2 = memchr(p1, '-', (size_t)(v + n - p1));
    long long lo = js_parse_int(v, (size_t)(dash - v));
    long long hi = js_parse_int(p1, (size_t)((dash2 ? dash2 : v + n) - p1));
    if (lo < 0 || hi < 0 || lo < SPEC[f].min || hi > SPEC[f].max)
        return bad(err, f, raw, "range '%.*s' outside %d-%d", (int)n, v, SPEC[f].min, SPEC[f].max);
    if (lo > hi) return bad(err, f, raw, "range '%.*s' has min > max", (int)n, v);
    if (step <= 0) return bad(err, f, raw, "step must be a positive number");
    uint64_t vals = 0;
    if (f == F_DOW && hi % 7 == 0 && (hi - lo) % step == 0) vals |= 1; /* Sunday as 0 too */
    for (long long i = lo; i <= hi; i += step)
        vals |= 1ULL << i;
    a->count += __builtin_popcountll(vals);
    uint64_t high = vals & ~((2ULL << a->limit) - 1); /* limit <= 59 */
    if ((a->dropped & high) && a->dropped_dup < 0) a->dropped_dup = lowest(a->dropped & high);
    a->dropped |= high;
    vals &= ~high;
    if (a->nums & vals) return bad(err, f, raw, "range '%.*s' repeats a value", (int)n, v);
    a->nums |= vals;
    a->kept = a->kept || vals != 0;
    for (int i = 0; i <= 7; i++)
        if (vals >> i & 1) a->last_wdays |= (uint8_t)(1u << (i % 7));
    return 0;
}

static bool is_alpha(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* Room for a field after rewriting: the validated text is ASCII, at most
 * FERRY_CRON_EXPR_MAX characters, and `*` grows into at most 4 ("0-59"). */
#define FIELD_BUF (4 * FERRY_CRON_EXPR_MAX + 8)

typedef struct scratch {
    char copy[FIELD_BUF], dow[FIELD_BUF], named[FIELD_BUF], expanded[FIELD_BUF], left[FIELD_BUF];
} scratch;

/* Rewrite the field as cron-parser does before splitting it: names to numbers (month and
 * day-of-week; /[a-z]{3}/gi, so "friL" is "5L" and "sunday" fails on "day"), then each `*`
 * or `?` to "min-max" - textually, so "5*" becomes "50-59" exactly as in cron-parser. */
static int rewrite_field(int f, const char *raw, scratch *s, ferry_error *err) {
    char *o = s->named;
    for (const char *p = raw; *p;) {
        if (!(f == F_MONTH || f == F_DOW) || !is_alpha(*p)) {
            *o++ = *p++;
            continue;
        }
        size_t run = 0;
        while (is_alpha(p[run]))
            run++;
        for (; run >= 3; run -= 3, p += 3) {
            int k = 0;
            while (k < 19 && !((p[0] | 32) == ALIASES[k][0] && (p[1] | 32) == ALIASES[k][1] &&
                               (p[2] | 32) == ALIASES[k][2]))
                k++;
            if (k == 19) return bad(err, f, raw, "unknown name '%.3s'", p);
            o += sprintf(o, "%d", k < 12 ? k + 1 : k - 12);
        }
        for (; run > 0; run--)
            *o++ = *p++;
    }
    *o = '\0';
    if (!*s->named) return bad(err, f, raw, "empty field");
    for (const char *p = s->named; *p; p++)
        if (!is_digit(*p) && !strchr(SPEC[f].chars, *p))
            return bad(err, f, raw, "invalid character '%c'", *p);
    if (strchr(s->named, 'H')) return bad(err, f, raw, "hashed values (H) are not supported");
    o = s->expanded;
    for (const char *p = s->named; *p; p++) {
        if (*p == '*' || *p == '?')
            o += sprintf(o, "%d-%d", SPEC[f].min, SPEC[f].max);
        else
            *o++ = *p;
    }
    *o = '\0';
    return 0;
}

/* Parse one field into *a; numbers above `limit` are set aside as described at field_acc. */
static int parse_field(int f, const char *raw, int limit, field_acc *a, scratch *s,
                       ferry_error *err) {
    memset(a, 0, sizeof *a);
    a->limit = limit;
    a->dropped_dup = -1;
    int rc = rewrite_field(f, raw, s, err);
    if (rc) return rc;
    for (char *atom = s->expanded, *next; atom; atom = next) {
        if (a->count > FIELD_VALUES_MAX)
            return bad(err, f, raw, "more than %d values", FIELD_VALUES_MAX);
        char *comma = strchr(atom, ',');
        next = comma ? comma + 1 : NULL;
        size_t n = comma ? (size_t)(comma - atom) : strlen(atom);
        if (n == 0) return bad(err, f, raw, "empty list element");
        char *slash = memchr(atom, '/', n);
        if (slash && memchr(slash + 1, '/', n - (size_t)(slash + 1 - atom)))
            return bad(err, f, raw, "more than one '/' in '%.*s'", (int)n, atom);
        if (slash) { /* a/n means a-max/n */
            long long step = js_parse_int(slash + 1, n - (size_t)(slash + 1 - atom));
            size_t ln = (size_t)(slash - atom);
            memcpy(s->left, atom, ln);
            if (!memchr(atom, '-', ln)) ln += (size_t)sprintf(s->left + ln, "-%d", SPEC[f].max);
            rc = add_range(a, f, raw, s->left, ln, step, err);
        } else if (memchr(atom, '-', n)) {
            rc = add_range(a, f, raw, atom, n, 1, err);
        } else {
            rc = add_value(a, f, raw, atom, n, err);
        }
        if (rc) return rc;
    }
    if (!a->kept) { /* every value was above the limit: cron-parser keeps them all */
        if (a->dropped_dup >= 0) return bad(err, f, raw, "duplicate value %d", a->dropped_dup);
        a->nums = a->dropped;
    }
    return 0;
}

/* Split `text` (in s->copy) on whitespace into at most 6 fields; 0 or -1 (too many). */
static int split_fields(scratch *s, const char *text, char *fields[6], int *nf) {
    *nf = 0;
    strcpy(s->copy, text);
    for (char *p = s->copy; *p;) {
        size_t sp = ferryx_js_space(p, strnlen(p, 3));
        if (sp) {
            *p = '\0';
            p += sp;
            continue;
        }
        if (*nf == 6) return -1;
        fields[(*nf)++] = p;
        while (*p && !ferryx_js_space(p, strnlen(p, 3)))
            p++;
    }
    return 0;
}

/* The day-of-week field's `d#n`: sets c->nth and points *dow at the d part. */
static int parse_nth(ferry__cron *c, const char **dow, scratch *s, ferry_error *err) {
    const char *r = *dow, *hash = strchr(r, '#');
    if (!hash) return 0;
    if (strpbrk(r, ",-/")) return bad(err, F_DOW, r, "'#' cannot be combined with ',', '-' or '/'");
    c->nth = strchr(hash + 1, '#') ? 0 : js_number_nth(hash + 1);
    if (c->nth == 0) return bad(err, F_DOW, r, "the n of 'd#n' must be 1-5");
    memcpy(s->dow, r, (size_t)(hash - r));
    s->dow[hash - r] = '\0';
    *dow = s->dow;
    return 0;
}

static int parse_into(ferry__cron *c, const char *expr, scratch *s, ferry_error *err) {
    const char *text = expr;
    for (size_t i = 0; i < sizeof PREDEFINED / sizeof PREDEFINED[0]; i++)
        if (strcmp(expr, PREDEFINED[i][0]) == 0) text = PREDEFINED[i][1];
    char *fields[6];
    int nf;
    if (split_fields(s, text, fields, &nf) != 0)
        return ferry__err(err, FERRY_EINVAL, "cron: too many fields in '%s' (at most 6)", expr);
    if (nf == 0) return ferry__err(err, FERRY_EINVAL, "cron: empty expression");
    /* Fewer than 6 fields are completed from the left with "0 * * * * *" (cron-parser). */
    static const char *const defaults[6] = {"0", "*", "*", "*", "*", "*"};
    const char *raw[F_COUNT]; /* indexed by field: the F_ order is the text order */
    for (int i = 0; i < 6; i++)
        raw[i] = i < 6 - nf ? defaults[i] : fields[i - (6 - nf)];
    /* cron-parser's order: the month comes before the day of month, which depends on it. */
    static const int order[F_COUNT] = {F_SECOND, F_MINUTE, F_HOUR, F_MONTH, F_DOM, F_DOW};
    static const int dim[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    field_acc acc[F_COUNT];
    for (int i = 0; i < F_COUNT; i++) {
        int f = order[i], rc, limit = SPEC[f].max;
        const char *r = raw[f];
        uint64_t mo = c->set[F_MONTH];
        if (f == F_DOM && mo && (mo & (mo - 1)) == 0) limit = dim[lowest(mo)]; /* Feb: 29 */
        if (f == F_DOW && (rc = parse_nth(c, &r, s, err)) != 0) return rc;
        if ((rc = parse_field(f, r, limit, &acc[f], s, err)) != 0) return rc;
        c->set[f] = acc[f].nums;
    }
    c->dom_wild = !strcmp(raw[3], "*") || !strcmp(raw[3], "?");
    c->dow_wild = !strcmp(raw[5], "*") || !strcmp(raw[5], "?");
    c->dom_has_l = strchr(raw[3], 'L') != NULL;
    c->dow_has_l = strchr(raw[5], 'L') != NULL; /* raw text: "JUL" counts, as in cron-parser */
    c->dow_last = acc[F_DOW].last_wdays;
    c->hour_count = __builtin_popcountll(c->set[F_HOUR]);
    /* cron-parser refuses a single month whose listed days never occur (Feb counts 29). */
    uint64_t mo = c->set[F_MONTH], dom = c->set[F_DOM];
    if ((mo & (mo - 1)) == 0 && !c->dom_has_l && c->dow_wild && dom &&
        __builtin_ctzll(dom) > dim[__builtin_ctzll(mo)])
        return bad(err, F_DOM, raw[3], "no listed day exists in month %d", __builtin_ctzll(mo));
    return 0;
}

int ferry__cron_parse(const char *expr, ferry__cron **out, ferry_error *err) {
    *out = NULL;
    if (!expr) return ferry__err(err, FERRY_EINVAL, "cron: expression is NULL");
    size_t len = strnlen(expr, 4 * FERRY_CRON_EXPR_MAX + 1), units = 0;
    for (size_t i = 0; i < len; i++) /* UTF-16 units: one per character, two above U+FFFF */
        units +=
            ((unsigned char)expr[i] & 0xC0) != 0x80 ? 1u + ((unsigned char)expr[i] >= 0xF0) : 0u;
    if (units > FERRY_CRON_EXPR_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "cron: expression longer than %d characters",
                          FERRY_CRON_EXPR_MAX);
    ferry__cron *c = calloc(1, sizeof *c + len + 1);
    scratch *s = malloc(sizeof *s);
    if (!c || !s) {
        free(c);
        free(s);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    memcpy(c->text, expr, len + 1);
    int rc = parse_into(c, expr, s, err);
    free(s);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void ferry__cron_free(ferry__cron *c) {
    free(c);
}

const char *ferry__cron_text(const ferry__cron *c) {
    return c->text;
}

/* ---- luxon DateTime arithmetic, as cron-parser's CronDate uses it ----
 * A DateTime is its UTC millis `ts`; its wall fields are ts + offset(ts). Setting wall
 * fields goes through luxon's fixOffset, whose guess is the current offset: that choice
 * decides which copy of a repeated time wins, and moves skipped times forward. */

typedef struct wall {
    int64_t year;
    int month, day, hour, minute, second, ms;
} wall;

typedef struct cdate {
    long long ts;
    int dst_start, dst_landing, dst_end; /* -1 = null */
} cdate;

static long long fdiv(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static long long off_ms(const ferry__tz *z, long long ts) {
    return (long long)ferry__tz_offset(z, fdiv(ts, 1000)) * 1000;
}

static wall wall_of(const ferry__tz *z, long long ts) {
    long long local = ts + off_ms(z, ts), days = fdiv(local, 86400000),
              rem = local - days * 86400000;
    wall w;
    ferry__civil_from_days(days, &w.year, &w.month, &w.day);
    w.hour = (int)(rem / 3600000);
    w.minute = (int)(rem / 60000 % 60);
    w.second = (int)(rem / 1000 % 60);
    w.ms = (int)(rem % 1000);
    return w;
}

/* Date.UTC(y, month0, day, ...) with its overflow normalisation. */
static long long local_ms(long long y, long long month0, long long day, const wall *w) {
    y += fdiv(month0, 12);
    month0 -= fdiv(month0, 12) * 12;
    long long days = ferry__days_from_civil(y, (int)month0 + 1, 1) + day - 1;
    return days * 86400000 + w->hour * 3600000LL + w->minute * 60000LL + w->second * 1000LL + w->ms;
}

/* luxon fixOffset: UTC millis for a wall time, guessing offset o first. */
static long long fix_offset(const ferry__tz *z, long long local, long long o) {
    long long guess = local - o, o2 = off_ms(z, guess);
    if (o == o2) return guess;
    guess -= o2 - o;
    long long o3 = off_ms(z, guess);
    if (o2 == o3) return guess;
    return local - (o2 < o3 ? o2 : o3); /* in a gap: keep the wall time, larger offset */
}

static void set_wall(const ferry__tz *z, cdate *d, const wall *w) {
    d->ts = fix_offset(z, local_ms(w->year, w->month - 1, w->day, w), off_ms(z, d->ts));
}

enum { SET_HOUR, SET_MINUTE, SET_SECOND, SET_MS };

static void set_unit(const ferry__tz *z, cdate *d, int unit, int v) {
    wall w = wall_of(z, d->ts);
    if (unit == SET_HOUR)
        w.hour = v;
    else if (unit == SET_MINUTE)
        w.minute = v;
    else if (unit == SET_SECOND)
        w.second = v;
    else
        w.ms = v;
    set_wall(z, d, &w);
}

/* plus({days: 1}) or plus({months: 1}), then startOf('day' / 'month'). */
static void plus_calendar(const ferry__tz *z, cdate *d, bool month) {
    wall w = wall_of(z, d->ts);
    long long o = off_ms(z, d->ts);
    if (month) {
        int m2 = w.month == 12 ? 1 : w.month + 1;
        int dim = ferry__days_in_month(w.month == 12 ? w.year + 1 : w.year, m2);
        d->ts = fix_offset(z, local_ms(w.year, w.month, w.day < dim ? w.day : dim, &w), o);
    } else {
        d->ts = fix_offset(z, local_ms(w.year, w.month - 1, w.day + 1, &w), o);
    }
    w = wall_of(z, d->ts);
    if (month) w.day = 1;
    w.hour = w.minute = w.second = w.ms = 0;
    set_wall(z, d, &w);
}

enum { U_MONTH, U_DAY, U_HOUR, U_MINUTE, U_SECOND };

/* CronDate#applyDateOperation(Add, unit, hoursLength) with its DST bookkeeping. */
static void add_unit(const ferry__tz *z, cdate *d, int unit, int hour_count) {
    if (unit == U_MONTH || unit == U_DAY) {
        plus_calendar(z, d, unit == U_MONTH);
        return;
    }
    wall before = wall_of(z, d->ts);
    long long prev_off = off_ms(z, d->ts);
    if (unit == U_SECOND) {
        d->ts += 1000;
    } else { /* plus, then startOf('hour' / 'minute') */
        d->ts += unit == U_HOUR ? 3600000 : 60000;
        wall w = wall_of(z, d->ts);
        if (unit == U_HOUR) w.minute = 0;
        w.second = w.ms = 0;
        set_wall(z, d, &w);
    }
    wall after = wall_of(z, d->ts);
    int advance = (after.hour - before.hour + 24) % 24;
    if (off_ms(z, d->ts) > prev_off && advance >= 2) {
        if (hour_count != 24) {
            d->dst_start = (before.hour + 1) % 24;
            d->dst_landing = after.hour;
        }
    } else if (advance == 0 && after.minute == 0 && after.second == 0) {
        if (hour_count != 24) d->dst_end = after.hour;
    }
}

/* ---- CronExpression#findSchedule, forward only ---- */

static bool has(uint64_t set, int v) {
    return v >= 0 && v < 64 && (set >> v & 1);
}

/* Smallest listed value greater than v, or -1. */
static int next_above(uint64_t set, int v) {
    uint64_t higher = v >= 63 ? 0 : set & ~((2ULL << v) - 1);
    return higher ? __builtin_ctzll(higher) : -1;
}

static bool day_matches(const ferry__cron *c, const wall *w) {
    int dim = ferry__days_in_month(w->year, w->month);
    int wday =
        (int)((ferry__days_from_civil(w->year, w->month, w->day) % 7 + 11) % 7); /* 0 = Sunday */
    bool dom = has(c->set[F_DOM], w->day) || (c->dom_has_l && w->day == dim);
    bool dow = (has(c->set[F_DOW], wday) && (c->nth == 0 || (w->day + 6) / 7 == c->nth)) ||
               (c->dow_has_l && w->day > dim - 7 && (c->dow_last >> wday & 1));
    if (!c->dom_wild && !c->dow_wild) return dom || dow;
    if (dom && c->dow_wild) return true;
    return c->dom_wild && !c->dow_wild && dow;
}

static bool dst_change_day(const ferry__tz *z, const cdate *d) {
    cdate start = *d, end = *d;
    set_unit(z, &start, SET_HOUR, 0);
    wall w = wall_of(z, start.ts);
    w.minute = w.second = w.ms = 0;
    set_wall(z, &start, &w);
    plus_calendar(z, &end, false); /* endOf('day') = next day's start - 1 ms */
    return off_ms(z, start.ts) != off_ms(z, end.ts - 1);
}

static bool hour_matches(const ferry__cron *c, const ferry__tz *z, cdate *d) {
    uint64_t hours = c->set[F_HOUR];
    int cur = wall_of(z, d->ts).hour;
    bool is_dst_end = d->dst_end == cur;
    if (d->dst_start >= 0 && d->dst_landing == cur) { /* a listed hour fell in the gap */
        for (int h = d->dst_start; h != cur; h = (h + 1) % 24)
            if (has(hours, h)) return true;
    }
    if (is_dst_end) { /* second copy of a repeated hour: skip it */
        d->dst_end = -1;
        add_unit(z, d, U_HOUR, c->hour_count);
        return false;
    }
    if (has(hours, cur)) return true;
    d->dst_start = d->dst_landing = -1;
    int next = next_above(hours, cur);
    if (next < 0) {
        add_unit(z, d, U_DAY, c->hour_count);
        return false;
    }
    if (dst_change_day(z, d)) { /* step hour by hour so the DST marks get set */
        for (int i = 0; i < next - cur; i++) {
            add_unit(z, d, U_HOUR, c->hour_count);
            if (wall_of(z, d->ts).hour >= next) break;
        }
    } else {
        set_unit(z, d, SET_HOUR, next);
    }
    set_unit(z, d, SET_MINUTE, lowest(c->set[F_MINUTE]));
    set_unit(z, d, SET_SECOND, lowest(c->set[F_SECOND]));
    return false;
}

int ferry__cron_next_in(const ferry__cron *c, const ferry__tz *z, long long after_ms,
                        long long *next_ms, ferry_error *err) {
    if (!c || !z || !next_ms) return ferry__err(err, FERRY_EINVAL, "cron: NULL argument");
    if (after_ms < FERRY_CRON_MS_MIN || after_ms > FERRY_CRON_MS_MAX)
        return ferry__err(err, FERRY_EINVAL, "cron: start time %lld outside %lld..%lld", after_ms,
                          FERRY_CRON_MS_MIN, FERRY_CRON_MS_MAX);
    cdate d = {after_ms, -1, -1, -1};
    if (wall_of(z, d.ts).ms > 0) {
        set_unit(z, &d, SET_MS, 0);
        add_unit(z, &d, U_SECOND, c->hour_count);
    }
    int steps = 0;
    while (++steps < FERRY_CRON_SEARCH_STEPS) {
        wall w = wall_of(z, d.ts);
        if (!has(c->set[F_MONTH], w.month)) {
            add_unit(z, &d, U_MONTH, c->hour_count);
        } else if (!day_matches(c, &w)) {
            add_unit(z, &d, U_DAY, c->hour_count);
        } else if (!hour_matches(c, z, &d)) {
            continue;
        } else if (!has(c->set[F_MINUTE], (w = wall_of(z, d.ts)).minute)) {
            int m = next_above(c->set[F_MINUTE], w.minute);
            if (m < 0) {
                add_unit(z, &d, U_HOUR, c->hour_count);
                m = lowest(c->set[F_MINUTE]);
            }
            set_unit(z, &d, SET_MINUTE, m);
            set_unit(z, &d, SET_SECOND, lowest(c->set[F_SECOND]));
        } else if (!has(c->set[F_SECOND], w.second)) {
            int s = next_above(c->set[F_SECOND], w.second);
            if (s < 0) {
                add_unit(z, &d, U_MINUTE, c->hour_count);
                s = lowest(c->set[F_SECOND]);
            }
            set_unit(z, &d, SET_SECOND, s);
        } else if (d.ts == after_ms) {
            add_unit(z, &d, U_SECOND, c->hour_count);
        } else {
            break;
        }
    }
    if (steps >= FERRY_CRON_SEARCH_STEPS)
        return ferry__err(err, FERRY_ENOTFOUND, "cron: no time matches '%s' (search limit reached)",
                          c->text);
    *next_ms = d.ts;
    return 0;
}

int ferry__cron_next(const ferry__cron *c, const char *tz, long long after_ms, long long *next_ms,
                     ferry_error *err) {
    ferry__tz *z;
    int rc = ferry__tz_open(tz, &z, err);
    if (rc) return rc;
    rc = ferry__cron_next_in(c, z, after_ms, next_ms, err);
    ferry__tz_close(z);
    return rc;
}
