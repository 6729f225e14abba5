/* test_tz.c - time zones (src/sched/tz.c): TZif parsing (synthetic files and the system's),
 * POSIX TZ rules, zone-name resolution the way luxon/Intl resolve names, and the cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/tz.h"
#include "util/civil.h"

#define H 3600L

static long long utc_s(int y, int mo, int d, int h, int mi, int s) {
    return ferry__days_from_civil(y, mo, d) * 86400 + h * 3600LL + mi * 60LL + s;
}

static long offset_of(const char *name, long long t) {
    ferry__tz *z;
    ferry_error e = {0};
    if (ferry__tz_open(name, &z, &e) != 0) fail_msg("open '%s': %s", name, e.message);
    long off = ferry__tz_offset(z, t);
    ferry__tz_close(z);
    return off;
}

static void open_bad(const char *name, int want_rc, const char *want_msg) {
    ferry__tz *z = (ferry__tz *)&z;
    ferry_error e = {0};
    int rc = ferry__tz_open(name, &z, &e);
    if (rc == 0) fail_msg("zone '%s' opened but must be refused", name);
    assert_int_equal(rc, want_rc);
    assert_int_equal(e.code, want_rc);
    assert_null(z);
    if (!strstr(e.message, want_msg))
        fail_msg("'%s': message '%s' lacks '%s'", name, e.message, want_msg);
}

/* ---- a synthetic TZif writer (RFC 8536 layout) ---- */

typedef struct tzif_spec {
    char version; /* '\0' (v1 only), '2', '3' */
    int timecnt, typecnt, leapcnt;
    const long long *times;
    const unsigned char *idx;
    const int32_t *offs;
    const char *footer; /* NULL: no footer at all (malformed for v2+) */
} tzif_spec;

static unsigned char *put(unsigned char *p, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--)
        *p++ = (unsigned char)(v >> (8 * i));
    return p;
}

static unsigned char *put_block(unsigned char *p, const tzif_spec *s, int tsize) {
    memcpy(p, "TZif", 4);
    p[4] = (unsigned char)s->version;
    memset(p + 5, 0, 15);
    p += 20;
    uint32_t counts[6] = {0, 0, (uint32_t)s->leapcnt, (uint32_t)s->timecnt, (uint32_t)s->typecnt,
                          4};
    for (int i = 0; i < 6; i++)
        p = put(p, counts[i], 4);
    for (int i = 0; i < s->timecnt; i++)
        p = put(p, (uint64_t)s->times[i], tsize);
    for (int i = 0; i < s->timecnt; i++)
        *p++ = s->idx[i];
    for (int i = 0; i < s->typecnt; i++) {
        p = put(p, (uint32_t)s->offs[i], 4);
        *p++ = 0;
        *p++ = 0;
    }
    memcpy(p, "XYZ", 4);
    p += 4;
    for (int i = 0; i < s->leapcnt; i++) {
        p = put(p, 0, tsize);
        p = put(p, 1, 4);
    }
    return p;
}

static size_t make_tzif(unsigned char *out, const tzif_spec *s) {
    unsigned char *p = put_block(out, s, 4);
    if (s->version >= '2') {
        p = put_block(p, s, 8);
        if (s->footer) p += sprintf((char *)p, "\n%s\n", s->footer);
    }
    return (size_t)(p - out);
}

static const long long T3[] = {-2000000000LL, 0, 1000000};
static const unsigned char I3[] = {1, 2, 1};
static const int32_t O3[] = {1000, 3600, 7200};

static void test_tzif_synthetic(void **state) {
    (void)state;
    unsigned char buf[2048];
    ferry_error e = {0};
    ferry__tz *z;
    tzif_spec s = {'2', 3, 3, 0, T3, I3, O3, ""};
    size_t n = make_tzif(buf, &s);
    assert_int_equal(ferry__tz_from_tzif(buf, n, &z, &e), 0);
    assert_int_equal(ferry__tz_offset(z, -3000000000LL), 1000); /* before the first: type 0 */
    assert_int_equal(ferry__tz_offset(z, -2000000000LL), 3600); /* on a transition: the new type */
    assert_int_equal(ferry__tz_offset(z, -1), 3600);
    assert_int_equal(ferry__tz_offset(z, 0), 7200);
    assert_int_equal(ferry__tz_offset(z, 999999), 7200);
    assert_int_equal(ferry__tz_offset(z, 1000000), 3600); /* last type, empty footer: forever */
    assert_int_equal(ferry__tz_offset(z, 1LL << 40), 3600);
    ferry__tz_close(z);

    /* footer rule takes over from the last transition on */
    s.footer = "CET-1CEST,M3.5.0,M10.5.0/3";
    n = make_tzif(buf, &s);
    assert_int_equal(ferry__tz_from_tzif(buf, n, &z, &e), 0);
    assert_int_equal(ferry__tz_offset(z, 999999), 7200);
    assert_int_equal(ferry__tz_offset(z, utc_s(2050, 1, 15, 0, 0, 0)), H);
    assert_int_equal(ferry__tz_offset(z, utc_s(2050, 7, 15, 0, 0, 0)), 2 * H);
    ferry__tz_close(z);

    /* version 1: 32-bit data only, no footer */
    s.version = '\0';
    n = make_tzif(buf, &s);
    assert_int_equal(ferry__tz_from_tzif(buf, n, &z, &e), 0);
    assert_int_equal(ferry__tz_offset(z, 500), 7200);
    assert_int_equal(ferry__tz_offset(z, 2000000), 3600);
    ferry__tz_close(z);

    /* no transitions: type 0, or the footer when there is one */
    tzif_spec fixed = {'2', 0, 1, 0, NULL, NULL, O3 + 2, ""};
    n = make_tzif(buf, &fixed);
    assert_int_equal(ferry__tz_from_tzif(buf, n, &z, &e), 0);
    assert_int_equal(ferry__tz_offset(z, 123456789), 7200);
    ferry__tz_close(z);
}

static void tzif_bad(const unsigned char *buf, size_t n, const char *want) {
    ferry__tz *z = (ferry__tz *)&z;
    ferry_error e = {0};
    int rc = ferry__tz_from_tzif(buf, n, &z, &e);
    if (rc == 0) fail_msg("malformed TZif accepted (want '%s')", want);
    assert_int_equal(rc, FERRY_EINVAL);
    assert_null(z);
    if (!strstr(e.message, want)) fail_msg("message '%s' lacks '%s'", e.message, want);
}

static void test_tzif_malformed(void **state) {
    (void)state;
    unsigned char buf[2048];
    tzif_spec s = {'2', 3, 3, 0, T3, I3, O3, "CET-1CEST,M3.5.0,M10.5.0/3"};
    size_t n = make_tzif(buf, &s);
    for (size_t cut = 0; cut < n; cut++) { /* every truncation is refused, none crashes */
        ferry__tz *z;
        if (ferry__tz_from_tzif(buf, cut, &z, NULL) == 0)
            fail_msg("truncated at %zu accepted", cut);
    }
    tzif_bad(buf, 10, "bad magic or short header");
    buf[0] = 'X';
    tzif_bad(buf, n, "bad magic");

    static const long long unsorted[] = {5, 5, 9};
    tzif_spec u = s;
    u.times = unsorted;
    n = make_tzif(buf, &u);
    tzif_bad(buf, n, "out of order");

    static const unsigned char badidx[] = {0, 3, 0};
    tzif_spec b = s;
    b.idx = badidx;
    n = make_tzif(buf, &b);
    tzif_bad(buf, n, "bad time type index");

    tzif_spec none = {'2', 0, 0, 0, NULL, NULL, O3, ""};
    n = make_tzif(buf, &none);
    tzif_bad(buf, n, "no local time types");

    tzif_spec leap = s;
    leap.leapcnt = 1;
    n = make_tzif(buf, &leap);
    tzif_bad(buf, n, "leap-second");

    static const int32_t huge[] = {1000, 200000, 7200};
    tzif_spec big = s;
    big.offs = huge;
    n = make_tzif(buf, &big);
    tzif_bad(buf, n, "offset out of range");

    tzif_spec nofoot = s;
    nofoot.footer = NULL;
    n = make_tzif(buf, &nofoot);
    tzif_bad(buf, n, "missing footer");

    tzif_spec badfoot = s;
    badfoot.footer = "not a rule";
    n = make_tzif(buf, &badfoot);
    tzif_bad(buf, n, "bad footer rule");
    n = make_tzif(buf, &s);
    tzif_bad(buf, n - 1, "unterminated"); /* footer without its closing newline */

    ferry__tz *z;
    assert_int_equal(ferry__tz_from_tzif(buf, FERRY_TZ_TZIF_MAX + 1, &z, NULL), FERRY_ETOOBIG);
    assert_int_equal(ferry__tz_from_tzif(NULL, 0, &z, NULL), FERRY_EINVAL);
}

static long posix_off(const char *spec, long long t) {
    ferry__tz *z;
    ferry_error e = {0};
    if (ferry__tz_from_posix(spec, &z, &e) != 0) fail_msg("rule '%s': %s", spec, e.message);
    long off = ferry__tz_offset(z, t);
    ferry__tz_close(z);
    return off;
}

static void test_posix_rules(void **state) {
    (void)state;
    const char *eu = "CET-1CEST,M3.5.0,M10.5.0/3"; /* 2026: 03-29 01:00Z .. 10-25 01:00Z */
    assert_int_equal(posix_off(eu, utc_s(2026, 3, 29, 0, 59, 59)), H);
    assert_int_equal(posix_off(eu, utc_s(2026, 3, 29, 1, 0, 0)), 2 * H);
    assert_int_equal(posix_off(eu, utc_s(2026, 10, 25, 0, 59, 59)), 2 * H);
    assert_int_equal(posix_off(eu, utc_s(2026, 10, 25, 1, 0, 0)), H);
    /* southern hemisphere: DST spans the new year */
    const char *syd = "AEST-10AEDT,M10.1.0,M4.1.0/3";
    assert_int_equal(posix_off(syd, utc_s(2026, 1, 1, 0, 0, 0)), 11 * H);
    assert_int_equal(posix_off(syd, utc_s(2026, 7, 1, 0, 0, 0)), 10 * H);
    assert_int_equal(posix_off(syd, utc_s(2026, 4, 4, 15, 59, 59)), 11 * H); /* 04-05 03:00 AEDT */
    assert_int_equal(posix_off(syd, utc_s(2026, 4, 4, 16, 0, 0)), 10 * H);
    /* negative rule times (RFC 8536): Nuuk changes at 23:00 the day before */
    const char *nuuk = "<-02>2<-01>,M3.5.0/-1,M10.5.0/0";
    assert_int_equal(posix_off(nuuk, utc_s(2026, 3, 29, 0, 59, 59)), -2 * H);
    assert_int_equal(posix_off(nuuk, utc_s(2026, 3, 29, 1, 0, 0)), -1 * H);
    assert_int_equal(posix_off(nuuk, utc_s(2026, 10, 25, 1, 0, 0)), -2 * H);
    /* Julian forms: Jn skips Feb 29, n counts it (zero-based) */
    assert_int_equal(posix_off("AAA3BBB,J60/0,J300/0", utc_s(2028, 3, 1, 2, 59, 59)), -3 * H);
    assert_int_equal(posix_off("AAA3BBB,J60/0,J300/0", utc_s(2028, 3, 1, 3, 0, 0)), -2 * H);
    assert_int_equal(posix_off("AAA3BBB,59/0,300/0", utc_s(2028, 2, 29, 3, 0, 0)), -2 * H);
    assert_int_equal(posix_off("AAA3BBB,59/0,300/0", utc_s(2028, 2, 29, 2, 59, 59)), -3 * H);
    /* DST all year (tzcode's trick) and no DST at all */
    assert_int_equal(posix_off("EST5EDT,0/0,J365/25", utc_s(2030, 1, 1, 0, 0, 0)), -4 * H);
    assert_int_equal(posix_off("EST5EDT,0/0,J365/25", utc_s(2030, 12, 31, 23, 0, 0)), -4 * H);
    assert_int_equal(posix_off("<+0545>-5:45", 0), 5 * H + 45 * 60);
    assert_int_equal(posix_off("UTC0", 0), 0);
    /* DST named without dates: the US rule */
    assert_int_equal(posix_off("EST5EDT", utc_s(2026, 3, 8, 6, 59, 59)), -5 * H);
    assert_int_equal(posix_off("EST5EDT", utc_s(2026, 3, 8, 7, 0, 0)), -4 * H);
    /* explicit DST offset */
    assert_int_equal(posix_off("LHST-10:30LHDT-11,M10.1.0,M4.1.0", utc_s(2026, 1, 1, 0, 0, 0)),
                     11 * H);

    /* clang-format off */
    static const char *const bad[] = {
        "", "AB0", "CET", "CET-1CEST,M13.1.0,M10.5.0", "CET-1CEST,M3.5.0", "CET-25",
        "CET-1CEST,M3.5.0/168,M10.5.0", "CET-1x", "CET-1CEST,M3.5.0,M10.5.0,", "<AB>1",
        "CET-1CEST,J0,J300", "CET-1CEST,366,300"};
    /* clang-format on */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ferry__tz *z = (ferry__tz *)&z;
        ferry_error e = {0};
        if (ferry__tz_from_posix(bad[i], &z, &e) != FERRY_EINVAL)
            fail_msg("rule '%s' accepted", bad[i]);
        assert_null(z);
        assert_non_null(strstr(e.message, "malformed POSIX time zone rule"));
    }
}

static void test_system_zones(void **state) {
    (void)state;
    /* Europe/Berlin: 2026 changes, far future (footer), and LMT before 1893 */
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2026, 1, 15, 12, 0, 0)), H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2026, 3, 29, 0, 59, 59)), H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2026, 3, 29, 1, 0, 0)), 2 * H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2026, 10, 25, 0, 59, 59)), 2 * H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2026, 10, 25, 1, 0, 0)), H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(2100, 7, 1, 0, 0, 0)), 2 * H);
    assert_int_equal(offset_of("Europe/Berlin", utc_s(1850, 1, 1, 0, 0, 0)), 53 * 60 + 28);
    assert_int_equal(offset_of("America/New_York", utc_s(2026, 11, 1, 5, 59, 59)), -4 * H);
    assert_int_equal(offset_of("America/New_York", utc_s(2026, 11, 1, 6, 0, 0)), -5 * H);
    assert_int_equal(offset_of("Asia/Ho_Chi_Minh", utc_s(2026, 6, 1, 0, 0, 0)), 7 * H);
    assert_int_equal(offset_of("Asia/Kathmandu", 0), 5 * H + 30 * 60); /* +05:30 until 1986 */
    assert_int_equal(offset_of("Asia/Kathmandu", utc_s(2026, 1, 1, 0, 0, 0)), 5 * H + 45 * 60);
    assert_int_equal(offset_of("Australia/Lord_Howe", utc_s(2026, 1, 1, 0, 0, 0)),
                     11 * H); /* 30-min DST */
    assert_int_equal(offset_of("Australia/Lord_Howe", utc_s(2026, 7, 1, 0, 0, 0)),
                     10 * H + 30 * 60);

    /* the file parsed directly agrees with the opened zone */
    FILE *f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb");
    assert_non_null(f);
    static unsigned char data[FERRY_TZ_TZIF_MAX];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    ferry__tz *a, *b;
    assert_int_equal(ferry__tz_from_tzif(data, n, &a, NULL), 0);
    assert_int_equal(ferry__tz_open("Europe/Berlin", &b, NULL), 0);
    for (long long t = utc_s(1900, 1, 1, 0, 0, 0); t < utc_s(2060, 1, 1, 0, 0, 0);
         t += 86400 * 7 + 3607)
        assert_int_equal(ferry__tz_offset(a, t), ferry__tz_offset(b, t));
    ferry__tz_close(a);
    ferry__tz_close(b);
}

static void test_names(void **state) {
    (void)state;
    ferry__tz *z;
    /* luxon's special names */
    for (const char *const *n = (const char *const[]){"", "UTC", "utc", "GMT", "gMt", NULL}; *n;
         n++) {
        assert_int_equal(ferry__tz_open(*n, &z, NULL), 0);
        assert_ptr_equal(z, ferry__tz_utc());
        ferry__tz_close(z);
    }
    assert_int_equal(ferry__tz_open(NULL, &z, NULL), 0);
    assert_ptr_equal(z, ferry__tz_utc());
    assert_int_equal(offset_of("utc+05:30", 0), 5 * H + 30 * 60);
    assert_int_equal(offset_of("UTC-3", 0), -3 * H);
    assert_int_equal(offset_of("utc-0:30", 0), -30 * 60);
    assert_int_equal(offset_of("UTC+99:99", 0), 99 * H + 99 * 60); /* luxon allows it */
    /* IANA names, links, case-insensitive matching as Intl does */
    assert_int_equal(offset_of("Etc/GMT+5", 0), -5 * H);
    assert_int_equal(offset_of("US/Eastern", 0), -5 * H);
    assert_int_equal(offset_of("Asia/Saigon", utc_s(2026, 1, 1, 0, 0, 0)), 7 * H); /* +08 in 1970 */
    assert_int_equal(offset_of("europe/berlin", utc_s(2026, 7, 1, 0, 0, 0)), 2 * H);
    assert_int_equal(offset_of("AMERICA/ARGENTINA/BUENOS_AIRES", 0), -3 * H);
    /* names Intl refuses, malformed names, non-zone files */
    open_bad("Nope/Zone", FERRY_EINVAL, "unknown time zone 'Nope/Zone'");
    open_bad("Factory", FERRY_EINVAL, "unknown time zone");
    open_bad("posixrules", FERRY_EINVAL, "unknown time zone");
    open_bad("localtime", FERRY_EINVAL, "unknown time zone");
    open_bad("posix/Europe/Berlin", FERRY_EINVAL, "unknown time zone");
    open_bad("RIGHT/Europe/Berlin", FERRY_EINVAL, "unknown time zone");
    open_bad("GMT+5", FERRY_EINVAL, "unknown time zone"); /* only Etc/GMT+5 exists */
    open_bad("Europe", FERRY_EINVAL, "not a zone file");
    open_bad("zone.tab", FERRY_EINVAL, "invalid TZif data");
    open_bad("Europe/", FERRY_EINVAL, "unknown time zone");
    open_bad("Europe//Berlin", FERRY_EINVAL, "unknown time zone");
    open_bad(" Europe/Berlin", FERRY_EINVAL, "unknown time zone");
    open_bad("../zoneinfo/UTC", FERRY_EINVAL, "unknown time zone");
    open_bad("Europe/../UTC", FERRY_EINVAL, "unknown time zone");
    open_bad("/etc/localtime", FERRY_EINVAL, "unknown time zone");
    open_bad("utc+5:3", FERRY_EINVAL, "unknown time zone");
    open_bad("utc+123", FERRY_EINVAL, "unknown time zone");
    char longname[FERRY_TZ_NAME_MAX + 2];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    open_bad(longname, FERRY_ETOOBIG, "longer than");
}

/* "local" / "system" / "default" follow $TZ (each name is resolved once, then cached). */
/* Names Intl accepts without a tz database file: ICU's three-letter IDs and SystemV zones
 * (expected offsets are what Node 20's Intl gives for the same instants). */
static void test_icu_aliases(void **state) {
    (void)state;
    long long jan = utc_s(2026, 1, 15, 12, 0, 0), jul = utc_s(2026, 7, 15, 12, 0, 0);
    assert_int_equal(offset_of("IST", jan), 5 * H + 1800);
    assert_int_equal(offset_of("JST", jul), 9 * H);
    assert_int_equal(offset_of("PST", jan), -8 * H);
    assert_int_equal(offset_of("PST", jul), -7 * H);
    assert_int_equal(offset_of("pst", jul), -7 * H); /* Intl ignores case */
    assert_int_equal(offset_of("CST", jul), -5 * H);
    assert_int_equal(offset_of("US/Pacific-New", jan), -8 * H);
    assert_int_equal(offset_of("SystemV/HST10", jul), -10 * H);
    /* SystemV daylight zones keep the 1967 US rules: last Sunday of April to last Sunday of
     * October, at 02:00 local */
    assert_int_equal(offset_of("SystemV/EST5EDT", utc_s(2026, 4, 26, 6, 59, 0)), -5 * H);
    assert_int_equal(offset_of("SystemV/EST5EDT", utc_s(2026, 4, 26, 7, 1, 0)), -4 * H);
    assert_int_equal(offset_of("SystemV/EST5EDT", utc_s(2026, 10, 25, 5, 59, 0)), -4 * H);
    assert_int_equal(offset_of("SystemV/EST5EDT", utc_s(2026, 10, 25, 6, 1, 0)), -5 * H);
    assert_int_equal(offset_of("SystemV/EST5EDT", utc_s(2026, 3, 9, 12, 0, 0)), -5 * H);
    open_bad("XYZ", FERRY_EINVAL, "unknown time zone 'XYZ'");
}

/* Without a tz database (a -slim image), the error says so instead of blaming the name. */
static void test_no_tz_database(void **state) {
    (void)state;
    const char *old = getenv("TZDIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("TZDIR", "/nonexistent/zoneinfo", 1);
    open_bad("America/Lima", FERRY_EINVAL, "no tz database at /nonexistent/zoneinfo");
    if (saved) {
        setenv("TZDIR", saved, 1);
        free(saved);
    } else {
        unsetenv("TZDIR");
    }
    assert_int_equal(offset_of("America/Lima", utc_s(2026, 1, 15, 12, 0, 0)), -5 * H);
}

static void test_local_zone(void **state) {
    (void)state;
    char *saved = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
    setenv("TZ", "Asia/Tokyo", 1);
    assert_int_equal(offset_of("local", 0), 9 * H);
    setenv("TZ", "<+0330>-3:30", 1); /* a POSIX rule */
    assert_int_equal(offset_of("system", 0), 3 * H + 30 * 60);
    setenv("TZ", "", 1); /* empty means UTC */
    assert_int_equal(offset_of("default", 0), 0);
    assert_int_equal(offset_of("local", 0), 9 * H); /* cached */
    if (saved)
        setenv("TZ", saved, 1);
    else
        unsetenv("TZ");
    free(saved);
}

/* $TZDIR chooses the database; a file there is found case-insensitively. */
static void test_tzdir(void **state) {
    (void)state;
    char dir[] = "/tmp/ferry_tz_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[64], file[96];
    snprintf(sub, sizeof sub, "%s/Test", dir);
    snprintf(file, sizeof file, "%s/Ferry_Zone", sub);
    assert_int_equal(mkdir(sub, 0700), 0);
    unsigned char buf[2048];
    tzif_spec s = {'2', 3, 3, 0, T3, I3, O3, "<+0145>-1:45"};
    size_t n = make_tzif(buf, &s);
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    char *saved = getenv("TZDIR") ? strdup(getenv("TZDIR")) : NULL;
    setenv("TZDIR", dir, 1);
    assert_int_equal(offset_of("Test/Ferry_Zone", 2000000), H + 45 * 60);
    assert_int_equal(offset_of("test/ferry_zone", 500), 2 * H);
    open_bad("Test/Other", FERRY_EINVAL, "unknown time zone");
    if (saved)
        setenv("TZDIR", saved, 1);
    else
        unsetenv("TZDIR");
    free(saved);
    unlink(file);
    rmdir(sub);
    rmdir(dir);
}

static void *open_many(void *arg) {
    static const char *const names[] = {"Europe/Paris", "America/Chicago", "Asia/Tokyo",
                                        "utc+2",        "Africa/Nairobi",  "Europe/paris"};
    long bad = 0;
    for (int i = 0; i < 400; i++) {
        ferry__tz *z;
        const char *name = names[(i + (int)(intptr_t)arg) % 6];
        if (ferry__tz_open(name, &z, NULL) != 0) {
            bad++;
            continue;
        }
        long off = ferry__tz_offset(z, utc_s(2026, 1, 1, 0, 0, 0));
        bad += off != (long[]){H, -6 * H, 9 * H, 2 * H, 3 * H, H}[(i + (int)(intptr_t)arg) % 6];
        ferry__tz_close(z);
    }
    return (void *)bad;
}

static void test_cache_threads(void **state) {
    (void)state;
    ferry__tz *a, *b;
    assert_int_equal(ferry__tz_open("Europe/Madrid", &a, NULL), 0);
    assert_int_equal(ferry__tz_open("Europe/Madrid", &b, NULL), 0);
    assert_ptr_equal(a, b); /* one cached object, two references */
    ferry__tz_close(a);
    ferry__tz_close(b);
    ferry__tz_close(NULL);
    ferry__tz_close(ferry__tz_utc()); /* static: a no-op */
    pthread_t th[4];
    for (intptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, open_many, (void *)i), 0);
    for (int i = 0; i < 4; i++) {
        void *bad;
        assert_int_equal(pthread_join(th[i], &bad), 0);
        assert_int_equal((intptr_t)bad, 0);
    }
}

static void test_calendar(void **state) {
    (void)state;
    assert_int_equal(ferry__days_from_civil(1970, 1, 1), 0);
    assert_int_equal(ferry__days_from_civil(2000, 3, 1), 11017);
    assert_int_equal(ferry__days_from_civil(1969, 12, 31), -1);
    for (long long d = -800000; d < 3000000; d += 97) {
        int64_t y;
        int m, dd;
        ferry__civil_from_days(d, &y, &m, &dd);
        assert_true(m >= 1 && m <= 12 && dd >= 1 && dd <= 31);
        assert_int_equal(ferry__days_from_civil(y, m, dd), d);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tzif_synthetic), cmocka_unit_test(test_tzif_malformed),
        cmocka_unit_test(test_posix_rules),    cmocka_unit_test(test_system_zones),
        cmocka_unit_test(test_names),          cmocka_unit_test(test_icu_aliases),
        cmocka_unit_test(test_no_tz_database), cmocka_unit_test(test_local_zone),
        cmocka_unit_test(test_tzdir),          cmocka_unit_test(test_cache_threads),
        cmocka_unit_test(test_calendar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
