/* tz.c - UTC offsets of time zones from TZif files and POSIX TZ rules (see tz.h for why
 * we read the system tz database instead of using ICU, and how names are resolved). */
#include "sched/tz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/civil.h"
#include "util/error.h"

#define DEFAULT_TZDIR "/usr/share/zoneinfo"
#define CACHE_MAX 256
/* Real files have < 2000 transitions; this bounds memory for a hostile file. */
#define TZIF_MAX_TRANSITIONS 50000
/* |UTC offset| allowed in TZif types and POSIX rules, a little over RFC 8536's 25 h. */
#define OFFSET_MAX (26L * 3600)

typedef struct rule_date {
    char kind; /* 'J' (1-365, no Feb 29), 'N' (0-365), 'M' (month.week.weekday) */
    int n, month, week, wday;
    long secs; /* local time of day of the change, may be negative or > 24 h */
} rule_date;

typedef struct posix_rule {
    long std_off, dst_off; /* seconds east of UTC */
    int has_dst;
    rule_date start, end;
} posix_rule;

struct ferry__tz {
    atomic_int refs;
    int is_static;
    size_t count;     /* transitions */
    long long *times; /* ascending UTC seconds */
    long *offsets;    /* offset in force from times[i] on */
    long initial;     /* before the first transition (time type 0) */
    int has_rule;     /* footer rule for times from the last transition on */
    posix_rule rule;
};

/* ASCII classes: the <ctype.h> ones follow the caller's locale. */
static int is_digit(int ch) {
    return ch >= '0' && ch <= '9';
}

static int is_alpha(int ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int is_alnum(int ch) {
    return is_digit(ch) || is_alpha(ch);
}

static int to_lower(int ch) {
    return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

static ferry__tz utc_zone = {.refs = 1, .is_static = 1};

ferry__tz *ferry__tz_utc(void) {
    return &utc_zone;
}

static ferry__tz *tz_new(void) {
    ferry__tz *tz = calloc(1, sizeof *tz);
    if (tz) atomic_init(&tz->refs, 1);
    return tz;
}

static ferry__tz *tz_ref(ferry__tz *tz) {
    if (!tz->is_static) atomic_fetch_add(&tz->refs, 1);
    return tz;
}

void ferry__tz_close(ferry__tz *tz) {
    if (!tz || tz->is_static) return;
    if (atomic_fetch_sub(&tz->refs, 1) != 1) return;
    free(tz->times);
    free(tz->offsets);
    free(tz);
}

/* ---- calendar arithmetic (proleptic Gregorian, any year) ---- */

static long long floor_div(long long a, long long b) {
    long long q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static long long year_of_days(long long z) {
    return (long long)ferry__year_from_days(z);
}

/* ---- POSIX TZ rules ---- */

/* Zero-based day of the year on which `d` falls in year y. */
static long long rule_yday(const rule_date *d, long long y) {
    if (d->kind == 'J') return d->n - 1 + (ferry__is_leap_year(y) && d->n >= 60);
    if (d->kind == 'N') return d->n;
    long long first = ferry__days_from_civil(y, d->month, 1);
    int wday1 = (int)((first % 7 + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
    int day = 1 + (d->wday - wday1 + 7) % 7 + (d->week - 1) * 7;
    while (day > ferry__days_in_month(y, d->month))
        day -= 7;
    return ferry__days_from_civil(y, d->month, day) - ferry__days_from_civil(y, 1, 1);
}

static long long rule_change_utc(const rule_date *d, long long y, long off_before) {
    return (ferry__days_from_civil(y, 1, 1) + rule_yday(d, y)) * 86400 + d->secs - off_before;
}

static long posix_offset(const posix_rule *r, long long t) {
    if (!r->has_dst) return r->std_off;
    long long y = year_of_days(floor_div(t + r->std_off, 86400));
    long long s = rule_change_utc(&r->start, y, r->std_off);
    long long e = rule_change_utc(&r->end, y, r->dst_off);
    int dst = s < e ? (t >= s && t < e) : !(t >= e && t < s);
    return dst ? r->dst_off : r->std_off;
}

static const char *parse_abbr(const char *p) {
    const char *s = p;
    if (*p == '<') {
        for (p++; is_alnum(*p) || *p == '+' || *p == '-'; p++) {
        }
        if (*p != '>' || p - s - 1 < 3) return NULL;
        return p + 1;
    }
    while (is_alpha(*p))
        p++;
    return p - s >= 3 ? p : NULL;
}

/* [+-]h[h[h]][:mm[:ss]] with hours <= max_hours; *secs gets the signed value. */
static const char *parse_hms(const char *p, int max_hours, long *secs) {
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (!is_digit(*p)) return NULL;
    long h = 0, ms[2] = {0, 0}; /* minutes, seconds */
    for (int i = 0; i < 3 && is_digit(*p); i++)
        h = h * 10 + (*p++ - '0');
    if (is_digit(*p) || h > max_hours) return NULL;
    for (int i = 0; i < 2 && *p == ':'; i++) {
        p++;
        if (!is_digit(p[0]) || !is_digit(p[1])) return NULL;
        ms[i] = (p[0] - '0') * 10 + (p[1] - '0');
        if (ms[i] > 59) return NULL;
        p += 2;
    }
    *secs = (h * 3600 + ms[0] * 60 + ms[1]) * (neg ? -1 : 1);
    return p;
}

static const char *parse_num(const char *p, int lo, int hi, int *out) {
    if (!is_digit(*p)) return NULL;
    int v = 0;
    for (int i = 0; i < 3 && is_digit(*p); i++)
        v = v * 10 + (*p++ - '0');
    if (is_digit(*p) || v < lo || v > hi) return NULL;
    *out = v;
    return p;
}

static const char *parse_rule_date(const char *p, rule_date *d) {
    memset(d, 0, sizeof *d);
    if (*p == 'J') {
        d->kind = 'J';
        p = parse_num(p + 1, 1, 365, &d->n);
    } else if (*p == 'M') {
        d->kind = 'M';
        p = parse_num(p + 1, 1, 12, &d->month);
        if (p && *p == '.')
            p = parse_num(p + 1, 1, 5, &d->week);
        else
            p = NULL;
        if (p && *p == '.')
            p = parse_num(p + 1, 0, 6, &d->wday);
        else
            p = NULL;
    } else {
        d->kind = 'N';
        p = parse_num(p, 0, 365, &d->n);
    }
    if (!p) return NULL;
    d->secs = 7200;
    if (*p == '/') p = parse_hms(p + 1, 167, &d->secs);
    return p;
}

static int posix_parse(const char *spec, posix_rule *r) {
    memset(r, 0, sizeof *r);
    long v;
    const char *p = parse_abbr(spec);
    if (!p || !(p = parse_hms(p, 24, &v))) return -1;
    r->std_off = -v; /* POSIX counts west of Greenwich as positive */
    if (!*p) return 0;
    if (!(p = parse_abbr(p))) return -1;
    r->has_dst = 1;
    r->dst_off = r->std_off + 3600;
    if (*p && *p != ',') {
        if (!(p = parse_hms(p, 24, &v))) return -1;
        r->dst_off = -v;
    }
    if (!*p) { /* no dates: the US rule, as glibc assumes */
        r->start = (rule_date){.kind = 'M', .month = 3, .week = 2, .wday = 0, .secs = 7200};
        r->end = (rule_date){.kind = 'M', .month = 11, .week = 1, .wday = 0, .secs = 7200};
        return 0;
    }
    if (*p != ',' || !(p = parse_rule_date(p + 1, &r->start))) return -1;
    if (*p != ',' || !(p = parse_rule_date(p + 1, &r->end))) return -1;
    return *p ? -1 : 0;
}

int ferry__tz_from_posix(const char *spec, ferry__tz **out, ferry_error *err) {
    *out = NULL;
    if (!spec) return ferry__err(err, FERRY_EINVAL, "time zone rule is NULL");
    if (strlen(spec) > FERRY_TZ_POSIX_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "time zone rule longer than %d bytes",
                          FERRY_TZ_POSIX_MAX);
    posix_rule r;
    if (posix_parse(spec, &r) != 0)
        return ferry__err(err, FERRY_EINVAL, "malformed POSIX time zone rule '%s'", spec);
    ferry__tz *tz = tz_new();
    if (!tz) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    tz->has_rule = 1;
    tz->rule = r;
    tz->initial = r.std_off;
    *out = tz;
    return 0;
}

/* ---- TZif (RFC 8536) ---- */

typedef struct tzif_hdr {
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
} tzif_hdr;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p) {
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

static int read_hdr(const unsigned char *p, size_t avail, tzif_hdr *h, char *version) {
    if (avail < 44 || memcmp(p, "TZif", 4) != 0) return -1;
    *version = (char)p[4];
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    return 0;
}

/* Size of the data block after a header; 0 when the counts are unusable. */
static size_t block_size(const tzif_hdr *h, size_t tsize) {
    if (h->timecnt > TZIF_MAX_TRANSITIONS || h->typecnt > 256 || h->charcnt > 65536 ||
        h->leapcnt > 65536 || (h->isstdcnt != 0 && h->isstdcnt != h->typecnt) ||
        (h->isutcnt != 0 && h->isutcnt != h->typecnt))
        return 0;
    return h->timecnt * (tsize + 1) + h->typecnt * 6 + h->charcnt + h->leapcnt * (tsize + 4) +
           h->isstdcnt + h->isutcnt;
}

static int tzif_fail(ferry_error *err, const char *why) {
    return ferry__err(err, FERRY_EINVAL, "invalid TZif data: %s", why);
}

int ferry__tz_from_tzif(const void *data, size_t len, ferry__tz **out, ferry_error *err) {
    *out = NULL;
    const unsigned char *p = data;
    if (!p) return tzif_fail(err, "no data");
    if (len > FERRY_TZ_TZIF_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "TZif data larger than %d bytes", FERRY_TZ_TZIF_MAX);
    tzif_hdr h;
    char version;
    if (read_hdr(p, len, &h, &version) != 0) return tzif_fail(err, "bad magic or short header");
    size_t bs = block_size(&h, 4);
    if (!bs || bs > len - 44) return tzif_fail(err, "counts out of range or truncated");
    size_t tsize = 4;
    const unsigned char *blk = p + 44, *end = p + len;
    if (version >= '2') { /* skip the 32-bit block; use the 64-bit one and the footer */
        const unsigned char *h2 = blk + bs;
        if (read_hdr(h2, (size_t)(end - h2), &h, &version) != 0)
            return tzif_fail(err, "bad second header");
        tsize = 8;
        bs = block_size(&h, 8);
        blk = h2 + 44;
        if (!bs || bs > (size_t)(end - blk))
            return tzif_fail(err, "counts out of range or truncated");
    }
    if (h.typecnt == 0) return tzif_fail(err, "no local time types");
    if (h.leapcnt != 0) return tzif_fail(err, "leap-second zones are not supported");

    const unsigned char *times = blk, *idx = blk + h.timecnt * tsize, *types = idx + h.timecnt;
    long offs[256];
    for (uint32_t i = 0; i < h.typecnt; i++) {
        int32_t o = (int32_t)be32(types + i * 6);
        if (o < -OFFSET_MAX || o > OFFSET_MAX) return tzif_fail(err, "UTC offset out of range");
        offs[i] = o;
    }
    posix_rule rule;
    int has_rule = 0;
    if (tsize == 8) { /* footer: "\n<POSIX TZ or empty>\n" */
        const unsigned char *f = blk + bs;
        if (f >= end || *f != '\n') return tzif_fail(err, "missing footer");
        const unsigned char *nl = memchr(f + 1, '\n', (size_t)(end - f - 1));
        size_t n = nl ? (size_t)(nl - f - 1) : 0;
        if (!nl || n > FERRY_TZ_POSIX_MAX)
            return tzif_fail(err, "unterminated or oversized footer");
        if (n > 0) {
            char spec[FERRY_TZ_POSIX_MAX + 1];
            memcpy(spec, f + 1, n);
            spec[n] = '\0';
            if (strlen(spec) != n || posix_parse(spec, &rule) != 0)
                return tzif_fail(err, "bad footer rule");
            has_rule = 1;
        }
    }

    ferry__tz *tz = tz_new();
    if (!tz) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (h.timecnt) {
        tz->times = malloc(h.timecnt * sizeof *tz->times);
        tz->offsets = malloc(h.timecnt * sizeof *tz->offsets);
        if (!tz->times || !tz->offsets) {
            ferry__tz_close(tz);
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
    }
    for (uint32_t i = 0; i < h.timecnt; i++) {
        long long t = tsize == 8 ? be64(times + i * 8) : (int32_t)be32(times + i * 4);
        const char *why = i > 0 && t <= tz->times[i - 1] ? "transitions out of order"
                          : idx[i] >= h.typecnt          ? "bad time type index"
                                                         : NULL;
        if (why) {
            ferry__tz_close(tz);
            return tzif_fail(err, why);
        }
        tz->times[i] = t;
        tz->offsets[i] = offs[idx[i]];
    }
    tz->count = h.timecnt;
    tz->initial = offs[0];
    tz->has_rule = has_rule;
    if (has_rule) tz->rule = rule;
    *out = tz;
    return 0;
}

long ferry__tz_offset(const ferry__tz *tz, long long t) {
    /* Rule arithmetic needs headroom; beyond +-10^14 s (3 million years) the answer for the
     * bound is as good as any. */
    if (t > 100000000000000LL) t = 100000000000000LL;
    if (t < -100000000000000LL) t = -100000000000000LL;
    if (tz->count == 0) return tz->has_rule ? posix_offset(&tz->rule, t) : tz->initial;
    if (t < tz->times[0]) return tz->initial;
    size_t lo = 0, hi = tz->count; /* last i with times[i] <= t */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (tz->times[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (lo == tz->count - 1 && tz->has_rule) return posix_offset(&tz->rule, t);
    return tz->offsets[lo];
}

/* ---- zone names and files ---- */

static int name_syntax_ok(const char *name) {
    if (name[0] == '/' || name[0] == '\0') return 0;
    for (const char *c = name; *c; c++) {
        int start = c == name || c[-1] == '/';
        if (start && (*c == '/' || *c == '.')) return 0; /* empty, ".", ".." or hidden */
        if (!is_alnum(*c) && !strchr("/_+-.", *c)) return 0;
    }
    return name[strlen(name) - 1] != '/';
}

/* Names Intl refuses although a file of that name may exist. */
static int name_refused(const char *name) {
    static const char *const exact[] = {"posixrules", "localtime", "Factory"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcasecmp(name, exact[i]) == 0) return 1;
    return strncasecmp(name, "posix/", 6) == 0 || strncasecmp(name, "right/", 6) == 0;
}

/* Append `name` to the NUL-terminated directory path in buf (capacity cap), matching each component
 * case-insensitively when the exact spelling is absent (Intl accepts "europe/berlin"). */
static int resolve_path(char *buf, size_t cap, const char *name) {
    size_t len = strlen(buf);
    if (len + 1 + strlen(name) >= cap) return -1;
    buf[len] = '/';
    strcpy(buf + len + 1, name);
    struct stat st;
    if (stat(buf, &st) == 0) return 0;
    buf[len] = '\0';
    for (const char *comp = name; *comp;) {
        size_t n = strcspn(comp, "/");
        char want[FERRY_TZ_NAME_MAX + 1];
        memcpy(want, comp, n);
        want[n] = '\0';
        DIR *d = opendir(buf);
        if (!d) return -1;
        struct dirent *de;
        int found = 0;
        while ((de = readdir(d)) != NULL) {
            if (strcasecmp(de->d_name, want) == 0) {
                memcpy(want, de->d_name, n); /* same length: case differs only */
                found = 1;
                break;
            }
        }
        closedir(d);
        if (!found) return -1;
        size_t cur = strlen(buf);
        buf[cur] = '/';
        memcpy(buf + cur + 1, want, n + 1);
        comp += n;
        if (*comp == '/') comp++;
    }
    return 0;
}

static int load_file(const char *path, const char *label, ferry__tz **out, ferry_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ferry__err(err, FERRY_EINVAL, "unknown time zone '%s'", label);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ferry__err(err, FERRY_EINVAL, "unknown time zone '%s' (not a zone file)", label);
    }
    if (st.st_size > FERRY_TZ_TZIF_MAX) {
        close(fd);
        return ferry__err(err, FERRY_ETOOBIG, "time zone file for '%s' is larger than %d bytes",
                          label, FERRY_TZ_TZIF_MAX);
    }
    size_t size = (size_t)st.st_size, got = 0;
    unsigned char *data = malloc(size ? size : 1);
    if (!data) {
        close(fd);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    while (got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    ferry_error e2 = {0};
    int rc = ferry__tz_from_tzif(data, got, out, &e2);
    free(data);
    if (rc == FERRY_EINVAL)
        return ferry__err(err, FERRY_EINVAL, "unknown time zone '%s' (%s)", label, e2.message);
    if (rc != 0) return ferry__err(err, rc, "%s", e2.message);
    return 0;
}

static void zone_dir(char *buf, size_t cap) {
    const char *dir = getenv("TZDIR");
    if (!dir || !*dir || strlen(dir) >= cap - FERRY_TZ_NAME_MAX - 2) dir = DEFAULT_TZDIR;
    strcpy(buf, dir);
}

static int open_iana(const char *name, const char *label, ferry__tz **out, ferry_error *err) {
    if (!name_syntax_ok(name) || name_refused(name))
        return ferry__err(err, FERRY_EINVAL, "unknown time zone '%s'", label);
    char path[PATH_MAX];
    zone_dir(path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) /* a -slim image without tzdata */
        return ferry__err(err, FERRY_EINVAL,
                          "unknown time zone '%s': no tz database at %s (install tzdata, or "
                          "set TZDIR)",
                          label, path);
    if (resolve_path(path, sizeof path, name) != 0 ||
        name_refused(path + strlen(path) - strlen(name)))
        return ferry__err(err, FERRY_EINVAL, "unknown time zone '%s'", label);
    return load_file(path, label, out, err);
}

/* The process's own zone, the way glibc picks it: $TZ (":name", a zone name, or a POSIX
 * rule; "" means UTC), else /etc/localtime. */
static int open_local(const char *label, ferry__tz **out, ferry_error *err) {
    const char *env = getenv("TZ");
    if (!env) return load_file("/etc/localtime", label, out, err);
    if (*env == ':') env++;
    if (!*env) {
        *out = ferry__tz_utc();
        return 0;
    }
    if (strlen(env) <= FERRY_TZ_NAME_MAX && open_iana(env, label, out, NULL) == 0) return 0;
    if (ferry__tz_from_posix(env, out, NULL) == 0) return 0;
    return ferry__err(err, FERRY_EINVAL, "time zone '%s': cannot use TZ='%s'", label, env);
}

/* luxon's FixedOffsetZone.parseSpecifier: utc[+-]H{1,2}[:MM], already lower-cased. */
static int parse_fixed(const char *s, long *off) {
    if (strncmp(s, "utc", 3) != 0 || (s[3] != '+' && s[3] != '-')) return 0;
    const char *p = s + 4;
    int neg = s[3] == '-', digits = 0;
    long h = 0, m = 0;
    while (is_digit(*p) && digits < 3)
        h = h * 10 + (*p++ - '0'), digits++;
    if (digits < 1 || digits > 2) return 0;
    if (*p == ':') {
        if (!is_digit(p[1]) || !is_digit(p[2])) return 0;
        m = (p[1] - '0') * 10 + (p[2] - '0');
        p += 3;
    }
    if (*p) return 0;
    *off = (neg ? -1 : 1) * (h * 3600 + m * 60);
    return 1;
}

/* Names Intl (ICU) accepts that have no file in the tz database: ICU's old three-letter
 * IDs and a few retired aliases, to the zone ICU gives them (`new Intl.DateTimeFormat('en',
 * {timeZone: n}).resolvedOptions().timeZone` in Node 20), and the SystemV zones, which ICU
 * keeps as fixed offsets or the 1967 US rules (last Sunday of April to last Sunday of
 * October, checked against Node). A Node producer may give any of them as a scheduler's tz. */
static const struct {
    const char *name, *zone; /* zone: an IANA name, or a POSIX rule when posix */
    int posix;
} icu_aliases[] = {
    {"ACT", "Australia/Darwin", 0},
    {"AET", "Australia/Sydney", 0},
    {"AGT", "America/Argentina/Buenos_Aires", 0},
    {"ART", "Africa/Cairo", 0},
    {"AST", "America/Anchorage", 0},
    {"BET", "America/Sao_Paulo", 0},
    {"BST", "Asia/Dhaka", 0},
    {"CAT", "Africa/Maputo", 0},
    {"CNT", "America/St_Johns", 0},
    {"CST", "America/Chicago", 0},
    {"CTT", "Asia/Shanghai", 0},
    {"EAT", "Africa/Nairobi", 0},
    {"ECT", "Europe/Paris", 0},
    {"IET", "America/Indiana/Indianapolis", 0},
    {"IST", "Asia/Kolkata", 0},
    {"JST", "Asia/Tokyo", 0},
    {"MIT", "Pacific/Apia", 0},
    {"NET", "Asia/Yerevan", 0},
    {"NST", "Pacific/Auckland", 0},
    {"PLT", "Asia/Karachi", 0},
    {"PNT", "America/Phoenix", 0},
    {"PRT", "America/Puerto_Rico", 0},
    {"PST", "America/Los_Angeles", 0},
    {"SST", "Pacific/Guadalcanal", 0},
    {"VST", "Asia/Ho_Chi_Minh", 0},
    {"US/Pacific-New", "America/Los_Angeles", 0},
    {"Canada/East-Saskatchewan", "America/Regina", 0},
    {"SystemV/AST4", "<-04>4", 1},
    {"SystemV/AST4ADT", "<-04>4<-03>,M4.5.0,M10.5.0", 1},
    {"SystemV/CST6", "<-06>6", 1},
    {"SystemV/CST6CDT", "<-06>6<-05>,M4.5.0,M10.5.0", 1},
    {"SystemV/EST5", "<-05>5", 1},
    {"SystemV/EST5EDT", "<-05>5<-04>,M4.5.0,M10.5.0", 1},
    {"SystemV/HST10", "<-10>10", 1},
    {"SystemV/MST7", "<-07>7", 1},
    {"SystemV/MST7MDT", "<-07>7<-06>,M4.5.0,M10.5.0", 1},
    {"SystemV/PST8", "<-08>8", 1},
    {"SystemV/PST8PDT", "<-08>8<-07>,M4.5.0,M10.5.0", 1},
    {"SystemV/YST9", "<-09>9", 1},
    {"SystemV/YST9YDT", "<-09>9<-08>,M4.5.0,M10.5.0", 1},
};

static int open_alias(const char *name, ferry__tz **out, ferry_error *err, int *found) {
    *found = 0;
    for (size_t i = 0; i < sizeof icu_aliases / sizeof icu_aliases[0]; i++) {
        if (strcasecmp(name, icu_aliases[i].name) != 0) continue;
        *found = 1;
        if (icu_aliases[i].posix) return ferry__tz_from_posix(icu_aliases[i].zone, out, err);
        return open_iana(icu_aliases[i].zone, name, out, err);
    }
    return 0;
}

static int open_uncached(const char *name, ferry__tz **out, ferry_error *err) {
    char lower[FERRY_TZ_NAME_MAX + 1];
    size_t n = strlen(name);
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)to_lower((unsigned char)name[i]);
    long off;
    if (!strcmp(lower, "utc") || !strcmp(lower, "gmt")) {
        *out = ferry__tz_utc();
        return 0;
    }
    if (!strcmp(lower, "local") || !strcmp(lower, "system") || !strcmp(lower, "default"))
        return open_local(name, out, err);
    if (parse_fixed(lower, &off)) {
        ferry__tz *tz = tz_new();
        if (!tz) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        tz->initial = off;
        *out = tz;
        return 0;
    }
    int alias;
    int rc = open_alias(name, out, err, &alias);
    if (alias) return rc;
    return open_iana(name, name, out, err);
}

/* Process-wide cache: name -> zone (one reference held by the cache). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *name;
    ferry__tz *tz;
} cache[CACHE_MAX];
static size_t cache_len;

int ferry__tz_open(const char *name, ferry__tz **out, ferry_error *err) {
    *out = NULL;
    if (!name || !*name) {
        *out = ferry__tz_utc();
        return 0;
    }
    if (strlen(name) > FERRY_TZ_NAME_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "time zone name longer than %d bytes",
                          FERRY_TZ_NAME_MAX);
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < cache_len; i++) {
        if (strcmp(cache[i].name, name) == 0) {
            *out = tz_ref(cache[i].tz);
            pthread_mutex_unlock(&cache_lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&cache_lock);

    ferry__tz *tz;
    int rc = open_uncached(name, &tz, err);
    if (rc != 0) return rc;
    pthread_mutex_lock(&cache_lock);
    int present = 0;
    for (size_t i = 0; i < cache_len && !present; i++)
        present = strcmp(cache[i].name, name) == 0;
    if (!present && cache_len < CACHE_MAX) { /* a racing opener may have added it; keep one */
        char *copy = strdup(name);
        if (copy) {
            cache[cache_len].name = copy;
            cache[cache_len].tz = tz_ref(tz);
            cache_len++;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    *out = tz;
    return 0;
}
