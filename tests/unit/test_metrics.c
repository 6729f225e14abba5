/* test_metrics.c - the metrics registry (src/metrics/): naming rules at registration, the
 * label bound and its overflow series, escaping, histogram buckets, exact sums under
 * concurrent updates, and the exact text of a small registry's rendering. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/ferry.h"

/* The header of the counter every registry has, and its row for a labelled family. */
#define FOLDED_HEAD                                                                                \
    "# HELP ferry_metrics_folded_series_total Lookups of a new label combination past the "        \
    "family's bound, counted in its series whose every label is \"other\"\n"                       \
    "# TYPE ferry_metrics_folded_series_total counter\n"

static ferry_metrics *new_registry(size_t max_series) {
    ferry_metrics_options o;
    ferry_metrics_options_init(&o);
    o.max_series = max_series;
    ferry_metrics *m = NULL;
    ferry_error err = {0};
    int rc = ferry_metrics_create(&o, &m, &err);
    if (rc) fail_msg("ferry_metrics_create: %s", err.message);
    return m;
}

static ferry_metrics_family *reg(ferry_metrics *m, int kind, const char *name, const char *help,
                                 const char *const *labels, size_t nlabels) {
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = kind;
    s.name = name;
    s.help = help;
    s.label_names = labels;
    s.label_count = nlabels;
    ferry_metrics_family *f = NULL;
    ferry_error err = {0};
    int rc = ferry_metrics_register(m, &s, &f, &err);
    if (rc) fail_msg("register %s: %s", name, err.message);
    return f;
}

static char *render(ferry_metrics *m) {
    char *text = NULL;
    size_t len = 0;
    ferry_error err = {0};
    int rc = ferry_metrics_render(m, &text, &len, &err);
    if (rc) fail_msg("render: %s", err.message);
    assert_int_equal(len, strlen(text));
    return text;
}

static void expect_render(ferry_metrics *m, const char *want) {
    char *got = render(m);
    if (strcmp(got, want) != 0) fail_msg("render gave\n%s\nwant\n%s", got, want);
    free(got);
}

/* ---- registration rules ---------------------------------------------------------------- */

/* register a spec that must be refused with FERRY_EINVAL and a message holding `why` */
static void expect_refused(ferry_metrics *m, const ferry_metrics_spec *s, const char *why) {
    ferry_error err = {0};
    ferry_metrics_family *f = (ferry_metrics_family *)&err; /* must be reset to NULL */
    int rc = ferry_metrics_register(m, s, &f, &err);
    if (rc != FERRY_EINVAL)
        fail_msg("%s: register gave %s, want FERRY_EINVAL", s->name ? s->name : "(null)",
                 ferry_err_name(rc));
    assert_null(f);
    assert_int_equal(err.code, FERRY_EINVAL);
    if (!strstr(err.message, why))
        fail_msg("%s: message \"%s\" does not say \"%s\"", s->name ? s->name : "(null)",
                 err.message, why);
}

static void refuse_name(ferry_metrics *m, int kind, const char *name, const char *why) {
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = kind;
    s.name = name;
    s.help = "help";
    expect_refused(m, &s, why);
}

static void test_names(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    const int C = FERRY_METRICS_COUNTER, G = FERRY_METRICS_GAUGE, H = FERRY_METRICS_HISTOGRAM;
    refuse_name(m, C, NULL, "empty");
    refuse_name(m, C, "", "empty");
    refuse_name(m, C, "jobs_total", "must start with \"ferry_\"");
    refuse_name(m, C, "ferry_", "must start with \"ferry_\"");
    refuse_name(m, C, "ferry_Jobs_total", "lower-case");
    refuse_name(m, C, "ferry_jobs-done_total", "lower-case");
    refuse_name(m, C, "ferry:jobs_total", "lower-case");
    refuse_name(m, C, "ferry_jobs__done_total", "no empty part");
    refuse_name(m, G, "ferry_jobs_", "no empty part");
    refuse_name(m, C, "ferry_jobs", "a counter's name ends in \"_total\"");
    refuse_name(m, C, "ferry_total", "nothing between");
    refuse_name(m, G, "ferry_jobs_total", "\"_total\" is only for counters");
    refuse_name(m, H, "ferry_jobs_total", "\"_total\" is only for counters");
    refuse_name(m, H, "ferry_job_duration_ms", "\"ms\" is not a base unit (use seconds)");
    refuse_name(m, H, "ferry_job_duration_milliseconds", "\"milliseconds\" is not a base unit");
    refuse_name(m, G, "ferry_payload_kb", "\"kb\" is not a base unit (use bytes)");
    refuse_name(m, G, "ferry_lag_minutes", "\"minutes\" is not a base unit");
    refuse_name(m, G, "ferry_busy_percent", "use ratio");
    refuse_name(m, C, "ferry_wait_ms_total", "\"ms\" is not a base unit");
    refuse_name(m, H, "ferry_wait_seconds_bucket", "does not end in _bucket, _sum or _count");
    refuse_name(m, H, "ferry_wait_count", "does not end in _bucket, _sum or _count");
    refuse_name(m, 0, "ferry_x", "not a counter, gauge or histogram");
    refuse_name(m, 4, "ferry_x", "not a counter, gauge or histogram");
    char longname[FERRY_METRICS_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    memcpy(longname, "ferry_", 6);
    longname[sizeof longname - 1] = '\0';
    refuse_name(m, G, longname, "FERRY_METRICS_NAME_MAX");
    longname[FERRY_METRICS_NAME_MAX] = '\0'; /* the largest that passes */
    reg(m, G, longname, "help", NULL, 0);

    /* names that follow the rules */
    reg(m, C, "ferry_jobs_processed_total", "h", NULL, 0);
    reg(m, H, "ferry_job_duration_seconds", "h", NULL, 0);
    reg(m, G, "ferry_relay_last_success_timestamp_seconds", "h", NULL, 0);
    reg(m, H, "ferry_job_attempts", "h", NULL, 0);
    reg(m, G, "ferry_payload_bytes", "h", NULL, 0);
    reg(m, C, "ferry_mssql_calls_total", "h", NULL, 0); /* "mssql" is not the unit "ms" */

    /* a name is registered once; a histogram's series names are taken too */
    refuse_name(m, C, "ferry_jobs_processed_total", "already registered");
    refuse_name(m, G, "ferry_job_duration_seconds_sum", "clashes with metric");
    refuse_name(m, G, "ferry_job_duration_seconds_count", "clashes with metric");
    refuse_name(m, C, "ferry_metrics_folded_series_total", "already registered");
    reg(m, G, "ferry_queue_count", "h", NULL, 0);
    refuse_name(m, H, "ferry_queue", "clashes with metric ferry_queue_count");
    ferry_metrics_destroy(m);
}

static void test_help_labels_buckets(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = "ferry_x";
    expect_refused(m, &s, "help text is empty");
    s.help = "";
    expect_refused(m, &s, "help text is empty");
    s.help = "two\nlines";
    expect_refused(m, &s, "one line without control characters");
    s.help = "bad \xc3\x28 utf-8";
    expect_refused(m, &s, "not UTF-8");
    char help[FERRY_METRICS_HELP_MAX + 2];
    memset(help, 'h', sizeof help - 1);
    help[sizeof help - 1] = '\0';
    s.help = help;
    expect_refused(m, &s, "FERRY_METRICS_HELP_MAX");
    s.help = "ok";

    const char *bad_char[] = {"Queue"};
    s.label_names = bad_char;
    s.label_count = 1;
    expect_refused(m, &s, "is not [a-z_][a-z0-9_]*");
    const char *digit_first[] = {"1queue"};
    s.label_names = digit_first;
    expect_refused(m, &s, "is not [a-z_][a-z0-9_]*");
    const char *reserved[] = {"__name"};
    s.label_names = reserved;
    expect_refused(m, &s, "Prometheus' own");
    const char *twice[] = {"queue", "name", "queue"};
    s.label_names = twice;
    s.label_count = 3;
    expect_refused(m, &s, "given twice");
    const char *empty[] = {"queue", ""};
    s.label_names = empty;
    s.label_count = 2;
    expect_refused(m, &s, "is empty");
    s.label_names = NULL;
    expect_refused(m, &s, "no label_names");
    const char *nine[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
    s.label_names = nine;
    s.label_count = 9;
    expect_refused(m, &s, "FERRY_METRICS_LABELS_MAX");
    s.label_count = 8; /* the largest that passes */
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_register(m, &s, NULL, &err), 0);

    /* buckets */
    ferry_metrics_spec h;
    ferry_metrics_spec_init(&h);
    h.kind = FERRY_METRICS_HISTOGRAM;
    h.name = "ferry_h_seconds";
    h.help = "h";
    const char *le[] = {"le"};
    h.label_names = le;
    h.label_count = 1;
    expect_refused(m, &h, "\"le\" is the histogram's bucket label");
    h.label_count = 0;
    h.label_names = NULL;
    double down[] = {1, 0.5};
    h.buckets = down;
    h.bucket_count = 2;
    expect_refused(m, &h, "increase strictly");
    double same[] = {1, 1};
    h.buckets = same;
    expect_refused(m, &h, "increase strictly");
    double inf[] = {1, INFINITY};
    h.buckets = inf;
    expect_refused(m, &h, "+Inf bucket is implied");
    double nan_[] = {NAN};
    h.buckets = nan_;
    h.bucket_count = 1;
    expect_refused(m, &h, "not finite");
    h.bucket_count = 0;
    expect_refused(m, &h, "bucket_count must be 1..");
    h.buckets = NULL;
    h.bucket_count = 3;
    expect_refused(m, &h, "no buckets");
    double many[FERRY_METRICS_BUCKETS_MAX + 1];
    for (int i = 0; i <= FERRY_METRICS_BUCKETS_MAX; i++)
        many[i] = i;
    h.buckets = many;
    h.bucket_count = FERRY_METRICS_BUCKETS_MAX + 1;
    expect_refused(m, &h, "FERRY_METRICS_BUCKETS_MAX");
    h.bucket_count = FERRY_METRICS_BUCKETS_MAX;
    assert_int_equal(ferry_metrics_register(m, &h, NULL, &err), 0);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = "ferry_g";
    s.label_count = 0;
    s.buckets = many;
    s.bucket_count = 2;
    expect_refused(m, &s, "buckets are for histograms only");
    s.buckets = NULL;
    s.bucket_count = 0;
    s.max_series = FERRY_METRICS_SERIES_MAX + 1;
    expect_refused(m, &s, "FERRY_METRICS_SERIES_MAX");

    /* options */
    ferry_metrics_options o;
    ferry_metrics_options_init(&o);
    o.max_series = FERRY_METRICS_SERIES_MAX + 1;
    ferry_metrics *m2 = (ferry_metrics *)&o;
    assert_int_equal(ferry_metrics_create(&o, &m2, &err), FERRY_EINVAL);
    assert_null(m2);
    assert_non_null(strstr(err.message, "FERRY_METRICS_SERIES_MAX"));
    assert_int_equal(ferry_metrics_create(NULL, NULL, &err), FERRY_EINVAL);
    assert_int_equal(ferry_metrics_register(NULL, &s, NULL, &err), FERRY_EINVAL);
    ferry_metrics_destroy(NULL);
    ferry_metrics_destroy(m);
}

/* ---- series --------------------------------------------------------------------------- */

static void test_lookup_and_kinds(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    const char *ql[] = {"queue", "outcome"};
    ferry_metrics_family *c =
        reg(m, FERRY_METRICS_COUNTER, "ferry_jobs_processed_total", "h", ql, 2);
    assert_ptr_equal(ferry_metrics_family_find(m, "ferry_jobs_processed_total"), c);
    assert_null(ferry_metrics_family_find(m, "ferry_nope"));
    ferry_error err = {0};
    const char *v1[] = {"mail", "completed"};
    ferry_metrics_counter *a, *b;
    assert_int_equal(ferry_metrics_counter_with(c, v1, &a, &err), 0);
    char q[] = "mail", o[] = "completed"; /* other storage, same text */
    const char *v2[] = {q, o};
    assert_int_equal(ferry_metrics_counter_with(c, v2, &b, &err), 0);
    assert_ptr_equal(a, b);
    ferry_metrics_counter_add(a, 2);
    ferry_metrics_counter_add(b, 3);
    assert_int_equal(ferry_metrics_counter_value(a), 5);

    /* wrong kind, missing or bad values: refused, *out NULL, and NULL updates are no-ops */
    ferry_metrics_gauge *g = (ferry_metrics_gauge *)&err;
    assert_int_equal(ferry_metrics_gauge_with(c, v1, &g, &err), FERRY_EINVAL);
    assert_null(g);
    assert_non_null(strstr(err.message, "is a counter, not a gauge"));
    assert_int_equal(ferry_metrics_counter_with(c, NULL, &a, &err), FERRY_EINVAL);
    assert_null(a);
    const char *null_value[] = {"mail", NULL};
    assert_int_equal(ferry_metrics_counter_with(c, null_value, &a, &err), FERRY_EINVAL);
    const char *bad_utf8[] = {"mail\xff", "x"};
    assert_int_equal(ferry_metrics_counter_with(c, bad_utf8, &a, &err), FERRY_EINVAL);
    assert_non_null(strstr(err.message, "value of label queue is not UTF-8"));
    char big[FERRY_METRICS_LABEL_VALUE_MAX + 2];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *too_long[] = {big, "x"};
    assert_int_equal(ferry_metrics_counter_with(c, too_long, &a, &err), FERRY_EINVAL);
    assert_non_null(strstr(err.message, "FERRY_METRICS_LABEL_VALUE_MAX"));
    big[FERRY_METRICS_LABEL_VALUE_MAX] = '\0';
    assert_int_equal(ferry_metrics_counter_with(c, too_long, &a, &err), 0);
    assert_int_equal(ferry_metrics_counter_with(NULL, v1, &a, &err), FERRY_EINVAL);
    ferry_metrics_counter_add(NULL, 1);
    ferry_metrics_gauge_set(NULL, 1);
    ferry_metrics_gauge_add(NULL, 1);
    ferry_metrics_histogram_observe(NULL, 1);
    assert_int_equal(ferry_metrics_counter_value(NULL), 0);
    assert_int_equal(ferry_metrics_histogram_count(NULL), 0);

    /* an unlabelled family: its one series, values NULL */
    ferry_metrics_family *gf = reg(m, FERRY_METRICS_GAUGE, "ferry_worker_slots", "h", NULL, 0);
    ferry_metrics_gauge *g1, *g2;
    assert_int_equal(ferry_metrics_gauge_with(gf, NULL, &g1, &err), 0);
    assert_int_equal(ferry_metrics_gauge_with(gf, NULL, &g2, &err), 0);
    assert_ptr_equal(g1, g2);
    ferry_metrics_gauge_set(g1, 10);
    ferry_metrics_gauge_add(g1, -2.5);
    assert_true(ferry_metrics_gauge_value(g1) == 7.5);
    ferry_metrics_destroy(m);
}

static void test_label_bound(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(3);
    const char *l[] = {"queue", "name"};
    ferry_metrics_family *f = reg(m, FERRY_METRICS_COUNTER, "ferry_jobs_total", "Jobs", l, 2);
    ferry_error err = {0};
    ferry_metrics_counter *s[6];
    for (int i = 0; i < 6; i++) {
        char q[16];
        snprintf(q, sizeof q, "q%d", i);
        const char *v[] = {q, "n"};
        assert_int_equal(ferry_metrics_counter_with(f, v, &s[i], &err), 0);
        ferry_metrics_counter_add(s[i], (uint64_t)i + 1);
    }
    /* three real series, then every new combination folded into one "other" series */
    assert_ptr_not_equal(s[0], s[1]);
    assert_ptr_not_equal(s[1], s[2]);
    assert_ptr_not_equal(s[2], s[3]);
    assert_ptr_equal(s[3], s[4]);
    assert_ptr_equal(s[4], s[5]);
    assert_int_equal(ferry_metrics_counter_value(s[3]), 4 + 5 + 6);
    /* combinations seen before the bound keep their own series */
    const char *v1[] = {"q1", "n"};
    ferry_metrics_counter *again;
    assert_int_equal(ferry_metrics_counter_with(f, v1, &again, &err), 0);
    assert_ptr_equal(again, s[1]);
    expect_render(m,
                  FOLDED_HEAD "ferry_metrics_folded_series_total{family=\"ferry_jobs_total\"} 3\n"
                              "# HELP ferry_jobs_total Jobs\n"
                              "# TYPE ferry_jobs_total counter\n"
                              "ferry_jobs_total{queue=\"q0\",name=\"n\"} 1\n"
                              "ferry_jobs_total{queue=\"q1\",name=\"n\"} 2\n"
                              "ferry_jobs_total{queue=\"q2\",name=\"n\"} 3\n"
                              "ferry_jobs_total{queue=\"other\",name=\"other\"} 15\n");

    /* the spec's bound wins over the registry's; an "other" combination looked up before
     * the bound is the overflow series too */
    ferry_metrics_spec sp;
    ferry_metrics_spec_init(&sp);
    sp.kind = FERRY_METRICS_GAUGE;
    sp.name = "ferry_g";
    sp.help = "g";
    sp.label_names = l;
    sp.label_count = 2;
    sp.max_series = 1;
    ferry_metrics_family *g;
    assert_int_equal(ferry_metrics_register(m, &sp, &g, &err), 0);
    const char *other[] = {"other", "other"}, *x[] = {"x", "y"};
    ferry_metrics_gauge *go, *gx;
    assert_int_equal(ferry_metrics_gauge_with(g, other, &go, &err), 0);
    assert_int_equal(ferry_metrics_gauge_with(g, x, &gx, &err), 0);
    assert_ptr_equal(go, gx);
    ferry_metrics_destroy(m);
}

static void test_escaping(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    const char *l[] = {"queue"};
    ferry_metrics_family *f =
        reg(m, FERRY_METRICS_GAUGE, "ferry_queue_paused", "Paused \\ or \"not\"", l, 1);
    ferry_error err = {0};
    const char *v[] = {"a\\b\"c\nd \xc3\xa9"};
    ferry_metrics_gauge *g;
    assert_int_equal(ferry_metrics_gauge_with(f, v, &g, &err), 0);
    ferry_metrics_gauge_set(g, 1);
    expect_render(m,
                  FOLDED_HEAD "ferry_metrics_folded_series_total{family=\"ferry_queue_paused\"} 0\n"
                              "# HELP ferry_queue_paused Paused \\\\ or \"not\"\n"
                              "# TYPE ferry_queue_paused gauge\n"
                              "ferry_queue_paused{queue=\"a\\\\b\\\"c\\nd \xc3\xa9\"} 1\n");
    ferry_metrics_destroy(m);
}

static void test_histogram(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_job_duration_seconds";
    s.help = "Duration";
    double b[] = {0.1, 0.5, 1};
    s.buckets = b;
    s.bucket_count = 3;
    ferry_metrics_family *f;
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_register(m, &s, &f, &err), 0);
    ferry_metrics_histogram *h;
    assert_int_equal(ferry_metrics_histogram_with(f, NULL, &h, &err), 0);
    /* bounds are upper-inclusive: 0.1 goes to le="0.1" */
    double obs[] = {0.05, 0.1, 0.3, 0.5, 0.75, 1, 2, -1, NAN};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        ferry_metrics_histogram_observe(h, obs[i]);
    assert_int_equal(ferry_metrics_histogram_count(h), 8); /* NaN ignored */
    assert_true(fabs(ferry_metrics_histogram_sum(h) - 3.7) < 1e-12);
    char *text = render(m);
    const char *want = "# HELP ferry_job_duration_seconds Duration\n"
                       "# TYPE ferry_job_duration_seconds histogram\n"
                       "ferry_job_duration_seconds_bucket{le=\"0.1\"} 3\n"
                       "ferry_job_duration_seconds_bucket{le=\"0.5\"} 5\n"
                       "ferry_job_duration_seconds_bucket{le=\"1\"} 7\n"
                       "ferry_job_duration_seconds_bucket{le=\"+Inf\"} 8\n"
                       "ferry_job_duration_seconds_sum 3.7\n"
                       "ferry_job_duration_seconds_count 8\n";
    if (!strstr(text, want)) fail_msg("render gave\n%s\nwant in it\n%s", text, want);
    free(text);

    /* default buckets, with labels; +Inf observations */
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_job_wait_seconds";
    s.help = "Wait";
    const char *l[] = {"queue"};
    s.label_names = l;
    s.label_count = 1;
    assert_int_equal(ferry_metrics_register(m, &s, &f, &err), 0);
    const char *v[] = {"q"};
    assert_int_equal(ferry_metrics_histogram_with(f, v, &h, &err), 0);
    ferry_metrics_histogram_observe(h, 0.005);
    ferry_metrics_histogram_observe(h, 7);
    ferry_metrics_histogram_observe(h, INFINITY);
    text = render(m);
    want = "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.005\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.01\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.025\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.05\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.1\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.25\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"0.5\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"1\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"2.5\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"5\"} 1\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"10\"} 2\n"
           "ferry_job_wait_seconds_bucket{queue=\"q\",le=\"+Inf\"} 3\n"
           "ferry_job_wait_seconds_sum{queue=\"q\"} +Inf\n"
           "ferry_job_wait_seconds_count{queue=\"q\"} 3\n";
    if (!strstr(text, want)) fail_msg("render gave\n%s\nwant in it\n%s", text, want);
    free(text);
    ferry_metrics_destroy(m);
}

/* ---- concurrency ---------------------------------------------------------------------- */

#define THREADS 8
#define ROUNDS 100000

typedef struct {
    ferry_metrics *registry;
    ferry_metrics_family *counters, *gauges, *hists;
    int id;
} worker_arg;

static void *hammer(void *p) {
    worker_arg *a = p;
    ferry_error err = {0};
    /* every thread looks the same series up itself (the lookup races too) */
    const char *v[] = {"shared"};
    ferry_metrics_counter *c;
    ferry_metrics_gauge *g;
    ferry_metrics_histogram *h;
    if (ferry_metrics_counter_with(a->counters, v, &c, &err) ||
        ferry_metrics_gauge_with(a->gauges, v, &g, &err) ||
        ferry_metrics_histogram_with(a->hists, v, &h, &err))
        return "lookup failed";
    for (int i = 0; i < ROUNDS; i++) {
        ferry_metrics_counter_add(c, 1);
        ferry_metrics_gauge_add(g, 1);
        ferry_metrics_histogram_observe(h, (i % 4) * 0.5); /* 0, .5, 1, 1.5: exact sums */
        if (i % 1000 == 0) {
            /* new series and renders while others update */
            char own[32];
            snprintf(own, sizeof own, "t%d-%d", a->id, i / 1000);
            const char *ov[] = {own};
            ferry_metrics_counter *oc;
            if (ferry_metrics_counter_with(a->counters, ov, &oc, &err)) return "lookup failed";
            ferry_metrics_counter_add(oc, 1);
            if (i % 20000 == 0) {
                char *text;
                if (ferry_metrics_render(a->registry, &text, NULL, &err)) return "render failed";
                free(text);
            }
        }
    }
    return NULL;
}

static void test_concurrent_updates(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(FERRY_METRICS_SERIES_MAX);
    const char *l[] = {"who"};
    worker_arg args[THREADS];
    ferry_metrics_family *c = reg(m, FERRY_METRICS_COUNTER, "ferry_ops_total", "h", l, 1);
    ferry_metrics_family *g = reg(m, FERRY_METRICS_GAUGE, "ferry_ops", "h", l, 1);
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_op_seconds";
    s.help = "h";
    s.label_names = l;
    s.label_count = 1;
    double b[] = {0.5, 1};
    s.buckets = b;
    s.bucket_count = 2;
    ferry_metrics_family *h;
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_register(m, &s, &h, &err), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){.registry = m, .counters = c, .gauges = g, .hists = h, .id = i};
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        if (ret) fail_msg("thread %d: %s", i, (const char *)ret);
    }
    const char *v[] = {"shared"};
    ferry_metrics_counter *cs;
    ferry_metrics_gauge *gs;
    ferry_metrics_histogram *hs;
    assert_int_equal(ferry_metrics_counter_with(c, v, &cs, &err), 0);
    assert_int_equal(ferry_metrics_gauge_with(g, v, &gs, &err), 0);
    assert_int_equal(ferry_metrics_histogram_with(h, v, &hs, &err), 0);
    const uint64_t n = (uint64_t)THREADS * ROUNDS;
    assert_int_equal(ferry_metrics_counter_value(cs), n);
    assert_true(ferry_metrics_gauge_value(gs) == (double)n);
    assert_int_equal(ferry_metrics_histogram_count(hs), n);
    /* each thread: ROUNDS/4 of each of 0, .5, 1, 1.5 = ROUNDS/4 * 3 */
    assert_true(ferry_metrics_histogram_sum(hs) == (double)THREADS * (ROUNDS / 4) * 3.0);
    char *text = render(m);
    char want[256];
    snprintf(want, sizeof want,
             "ferry_op_seconds_bucket{who=\"shared\",le=\"0.5\"} %llu\n"
             "ferry_op_seconds_bucket{who=\"shared\",le=\"1\"} %llu\n"
             "ferry_op_seconds_bucket{who=\"shared\",le=\"+Inf\"} %llu\n",
             (unsigned long long)n / 2, (unsigned long long)n / 4 * 3, (unsigned long long)n);
    if (!strstr(text, want)) fail_msg("render gave\n%.2000s\nwant in it\n%s", text, want);
    /* every thread's own series exists once, with 1 */
    assert_non_null(strstr(text, "ferry_ops_total{who=\"t7-99\"} 1\n"));
    free(text);
    ferry_metrics_destroy(m);
}

/* ---- rendering ------------------------------------------------------------------------ */

static double computed(void *userdata) {
    return *(double *)userdata;
}

/* a registry with one of everything, rendered exactly */
static void test_render_exact(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_build_info(m, &err), 0);
    assert_int_equal(ferry_metrics_build_info(m, &err), FERRY_EINVAL); /* once */
    const char *l[] = {"queue", "outcome"};
    ferry_metrics_family *c =
        reg(m, FERRY_METRICS_COUNTER, "ferry_jobs_processed_total", "Jobs processed", l, 2);
    ferry_metrics_family *busy =
        reg(m, FERRY_METRICS_GAUGE, "ferry_worker_busy_slots", "Busy slots", NULL, 0);
    ferry_metrics_family *age =
        reg(m, FERRY_METRICS_GAUGE, "ferry_queue_oldest_ready_age_seconds", "Age", l, 1);
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_relay_batch_duration_seconds";
    s.help = "Batch";
    double b[] = {0.25, 2};
    s.buckets = b;
    s.bucket_count = 2;
    ferry_metrics_family *hf;
    assert_int_equal(ferry_metrics_register(m, &s, &hf, &err), 0);

    const char *v1[] = {"mail", "completed"}, *v2[] = {"mail", "failed"};
    ferry_metrics_counter *c1, *c2;
    assert_int_equal(ferry_metrics_counter_with(c, v1, &c1, &err), 0);
    assert_int_equal(ferry_metrics_counter_with(c, v2, &c2, &err), 0);
    ferry_metrics_counter_add(c1, 41);
    ferry_metrics_counter_add(c1, 1);
    ferry_metrics_gauge *g;
    assert_int_equal(ferry_metrics_gauge_with(busy, NULL, &g, &err), 0);
    ferry_metrics_gauge_set(g, 0.1);
    double age_now = 12.5;
    const char *qv[] = {"mail"};
    assert_int_equal(ferry_metrics_gauge_callback(age, qv, computed, &age_now, &err), 0);
    ferry_metrics_histogram *h;
    assert_int_equal(ferry_metrics_histogram_with(hf, NULL, &h, &err), 0);
    ferry_metrics_histogram_observe(h, 0.125);
    ferry_metrics_histogram_observe(h, 3);
    char want[2048];
    snprintf(
        want, sizeof want,
        FOLDED_HEAD
        "ferry_metrics_folded_series_total{family=\"ferry_build_info\"} 0\n"
        "ferry_metrics_folded_series_total{family=\"ferry_jobs_processed_total\"} 0\n"
        "ferry_metrics_folded_series_total{family=\"ferry_queue_oldest_ready_age_seconds\"} 0\n"
        "# HELP ferry_build_info The ferry library's version and the BullMQ release it "
        "speaks (always 1)\n"
        "# TYPE ferry_build_info gauge\n"
        "ferry_build_info{version=\"%s\",bullmq=\"%s\"} 1\n"
        "# HELP ferry_jobs_processed_total Jobs processed\n"
        "# TYPE ferry_jobs_processed_total counter\n"
        "ferry_jobs_processed_total{queue=\"mail\",outcome=\"completed\"} 42\n"
        "ferry_jobs_processed_total{queue=\"mail\",outcome=\"failed\"} 0\n"
        "# HELP ferry_worker_busy_slots Busy slots\n"
        "# TYPE ferry_worker_busy_slots gauge\n"
        "ferry_worker_busy_slots 0.1\n"
        "# HELP ferry_queue_oldest_ready_age_seconds Age\n"
        "# TYPE ferry_queue_oldest_ready_age_seconds gauge\n"
        "ferry_queue_oldest_ready_age_seconds{queue=\"mail\"} 12.5\n"
        "# HELP ferry_relay_batch_duration_seconds Batch\n"
        "# TYPE ferry_relay_batch_duration_seconds histogram\n"
        "ferry_relay_batch_duration_seconds_bucket{le=\"0.25\"} 1\n"
        "ferry_relay_batch_duration_seconds_bucket{le=\"2\"} 1\n"
        "ferry_relay_batch_duration_seconds_bucket{le=\"+Inf\"} 2\n"
        "ferry_relay_batch_duration_seconds_sum 3.125\n"
        "ferry_relay_batch_duration_seconds_count 2\n",
        ferry_version(), FERRY_BULLMQ_VERSION);
    expect_render(m, want);
    /* the callback runs at every rendering */
    age_now = 13;
    char *text = render(m);
    assert_non_null(strstr(text, "ferry_queue_oldest_ready_age_seconds{queue=\"mail\"} 13\n"));
    free(text);

    /* into the caller's buffer: too small says how much it needs, exactly enough fits */
    size_t need = 0;
    char small[16];
    assert_int_equal(ferry_metrics_render_to(m, small, sizeof small, &need, &err), FERRY_ETOOBIG);
    assert_string_equal(small, "");
    char *buf = malloc(need);
    size_t len = 0;
    assert_int_equal(ferry_metrics_render_to(m, buf, need - 1, &len, &err), FERRY_ETOOBIG);
    assert_int_equal(ferry_metrics_render_to(m, buf, need, &len, &err), 0);
    assert_int_equal(len, need - 1);
    text = render(m);
    assert_string_equal(buf, text);
    free(text);
    free(buf);
    assert_int_equal(ferry_metrics_render_to(m, NULL, 0, &need, &err), FERRY_ETOOBIG);
    assert_int_equal(ferry_metrics_render(NULL, &text, NULL, &err), FERRY_EINVAL);
    ferry_metrics_destroy(m);
}

/* doubles as Prometheus reads them: shortest round trip, Inf / NaN spelled its way */
static void test_numbers(void **state) {
    (void)state;
    ferry_metrics *m = new_registry(0);
    const char *l[] = {"k"};
    ferry_metrics_family *f = reg(m, FERRY_METRICS_GAUGE, "ferry_n", "n", l, 1);
    const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {-0.0, "-0"},
        {1, "1"},
        {0.1, "0.1"},
        {1.0 / 3, "0.3333333333333333"},
        {1e21, "1e+21"},
        {-2.5e-7, "-2.5e-07"},
        {1234567890123, "1234567890123"},
        {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"},
        {NAN, "NaN"},
    };
    ferry_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char k[8];
        snprintf(k, sizeof k, "%zu", i);
        const char *v[] = {k};
        ferry_metrics_gauge *g;
        assert_int_equal(ferry_metrics_gauge_with(f, v, &g, &err), 0);
        ferry_metrics_gauge_set(g, cases[i].v);
    }
    char *text = render(m);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "ferry_n{k=\"%zu\"} %s\n", i, cases[i].text);
        if (!strstr(text, line)) fail_msg("no line \"%s\" in\n%s", line, text);
    }
    free(text);
    ferry_metrics_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_help_labels_buckets),
        cmocka_unit_test(test_lookup_and_kinds),
        cmocka_unit_test(test_label_bound),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_concurrent_updates),
        cmocka_unit_test(test_render_exact),
        cmocka_unit_test(test_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
