/* dmetrics.c - the dead letters' Prometheus series: ferry_dead_letters_total{queue} (rows a
 * recorder wrote) and ferry_redrives_total{mode,result} (rows a redrive handled). Families
 * are found or registered in the caller's registry, so recorders, redrives and workers of
 * one process share them; two registering at once race harmlessly (the loser finds the
 * winner's). docs/dead-letters.md "Metrics". */
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"

static int family_get(ferry_metrics *reg, const char *name, const char *help,
                      const char *const *labels, size_t nlabels, ferry_metrics_family **out,
                      ferry_error *err) {
    *out = ferry_metrics_family_find(reg, name);
    if (*out) return 0;
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_COUNTER;
    s.name = name;
    s.help = help;
    s.label_names = labels;
    s.label_count = nlabels;
    ferry_error e = {0};
    int rc = ferry_metrics_register(reg, &s, out, &e);
    if (rc == 0) return 0;
    if ((*out = ferry_metrics_family_find(reg, name))) return 0;
    return ferry__err(err, rc, "dead letters: metrics: %s", e.message);
}

int ferry__dlq_recorded_family(ferry_metrics *reg, ferry_metrics_family **out, ferry_error *err) {
    static const char *const labels[] = {"queue"};
    *out = NULL;
    if (!reg) return 0;
    int rc = family_get(reg, "ferry_dead_letters_total",
                        "Dead-letter rows this process's recorders wrote (final failures)", labels,
                        1, out, err);
    return rc;
}

void ferry__dlq_count_recorded(ferry_metrics_family *f, const char *queue) {
    if (!f) return;
    ferry_metrics_counter *c = NULL;
    const char *v[] = {queue ? queue : ""};
    ferry_error e = {0};
    if (ferry_metrics_counter_with(f, v, &c, &e) == FERRY_EINVAL) {
        v[0] = "other"; /* a name the registry refuses as a label value (not UTF-8, too long) */
        (void)ferry_metrics_counter_with(f, v, &c, &e);
    }
    ferry_metrics_counter_add(c, 1);
}

int ferry__dlq_redrive_counters(ferry_metrics *reg, int execute, ferry_metrics_counter *out[4],
                                ferry_error *err) {
    static const char *const labels[] = {"mode", "result"};
    /* in ferry_dlq_item_status order */
    static const char *const results[4] = {"would", "done", "skipped", "refused"};
    memset(out, 0, 4 * sizeof *out);
    if (!reg) return 0;
    ferry_metrics_family *f = NULL;
    int rc = family_get(reg, "ferry_redrives_total",
                        "Dead-letter rows redrives handled, by mode (dry_run, execute) and result",
                        labels, 2, &f, err);
    if (rc) return rc;
    for (int i = 0; i < 4; i++) {
        const char *v[] = {execute ? "execute" : "dry_run", results[i]};
        ferry_error e = {0};
        if (ferry_metrics_counter_with(f, v, &out[i], &e) != 0) {
            memset(out, 0, 4 * sizeof *out);
            return ferry__err(err, e.code ? e.code : FERRY_EINVAL, "dead letters: metrics: %s",
                              e.message);
        }
    }
    return 0;
}
