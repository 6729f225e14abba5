/* render.c - Prometheus text exposition (format 0.0.4) of a registry: # HELP and # TYPE per
 * family, one line per sample, histograms as cumulative buckets, _sum and _count; label
 * values and help escaped; numbers written with '.' in any locale. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "util/error.h"
#include "util/numtext.h"

/* The output: a growing malloc'd buffer, or the caller's fixed one (then past its end only
 * the length is counted, to say how much it needs). */
typedef struct outbuf {
    char *p;
    size_t len; /* bytes produced (may exceed cap for a fixed buffer) */
    size_t cap;
    int fixed;
    int nomem;
} outbuf;

static void put(outbuf *b, const char *s, size_t n) {
    if (b->nomem) return;
    if (b->len + n + 1 > b->cap && !b->fixed) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        /* past the maximum no more is stored: the length alone says ETOOBIG */
        if (cap > (size_t)FERRY_METRICS_RENDER_MAX + 1) cap = (size_t)FERRY_METRICS_RENDER_MAX + 1;
        if (cap > b->cap) {
            char *np = realloc(b->p, cap);
            if (!np) {
                b->nomem = 1;
                return;
            }
            b->p = np;
            b->cap = cap;
        }
    }
    if (b->len + n < b->cap) memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void puts_(outbuf *b, const char *s) {
    put(b, s, strlen(s));
}

/* s with backslash and newline escaped, and the double quote too when quote is set. */
static void put_escaped(outbuf *b, const char *s, int quote) {
    const char *run = s;
    for (; *s; s++) {
        const char *esc = *s == '\\'           ? "\\\\"
                          : *s == '\n'         ? "\\n"
                          : quote && *s == '"' ? "\\\""
                                               : NULL;
        if (!esc) continue;
        put(b, run, (size_t)(s - run));
        puts_(b, esc);
        run = s + 1;
    }
    put(b, run, (size_t)(s - run));
}

/* The shortest of %.15g .. %.17g that reads back as v; Prometheus' words for the rest. */
static void format_double(char *out, size_t cap, double v) {
    if (isnan(v)) {
        snprintf(out, cap, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, cap, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        ferryx_fmt_g(out, cap, prec, v);
        if (ferryx_strtod_c(out, NULL) == v) return;
    }
}

static void put_double(outbuf *b, double v) {
    char num[40];
    format_double(num, sizeof num, v);
    puts_(b, num);
}

static void put_u64(outbuf *b, uint64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, v);
    puts_(b, num);
}

/* name + suffix + {labels[, le="..."]} + ' ' (the value follows) */
static void put_sample_head(outbuf *b, const struct ferry_metrics_family *f,
                            const ferry__mseries *s, const char *suffix, const char *le) {
    puts_(b, f->name);
    puts_(b, suffix);
    if (f->label_count || le) {
        puts_(b, "{");
        for (size_t i = 0; i < f->label_count; i++) {
            if (i) puts_(b, ",");
            puts_(b, f->labels[i]);
            puts_(b, "=\"");
            put_escaped(b, s->values[i], 1);
            puts_(b, "\"");
        }
        if (le) {
            if (f->label_count) puts_(b, ",");
            puts_(b, "le=\"");
            puts_(b, le);
            puts_(b, "\"");
        }
        puts_(b, "}");
    }
    puts_(b, " ");
}

static void render_histogram(outbuf *b, const struct ferry_metrics_family *f,
                             const ferry__mseries *s) {
    uint64_t cumulative = 0;
    char le[40];
    for (size_t i = 0; i <= f->bound_count; i++) {
        cumulative += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
        if (i < f->bound_count)
            format_double(le, sizeof le, f->bounds[i]);
        else
            snprintf(le, sizeof le, "+Inf");
        put_sample_head(b, f, s, "_bucket", le);
        put_u64(b, cumulative);
        puts_(b, "\n");
    }
    put_sample_head(b, f, s, "_sum", NULL);
    put_double(b, ferry__metrics_double(atomic_load_explicit(&s->sum_bits, memory_order_relaxed)));
    puts_(b, "\n");
    /* the count is the +Inf bucket, so the two always agree */
    put_sample_head(b, f, s, "_count", NULL);
    put_u64(b, cumulative);
    puts_(b, "\n");
}

static void render_family(outbuf *b, const struct ferry_metrics_family *f) {
    static const char *const type[] = {"", "counter", "gauge", "histogram"};
    puts_(b, "# HELP ");
    puts_(b, f->name);
    puts_(b, " ");
    put_escaped(b, f->help, 0);
    puts_(b, "\n# TYPE ");
    puts_(b, f->name);
    puts_(b, " ");
    puts_(b, type[f->kind]);
    puts_(b, "\n");
    for (size_t i = 0; i < f->series_count; i++) {
        const ferry__mseries *s = f->series[i];
        if (s->dropped) continue;
        switch (f->kind) {
        case FERRY_METRICS_COUNTER:
            put_sample_head(b, f, s, "", NULL);
            put_u64(b, atomic_load_explicit(&s->value, memory_order_relaxed));
            puts_(b, "\n");
            break;
        case FERRY_METRICS_GAUGE:
            put_sample_head(b, f, s, "", NULL);
            put_double(b, s->fn ? s->fn(s->fn_userdata)
                                : ferry__metrics_double(
                                      atomic_load_explicit(&s->value, memory_order_relaxed)));
            puts_(b, "\n");
            break;
        default:
            render_histogram(b, f, s);
        }
    }
}

static int render(ferry_metrics *m, outbuf *b, ferry_error *err) {
    if (!m) return ferry__err(err, FERRY_EINVAL, "metrics render: registry is NULL");
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < m->family_count && !b->nomem; i++) {
        render_family(b, m->families[i]);
        if (b->len > FERRY_METRICS_RENDER_MAX) break;
    }
    pthread_mutex_unlock(&m->mu);
    if (b->nomem) return ferry__err(err, FERRY_ENOMEM, "metrics render: out of memory");
    if (b->len > FERRY_METRICS_RENDER_MAX)
        return ferry__err(err, FERRY_ETOOBIG,
                          "metrics render: more than FERRY_METRICS_RENDER_MAX (%u bytes)",
                          FERRY_METRICS_RENDER_MAX);
    return 0;
}

int ferry_metrics_render(ferry_metrics *m, char **out, size_t *len, ferry_error *err) {
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!out) return ferry__err(err, FERRY_EINVAL, "metrics render: out is NULL");
    outbuf b = {0};
    put(&b, "", 0); /* an empty registry still gives "" */
    int rc = render(m, &b, err);
    if (rc) {
        free(b.p);
        return rc;
    }
    b.p[b.len] = '\0';
    *out = b.p;
    if (len) *len = b.len;
    return 0;
}

int ferry_metrics_render_to(ferry_metrics *m, char *buf, size_t cap, size_t *len,
                            ferry_error *err) {
    if (len) *len = 0;
    if (!buf && cap) return ferry__err(err, FERRY_EINVAL, "metrics render: buf is NULL");
    outbuf b = {.p = buf, .cap = cap, .fixed = 1};
    int rc = render(m, &b, err);
    if (rc) return rc;
    if (b.len + 1 > cap) {
        if (cap) buf[0] = '\0';
        if (len) *len = b.len + 1;
        return ferry__err(err, FERRY_ETOOBIG, "metrics render: needs %zu bytes, buffer has %zu",
                          b.len + 1, cap);
    }
    buf[b.len] = '\0';
    if (len) *len = b.len;
    return 0;
}
