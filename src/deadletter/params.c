/* params.c - one failure's INSERT parameters made safe for PostgreSQL: text as valid UTF-8
 * (each bad byte becomes U+FFFD), data as jsonb only when jsonb takes it (else kept as
 * text), and the idempotent INSERT the recorder, the sync and ferry_dlq_record share. Pure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"
#include "util/json_text.h"
#include "util/utf8.h"

/* s with every byte that is not part of valid UTF-8 replaced by U+FFFD; NULL when s is
 * already valid (use it as is) or out of memory (*oom set). */
static char *utf8_fixed(const char *s, int *oom) {
    size_t n = strlen(s);
    if (ferryx_utf8_valid(s, n)) return NULL;
    char *out = malloc(3 * n + 1);
    if (!out) {
        *oom = 1;
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = ferryx_utf8_seq((const unsigned char *)s + i, n - i);
        if (k == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    out[o] = 0;
    return out;
}

/* Set parameter i to s (NULL stays NULL), fixed for UTF-8 when needed. */
static int set_text(ferry__dlq_params *p, int i, const char *s, int *oom) {
    p->v[i] = s;
    if (!s) return 0;
    char *fixed = utf8_fixed(s, oom);
    if (fixed) {
        p->owned[i] = fixed;
        p->v[i] = fixed;
    }
    return *oom ? -1 : 0;
}

int ferry__dlq_params_fill(ferry__dlq_params *p, const ferry_dlq_failure *f, const char *by,
                           ferry_error *err) {
    memset(p, 0, sizeof *p);
    if (!f) return ferry__err(err, FERRY_EINVAL, "dead letter: no failure given");
    if (!f->queue || !*f->queue)
        return ferry__err(err, FERRY_EINVAL, "dead letter: queue is required");
    if (strlen(f->queue) > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letter: queue name over %d bytes",
                          FERRY_QUEUE_NAME_MAX);
    if (f->prefix && (!*f->prefix || strlen(f->prefix) > FERRY_QUEUE_NAME_MAX))
        return ferry__err(err, FERRY_EINVAL, "dead letter: prefix must be 1..%d bytes",
                          FERRY_QUEUE_NAME_MAX);
    if (!f->job_id || !*f->job_id)
        return ferry__err(err, FERRY_EINVAL, "dead letter: job id is required");
    if (strlen(f->job_id) > FERRY_JOB_FOREIGN_ID_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letter: job id over %d bytes",
                          FERRY_JOB_FOREIGN_ID_MAX);
    if (f->attempts_made < 0 || f->attempts_made > 2147483647L || f->job_timestamp_ms < 0 ||
        f->failed_at_ms < 0)
        return ferry__err(err, FERRY_EINVAL,
                          "dead letter: attempts, job timestamp and failure time must be >= 0");
    int oom = 0;
    const char *data = f->data ? f->data : "{}";
    size_t dn = strlen(data);
    int json = ferryx_json_check(data, dn, FERRY_JOB_DATA_DEPTH_MAX, NULL) == 0 &&
               ferryx_jsonb_check(data, dn, NULL) == 0;
    set_text(p, 0, f->prefix ? f->prefix : FERRY_DEFAULT_PREFIX, &oom);
    set_text(p, 1, f->queue, &oom);
    set_text(p, 2, f->job_name ? f->job_name : "", &oom);
    set_text(p, 3, f->job_id, &oom);
    if (json)
        p->v[4] = data;
    else
        set_text(p, 5, data, &oom);
    set_text(p, 6, f->opts, &oom);
    set_text(p, 7, f->error ? f->error : "", &oom);
    set_text(p, 8, f->stacktrace, &oom);
    snprintf(p->num[0], sizeof p->num[0], "%ld", f->attempts_made);
    snprintf(p->num[1], sizeof p->num[1], "%lld", f->job_timestamp_ms);
    snprintf(p->num[2], sizeof p->num[2], "%lld", f->failed_at_ms);
    p->v[9] = p->num[0];
    p->v[10] = p->num[1];
    p->v[11] = f->failed_at_ms ? p->num[2] : NULL;
    p->v[12] = by;
    if (oom) {
        ferry__dlq_params_free(p);
        return ferry__err(err, FERRY_ENOMEM, "dead letter: out of memory");
    }
    return 0;
}

void ferry__dlq_params_free(ferry__dlq_params *p) {
    for (int i = 0; i < FERRY__DLQ_NPARAMS; i++) {
        free(p->owned[i]);
        p->owned[i] = NULL;
    }
}

void ferry__dlq_insert_sql(const char *qs, char *out, size_t cap) {
    snprintf(out, cap,
             "INSERT INTO %s.dead_letters (prefix, queue, job_name, job_id, data, data_text, "
             "opts, error, stacktrace, attempts_made, job_timestamp, failed_at, recorded_by) "
             "VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10::int, $11::bigint, "
             "COALESCE(to_timestamp($12::float8 / 1000), now()), $13) ON CONFLICT (prefix, "
             "queue, job_id, job_timestamp, attempts_made) DO NOTHING",
             qs);
}
