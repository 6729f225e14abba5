/* names.c - the naming rules of a metric family, checked at registration: Prometheus'
 * conventions ("ferry_" prefix, base units, "_total" only on counters), the label names,
 * help text and histogram buckets. Pure; every refusal names the rule it breaks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "util/error.h"
#include "util/printable.h"
#include "util/utf8.h"

/* Name parts that are units other than the base ones, with the base unit to use. */
static const struct {
    const char *token;
    const char *use;
} not_base_units[] = {
    {"ms", "seconds"},
    {"msec", "seconds"},
    {"millis", "seconds"},
    {"milliseconds", "seconds"},
    {"us", "seconds"},
    {"usec", "seconds"},
    {"microseconds", "seconds"},
    {"ns", "seconds"},
    {"nsec", "seconds"},
    {"nanoseconds", "seconds"},
    {"sec", "seconds"},
    {"secs", "seconds"},
    {"minute", "seconds"},
    {"minutes", "seconds"},
    {"mins", "seconds"},
    {"hour", "seconds"},
    {"hours", "seconds"},
    {"day", "seconds"},
    {"days", "seconds"},
    {"kb", "bytes"},
    {"kib", "bytes"},
    {"kilobytes", "bytes"},
    {"mb", "bytes"},
    {"mib", "bytes"},
    {"megabytes", "bytes"},
    {"gb", "bytes"},
    {"gib", "bytes"},
    {"gigabytes", "bytes"},
    {"percent", "ratio (0..1)"},
    {"pct", "ratio (0..1)"},
};

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static int check_name(const ferry_metrics_spec *s, ferry_error *err) {
    const char *name = s->name;
    if (!name || !*name) return ferry__err(err, FERRY_EINVAL, "metric name is empty");
    char shown[FERRY_METRICS_NAME_MAX + 16];
    ferryx_printable(name, shown, sizeof shown);
    size_t n = strlen(name);
    if (n > FERRY_METRICS_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric name \"%s\": longer than FERRY_METRICS_NAME_MAX (%d bytes)",
                          shown, FERRY_METRICS_NAME_MAX);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return ferry__err(err, FERRY_EINVAL,
                              "metric name \"%s\": only lower-case letters, digits and '_' "
                              "(byte %zu)",
                              shown, i);
    }
    if (strncmp(name, "ferry_", 6) != 0 || n == 6)
        return ferry__err(err, FERRY_EINVAL, "metric name \"%s\": must start with \"ferry_\"",
                          shown);
    if (strstr(name, "__") || name[n - 1] == '_')
        return ferry__err(err, FERRY_EINVAL,
                          "metric name \"%s\": no empty part (\"__\" or a trailing '_')", shown);
    /* every '_'-separated part against the units that are not base units */
    for (const char *p = name; *p;) {
        const char *q = strchr(p, '_');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        for (size_t u = 0; u < sizeof not_base_units / sizeof not_base_units[0]; u++) {
            if (strlen(not_base_units[u].token) == len &&
                memcmp(p, not_base_units[u].token, len) == 0)
                return ferry__err(err, FERRY_EINVAL,
                                  "metric name \"%s\": \"%s\" is not a base unit (use %s)", shown,
                                  not_base_units[u].token, not_base_units[u].use);
        }
        p += len;
        if (*p == '_') p++;
    }
    int total = ends_with(name, "_total");
    if (s->kind == FERRY_METRICS_COUNTER && !total)
        return ferry__err(err, FERRY_EINVAL,
                          "metric name \"%s\": a counter's name ends in \"_total\"", shown);
    if (s->kind == FERRY_METRICS_COUNTER && n == strlen("ferry__total") - 1)
        return ferry__err(err, FERRY_EINVAL,
                          "metric name \"%s\": nothing between \"ferry_\" and \"_total\"", shown);
    if (s->kind != FERRY_METRICS_COUNTER && total)
        return ferry__err(err, FERRY_EINVAL, "metric name \"%s\": \"_total\" is only for counters",
                          shown);
    if (s->kind == FERRY_METRICS_HISTOGRAM &&
        (ends_with(name, "_bucket") || ends_with(name, "_sum") || ends_with(name, "_count")))
        return ferry__err(err, FERRY_EINVAL,
                          "metric name \"%s\": a histogram's name does not end in _bucket, _sum "
                          "or _count (its series do)",
                          shown);
    return 0;
}

static int check_help(const char *name, const char *help, ferry_error *err) {
    if (!help || !*help)
        return ferry__err(err, FERRY_EINVAL, "metric %s: help text is empty", name);
    size_t n = strlen(help);
    if (n > FERRY_METRICS_HELP_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: help text longer than FERRY_METRICS_HELP_MAX (%d bytes)",
                          name, FERRY_METRICS_HELP_MAX);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)help[i];
        if (c < 0x20 || c == 0x7f)
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: help text is one line without control characters "
                              "(byte %zu)",
                              name, i);
        size_t k = ferryx_utf8_seq((const unsigned char *)help + i, n - i);
        if (!k)
            return ferry__err(err, FERRY_EINVAL, "metric %s: help text is not UTF-8 (byte %zu)",
                              name, i);
        i += k;
    }
    return 0;
}

static int check_labels(const ferry_metrics_spec *s, ferry_error *err) {
    if (s->label_count > FERRY_METRICS_LABELS_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: %zu labels, more than FERRY_METRICS_LABELS_MAX (%d)", s->name,
                          s->label_count, FERRY_METRICS_LABELS_MAX);
    if (s->label_count && !s->label_names)
        return ferry__err(err, FERRY_EINVAL, "metric %s: label_count %zu but no label_names",
                          s->name, s->label_count);
    for (size_t i = 0; i < s->label_count; i++) {
        const char *l = s->label_names[i];
        if (!l || !*l)
            return ferry__err(err, FERRY_EINVAL, "metric %s: label name %zu is empty", s->name, i);
        char shown[FERRY_METRICS_LABEL_NAME_MAX + 16];
        ferryx_printable(l, shown, sizeof shown);
        size_t n = strlen(l);
        if (n > FERRY_METRICS_LABEL_NAME_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: label name \"%s\" longer than "
                              "FERRY_METRICS_LABEL_NAME_MAX (%d bytes)",
                              s->name, shown, FERRY_METRICS_LABEL_NAME_MAX);
        for (size_t k = 0; k < n; k++) {
            char c = l[k];
            int ok = (c >= 'a' && c <= 'z') || c == '_' || (k > 0 && c >= '0' && c <= '9');
            if (!ok)
                return ferry__err(err, FERRY_EINVAL,
                                  "metric %s: label name \"%s\" is not [a-z_][a-z0-9_]*", s->name,
                                  shown);
        }
        if (strncmp(l, "__", 2) == 0)
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: label name \"%s\": names starting with \"__\" are "
                              "Prometheus' own",
                              s->name, shown);
        if (s->kind == FERRY_METRICS_HISTOGRAM && strcmp(l, "le") == 0)
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: label name \"le\" is the histogram's bucket label",
                              s->name);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->label_names[j], l) == 0)
                return ferry__err(err, FERRY_EINVAL, "metric %s: label name \"%s\" given twice",
                                  s->name, shown);
    }
    return 0;
}

static int check_buckets(const ferry_metrics_spec *s, ferry_error *err) {
    if (s->kind != FERRY_METRICS_HISTOGRAM) {
        if (s->buckets || s->bucket_count)
            return ferry__err(err, FERRY_EINVAL, "metric %s: buckets are for histograms only",
                              s->name);
        return 0;
    }
    if (!s->buckets) {
        if (s->bucket_count)
            return ferry__err(err, FERRY_EINVAL, "metric %s: bucket_count %zu but no buckets",
                              s->name, s->bucket_count);
        return 0;
    }
    if (s->bucket_count < 1 || s->bucket_count > FERRY_METRICS_BUCKETS_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: bucket_count must be 1..FERRY_METRICS_BUCKETS_MAX (%d), "
                          "got %zu",
                          s->name, FERRY_METRICS_BUCKETS_MAX, s->bucket_count);
    for (size_t i = 0; i < s->bucket_count; i++) {
        if (!isfinite(s->buckets[i]))
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: bucket %zu is not finite (the +Inf bucket is implied)",
                              s->name, i);
        if (i > 0 && !(s->buckets[i] > s->buckets[i - 1]))
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: bucket bounds must increase strictly (bucket %zu)",
                              s->name, i);
    }
    return 0;
}

int ferry__metrics_check_spec(const ferry_metrics_spec *s, ferry_error *err) {
    if (!s) return ferry__err(err, FERRY_EINVAL, "metrics register: spec is NULL");
    if (s->kind != FERRY_METRICS_COUNTER && s->kind != FERRY_METRICS_GAUGE &&
        s->kind != FERRY_METRICS_HISTOGRAM)
        return ferry__err(err, FERRY_EINVAL,
                          "metrics register: kind %d is not a counter, gauge or histogram",
                          s->kind);
    int rc = check_name(s, err);
    if (rc) return rc;
    if ((rc = check_help(s->name, s->help, err))) return rc;
    if ((rc = check_labels(s, err))) return rc;
    if ((rc = check_buckets(s, err))) return rc;
    if (s->max_series > FERRY_METRICS_SERIES_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: max_series %zu over FERRY_METRICS_SERIES_MAX (%d)", s->name,
                          s->max_series, FERRY_METRICS_SERIES_MAX);
    return 0;
}

int ferry__metrics_check_value(const struct ferry_metrics_family *f, size_t i, const char *v,
                               ferry_error *err) {
    if (!v)
        return ferry__err(err, FERRY_EINVAL, "metric %s: value of label %s is NULL", f->name,
                          f->labels[i]);
    size_t n = strlen(v);
    if (n > FERRY_METRICS_LABEL_VALUE_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: value of label %s longer than "
                          "FERRY_METRICS_LABEL_VALUE_MAX (%d bytes)",
                          f->name, f->labels[i], FERRY_METRICS_LABEL_VALUE_MAX);
    for (size_t k = 0; k < n;) {
        size_t len = ferryx_utf8_seq((const unsigned char *)v + k, n - k);
        if (!len)
            return ferry__err(err, FERRY_EINVAL,
                              "metric %s: value of label %s is not UTF-8 (byte %zu)", f->name,
                              f->labels[i], k);
        k += len;
    }
    return 0;
}
