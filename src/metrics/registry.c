/* registry.c - the metrics registry: families registered under the mutex, series looked up
 * (or created) under it, with the label bound and its overflow series. The updates
 * themselves are in update.c and take no lock. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "metrics/metrics_module.h"
#include "util/error.h"

#define SERIES_ALIGN 64 /* bytes of a cache line */

static const double default_buckets[] = {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

void ferry_metrics_options_init(ferry_metrics_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

void ferry_metrics_spec_init(ferry_metrics_spec *s) {
    if (s) memset(s, 0, sizeof *s);
}

static void series_free(ferry__mseries *s) {
    free(s); /* one allocation: values and buckets inside */
}

static void family_free(struct ferry_metrics_family *f) {
    if (!f) return;
    for (size_t i = 0; i < f->series_count; i++)
        series_free(f->series[i]);
    free(f->series);
    free(f->table);
    free(f->labels); /* one allocation: the label names inside */
    free(f->bounds);
    free(f->help);
    free(f->name);
    free(f);
}

void ferry_metrics_destroy(ferry_metrics *m) {
    if (!m) return;
    for (size_t i = 0; i < m->family_count; i++)
        family_free(m->families[i]);
    free(m->families);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* FNV-1a over the values, each followed by a 0xff byte (which UTF-8 never holds). */
static uint64_t values_hash(const char *const *values, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++) {
            h ^= *p;
            h *= 1099511628211ull;
        }
        h ^= 0xff;
        h *= 1099511628211ull;
    }
    return h;
}

static int values_equal(const ferry__mseries *s, const char *const *values, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(s->values[i], values[i]) != 0) return 0;
    return 1;
}

static ferry__mseries *table_find(const struct ferry_metrics_family *f, uint64_t h,
                                  const char *const *values) {
    if (!f->table_cap) return NULL;
    size_t mask = f->table_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        ferry__mseries *s = f->table[i];
        if (!s) return NULL;
        if (s->hash == h && values_equal(s, values, f->label_count)) return s;
    }
}

static void table_put(ferry__mseries **table, size_t cap, ferry__mseries *s) {
    size_t mask = cap - 1;
    size_t i = (size_t)s->hash & mask;
    while (table[i])
        i = (i + 1) & mask;
    table[i] = s;
}

/* Room for one more series in series[] and the table (load at most 1/2). 0 or -1. */
static int family_reserve(struct ferry_metrics_family *f) {
    if (f->series_count == f->series_cap) {
        size_t cap = f->series_cap ? f->series_cap * 2 : 8;
        ferry__mseries **a = realloc(f->series, cap * sizeof *a);
        if (!a) return -1;
        f->series = a;
        f->series_cap = cap;
    }
    if ((f->series_count + 1) * 2 > f->table_cap) {
        size_t cap = f->table_cap ? f->table_cap * 2 : 16;
        ferry__mseries **t = calloc(cap, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < f->series_count; i++)
            table_put(t, cap, f->series[i]);
        free(f->table);
        f->table = t;
        f->table_cap = cap;
    }
    return 0;
}

static ferry__mseries *series_new(struct ferry_metrics_family *f, uint64_t h,
                                  const char *const *values) {
    size_t nb = f->kind == FERRY_METRICS_HISTOGRAM ? f->bound_count + 1 : 0;
    size_t size =
        sizeof(ferry__mseries) + nb * sizeof(_Atomic uint64_t) + f->label_count * sizeof(char *);
    for (size_t i = 0; i < f->label_count; i++)
        size += strlen(values[i]) + 1;
    /* each series on cache lines of its own: threads updating different series do not
     * contend for one line */
    size = (size + SERIES_ALIGN - 1) / SERIES_ALIGN * SERIES_ALIGN;
    ferry__mseries *s = aligned_alloc(SERIES_ALIGN, size);
    if (!s) return NULL;
    memset(s, 0, size);
    unsigned char *p = (unsigned char *)(s + 1);
    if (nb) {
        s->buckets = (_Atomic uint64_t *)p;
        for (size_t i = 0; i < nb; i++)
            atomic_init(&s->buckets[i], 0);
        p += nb * sizeof(_Atomic uint64_t);
    }
    s->values = (char **)p;
    p += f->label_count * sizeof(char *);
    for (size_t i = 0; i < f->label_count; i++) {
        size_t n = strlen(values[i]) + 1;
        memcpy(p, values[i], n);
        s->values[i] = (char *)p;
        p += n;
    }
    atomic_init(&s->value, f->kind == FERRY_METRICS_COUNTER ? 0 : ferry__metrics_bits(0.0));
    atomic_init(&s->sum_bits, ferry__metrics_bits(0.0));
    s->family = f;
    s->hash = h;
    return s;
}

static ferry__mseries *family_add(struct ferry_metrics_family *f, uint64_t h,
                                  const char *const *values) {
    if (family_reserve(f)) return NULL;
    ferry__mseries *s = series_new(f, h, values);
    if (!s) return NULL;
    f->series[f->series_count++] = s;
    table_put(f->table, f->table_cap, s);
    return s;
}

ferry__mseries *ferry__metrics_series_locked(struct ferry_metrics_family *f,
                                             const char *const *values) {
    uint64_t h = values_hash(values, f->label_count);
    ferry__mseries *s = table_find(f, h, values);
    if (s) {
        s->dropped = 0;
        return s;
    }
    if (f->bounded_count < f->max_series) {
        s = family_add(f, h, values);
        if (s) f->bounded_count++;
        return s;
    }
    /* Past the bound: the overflow series, every value "other". */
    if (!f->overflow) {
        const char *other[FERRY_METRICS_LABELS_MAX];
        for (size_t i = 0; i < f->label_count; i++)
            other[i] = FERRY__METRICS_OTHER;
        uint64_t ho = values_hash(other, f->label_count);
        f->overflow = table_find(f, ho, other);
        if (!f->overflow) f->overflow = family_add(f, ho, other);
        if (!f->overflow) return NULL;
    }
    if (f->folded) atomic_fetch_add_explicit(&f->folded->value, 1, memory_order_relaxed);
    return f->overflow;
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The name is taken when it is a family's, or one of a histogram's series names. */
static int name_clashes(const ferry_metrics *m, const char *name, int kind, const char **with) {
    static const char *const parts[] = {"_bucket", "_sum", "_count"};
    size_t n = strlen(name);
    for (size_t i = 0; i < m->family_count; i++) {
        const struct ferry_metrics_family *f = m->families[i];
        size_t fn = strlen(f->name);
        *with = f->name;
        if (strcmp(f->name, name) == 0) return 1;
        for (size_t k = 0; k < 3; k++) {
            size_t pn = strlen(parts[k]);
            /* an existing histogram's series named like the new family */
            if (f->kind == FERRY_METRICS_HISTOGRAM && n == fn + pn &&
                memcmp(name, f->name, fn) == 0 && strcmp(name + fn, parts[k]) == 0)
                return 1;
            /* the new histogram's series named like an existing family */
            if (kind == FERRY_METRICS_HISTOGRAM && fn == n + pn && memcmp(f->name, name, n) == 0 &&
                strcmp(f->name + n, parts[k]) == 0)
                return 1;
        }
    }
    return 0;
}

static int family_new(ferry_metrics *m, const ferry_metrics_spec *s,
                      struct ferry_metrics_family **out) {
    struct ferry_metrics_family *f = calloc(1, sizeof *f);
    if (!f) return -1;
    f->registry = m;
    f->kind = s->kind;
    f->label_count = s->label_count;
    f->max_series = s->max_series ? s->max_series : m->max_series;
    f->name = dup_str(s->name);
    f->help = dup_str(s->help);
    size_t lsize = s->label_count * sizeof(char *) + 1;
    for (size_t i = 0; i < s->label_count; i++)
        lsize += strlen(s->label_names[i]) + 1;
    f->labels = malloc(lsize);
    if (!f->name || !f->help || !f->labels) goto fail;
    char *p = (char *)(f->labels + s->label_count);
    for (size_t i = 0; i < s->label_count; i++) {
        size_t n = strlen(s->label_names[i]) + 1;
        memcpy(p, s->label_names[i], n);
        f->labels[i] = p;
        p += n;
    }
    if (s->kind == FERRY_METRICS_HISTOGRAM) {
        const double *b = s->buckets ? s->buckets : default_buckets;
        size_t nb = s->buckets ? s->bucket_count : sizeof default_buckets / sizeof *b;
        f->bounds = malloc(nb * sizeof *b);
        if (!f->bounds) goto fail;
        memcpy(f->bounds, b, nb * sizeof *b);
        f->bound_count = nb;
    }
    /* an unlabelled family has its one series from the start */
    if (!s->label_count && !ferry__metrics_series_locked(f, NULL)) goto fail;
    *out = f;
    return 0;
fail:
    family_free(f);
    return -1;
}

static int register_locked(ferry_metrics *m, const ferry_metrics_spec *s,
                           ferry_metrics_family **out, ferry_error *err) {
    const char *with = NULL;
    if (name_clashes(m, s->name, s->kind, &with))
        return ferry__err(err, FERRY_EINVAL,
                          strcmp(with, s->name) == 0
                              ? "metric %s: already registered"
                              : "metric %s: clashes with metric %s (a histogram's series are "
                                "named <name>_bucket, _sum and _count)",
                          s->name, with);
    if (m->family_count == FERRY_METRICS_FAMILIES_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metric %s: the registry has FERRY_METRICS_FAMILIES_MAX (%d) families",
                          s->name, FERRY_METRICS_FAMILIES_MAX);
    struct ferry_metrics_family *f;
    if (family_new(m, s, &f))
        return ferry__err(err, FERRY_ENOMEM, "metric %s: out of memory", s->name);
    if (f->label_count && m->folded_family) {
        const char *v[1] = {f->name};
        f->folded = ferry__metrics_series_locked(m->folded_family, v);
        if (!f->folded) {
            family_free(f);
            return ferry__err(err, FERRY_ENOMEM, "metric %s: out of memory", s->name);
        }
    }
    m->families[m->family_count++] = f;
    if (out) *out = f;
    return 0;
}

int ferry_metrics_register(ferry_metrics *m, const ferry_metrics_spec *s,
                           ferry_metrics_family **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!m) return ferry__err(err, FERRY_EINVAL, "metrics register: registry is NULL");
    int rc = ferry__metrics_check_spec(s, err);
    if (rc) return rc;
    pthread_mutex_lock(&m->mu);
    rc = register_locked(m, s, out, err);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

int ferry_metrics_create(const ferry_metrics_options *o, ferry_metrics **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "metrics create: out is NULL");
    *out = NULL;
    size_t max_series = o && o->max_series ? o->max_series : FERRY_METRICS_SERIES_DEFAULT;
    if (max_series > FERRY_METRICS_SERIES_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "metrics create: max_series %zu over FERRY_METRICS_SERIES_MAX (%d)",
                          max_series, FERRY_METRICS_SERIES_MAX);
    ferry_metrics *m = calloc(1, sizeof *m);
    if (!m) return ferry__err(err, FERRY_ENOMEM, "metrics create: out of memory");
    m->families = calloc(FERRY_METRICS_FAMILIES_MAX, sizeof *m->families);
    if (!m->families || pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m->families);
        free(m);
        return ferry__err(err, FERRY_ENOMEM, "metrics create: out of memory");
    }
    m->max_series = max_series;
    static const char *const family_label[] = {"family"};
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_COUNTER;
    s.name = FERRY__METRICS_FOLDED_NAME;
    s.help = "Lookups of a new label combination past the family's bound, counted in its "
             "series whose every label is \"other\"";
    s.label_names = family_label;
    s.label_count = 1;
    s.max_series = FERRY_METRICS_FAMILIES_MAX;
    int rc = ferry_metrics_register(m, &s, &m->folded_family, err);
    if (rc) {
        ferry_metrics_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

ferry_metrics_family *ferry_metrics_family_find(ferry_metrics *m, const char *name) {
    if (!m || !name) return NULL;
    ferry_metrics_family *found = NULL;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->family_count && !found; i++)
        if (strcmp(m->families[i]->name, name) == 0) found = m->families[i];
    pthread_mutex_unlock(&m->mu);
    return found;
}

static const char *kind_name(int kind) {
    return kind == FERRY_METRICS_COUNTER ? "counter"
           : kind == FERRY_METRICS_GAUGE ? "gauge"
                                         : "histogram";
}

/* The series of f for values, checked: f of the kind asked, every value valid. */
static ferry__mseries *series_with(ferry_metrics_family *f, int kind, const char *const *values,
                                   int *rc, ferry_error *err) {
    if (!f) {
        *rc = ferry__err(err, FERRY_EINVAL, "metrics: family is NULL");
        return NULL;
    }
    if (f->kind != kind) {
        *rc = ferry__err(err, FERRY_EINVAL, "metric %s is a %s, not a %s", f->name,
                         kind_name(f->kind), kind_name(kind));
        return NULL;
    }
    if (f->label_count && !values) {
        *rc = ferry__err(err, FERRY_EINVAL, "metric %s: %zu label values needed, got none", f->name,
                         f->label_count);
        return NULL;
    }
    for (size_t i = 0; i < f->label_count; i++) {
        if ((*rc = ferry__metrics_check_value(f, i, values[i], err))) return NULL;
    }
    pthread_mutex_lock(&f->registry->mu);
    ferry__mseries *s = ferry__metrics_series_locked(f, values);
    pthread_mutex_unlock(&f->registry->mu);
    *rc = s ? 0 : ferry__err(err, FERRY_ENOMEM, "metric %s: out of memory", f->name);
    return s;
}

int ferry_metrics_counter_with(ferry_metrics_family *f, const char *const *values,
                               ferry_metrics_counter **out, ferry_error *err) {
    int rc;
    ferry__mseries *s = series_with(f, FERRY_METRICS_COUNTER, values, &rc, err);
    if (out) *out = (ferry_metrics_counter *)s;
    return rc;
}

int ferry_metrics_gauge_with(ferry_metrics_family *f, const char *const *values,
                             ferry_metrics_gauge **out, ferry_error *err) {
    int rc;
    ferry__mseries *s = series_with(f, FERRY_METRICS_GAUGE, values, &rc, err);
    if (out) *out = (ferry_metrics_gauge *)s;
    return rc;
}

int ferry_metrics_histogram_with(ferry_metrics_family *f, const char *const *values,
                                 ferry_metrics_histogram **out, ferry_error *err) {
    int rc;
    ferry__mseries *s = series_with(f, FERRY_METRICS_HISTOGRAM, values, &rc, err);
    if (out) *out = (ferry_metrics_histogram *)s;
    return rc;
}

int ferry_metrics_gauge_callback(ferry_metrics_family *f, const char *const *values,
                                 ferry_metrics_gauge_fn fn, void *userdata, ferry_error *err) {
    int rc;
    ferry__mseries *s = series_with(f, FERRY_METRICS_GAUGE, values, &rc, err);
    if (!s) return rc;
    pthread_mutex_lock(&f->registry->mu);
    s->fn = fn;
    s->fn_userdata = fn ? userdata : NULL;
    pthread_mutex_unlock(&f->registry->mu);
    return 0;
}

int ferry_metrics_build_info(ferry_metrics *m, ferry_error *err) {
    static const char *const labels[] = {"version", "bullmq"};
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = "ferry_build_info";
    s.help = "The ferry library's version and the BullMQ release it speaks (always 1)";
    s.label_names = labels;
    s.label_count = 2;
    ferry_metrics_family *f;
    int rc = ferry_metrics_register(m, &s, &f, err);
    if (rc) return rc;
    const char *values[] = {ferry_version(), FERRY_BULLMQ_VERSION};
    ferry_metrics_gauge *g;
    if ((rc = ferry_metrics_gauge_with(f, values, &g, err))) return rc;
    ferry_metrics_gauge_set(g, 1);
    return 0;
}

int ferry__metrics_series_drop(ferry_metrics_family *f, const char *const *values,
                               ferry_error *err) {
    if (!f) return ferry__err(err, FERRY_EINVAL, "metrics: family is NULL");
    if (f->label_count && !values)
        return ferry__err(err, FERRY_EINVAL, "metric %s: %zu label values needed, got none",
                          f->name, f->label_count);
    for (size_t i = 0; i < f->label_count; i++) {
        int rc = ferry__metrics_check_value(f, i, values[i], err);
        if (rc) return rc;
    }
    uint64_t h = values_hash(values, f->label_count);
    pthread_mutex_lock(&f->registry->mu);
    ferry__mseries *s = table_find(f, h, values);
    if (s && f->label_count) s->dropped = 1;
    pthread_mutex_unlock(&f->registry->mu);
    return 0;
}
