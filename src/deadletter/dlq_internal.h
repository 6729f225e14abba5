/* dlq_internal.h - what the dead-letter files share: the INSERT of one failure with its
 * parameters made safe for PostgreSQL (record.c), the filter's WHERE clause (filter.c),
 * reading rows into entries (rows.c) and the options a redrive gives a job (redrive_opts.c). */
#ifndef FERRY_DEADLETTER_DLQ_INTERNAL_H
#define FERRY_DEADLETTER_DLQ_INTERNAL_H

#include <libpq-fe.h>

#include "ferry/deadletter.h"
#include "pg/pg.h"

/* The parameters of one failure's INSERT, owning the texts it had to change. */
#define FERRY__DLQ_NPARAMS 13
typedef struct ferry__dlq_params {
    const char *v[FERRY__DLQ_NPARAMS];
    char *owned[FERRY__DLQ_NPARAMS];
    char num[3][32];
} ferry__dlq_params;

/* Fill p from f for the INSERT of ferry__dlq_insert_sql, marking the row recorded_by
 * `by` ("worker", "sync", "api"). Text that is not valid UTF-8 is copied with U+FFFD for
 * each bad byte; data that jsonb would refuse goes to data_text. Returns 0, FERRY_EINVAL
 * naming what is missing or too long, FERRY_ENOMEM. Pure. Free with ferry__dlq_params_free. */
int ferry__dlq_params_fill(ferry__dlq_params *p, const ferry_dlq_failure *f, const char *by,
                           ferry_error *err);
void ferry__dlq_params_free(ferry__dlq_params *p);

/* The INSERT ... ON CONFLICT DO NOTHING statement for the quoted schema qs. Writes out. */
void ferry__dlq_insert_sql(const char *qs, char *out, size_t cap);
#define FERRY__DLQ_INSERT_SQL_MAX (FERRY__QSCHEMA_MAX + 700)

/* A filter turned into a WHERE clause with its parameters ($1..$n). */
#define FERRY__DLQ_FILTER_PARAMS 10
typedef struct ferry__dlq_where {
    char sql[700];
    const char *v[FERRY__DLQ_FILTER_PARAMS];
    int n;
    char num[4][32];
    long long limit; /* the filter's limit, 0 when none */
    long fewer_than; /* the filter's redriven_fewer_than, 0 when none */
    char *ids;       /* the id list as a uuid[] literal (owned), NULL when none */
} ferry__dlq_where;

/* Check f (NULL = all rows) and build its clause; `not_redriven` adds "redrive_count = 0".
 * Returns 0, FERRY_EINVAL naming the bad member, FERRY_ENOMEM. Pure. Free with
 * ferry__dlq_where_free (also after a failure; a zeroed or NULL w accepted). */
int ferry__dlq_where_build(const ferry_dlq_filter *f, int not_redriven, ferry__dlq_where *w,
                           ferry_error *err);
void ferry__dlq_where_free(ferry__dlq_where *w);

/* A one-line description of the filter for the audit ("queue=q name=n since=..."),
 * malloc'd; NULL when out of memory. Pure. */
char *ferry__dlq_filter_text(const ferry_dlq_filter *f, int again);

/* The columns rows.c reads, in its order, for SELECT lists. */
#define FERRY__DLQ_COLUMNS                                                                         \
    "id::text, prefix, queue, job_id, job_name, COALESCE(data::text, data_text), data IS NOT "     \
    "NULL, opts, error, stacktrace, recorded_by, redriven_by, redrive_job_id, attempts_made, "     \
    "redrive_count, job_timestamp, (extract(epoch FROM failed_at) * 1000)::bigint, "               \
    "COALESCE((extract(epoch FROM redriven_at) * 1000)::bigint, 0)"

/* Read row `row` of a result selected with FERRY__DLQ_COLUMNS into *e (zeroed first).
 * Returns 0 or FERRY_ENOMEM. Free with ferry__dlq_entry_clear. */
int ferry__dlq_entry_read(const PGresult *r, int row, ferry_dlq_entry *e, ferry_error *err);
void ferry__dlq_entry_clear(ferry_dlq_entry *e);

/* The options a redriven job is added with: the stored options text (NULL, or not a JSON
 * object: none) without what belongs to the failed job alone (jobId, delay, timestamp,
 * repeat, repeatJobKey, prevMillis, parent, deduplication and the other short keys of a
 * flow child), keepLogs under its public name, and jobId = new_id. Returns malloc'd JSON,
 * or NULL when out of memory. Pure. */
char *ferry__dlq_redrive_opts(const char *stored, const char *new_id);

/* ---- metrics (dmetrics.c) ---- */

/* Find or register ferry_dead_letters_total{queue} in reg (NULL reg: *out NULL, 0).
 * Both families must be registered only here (with these labels): a family of the same name
 * registered otherwise is not detected. Returns 0, or the registry's error. */
int ferry__dlq_recorded_family(ferry_metrics *reg, ferry_metrics_family **out, ferry_error *err);
/* Count one row written for `queue` (f NULL: nothing). Takes the registry's mutex briefly. */
void ferry__dlq_count_recorded(ferry_metrics_family *f, const char *queue);
/* The four series ferry_redrives_total{mode,result} of one mode, indexed by
 * ferry_dlq_item_status (reg NULL: all NULL, 0). Errors: the registry's. */
int ferry__dlq_redrive_counters(ferry_metrics *reg, int execute, ferry_metrics_counter *out[4],
                                ferry_error *err);

/* Tests only: called by an executed redrive right after a job was added to Redis and
 * before its row is updated and committed (to crash a redrive exactly there). NULL = none. */
extern void (*ferry__dlq_after_add_hook)(const char *new_job_id);

#endif
