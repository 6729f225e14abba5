/* relay_batch.c - one publish batch, all of it inside one PostgreSQL transaction:
 *   BEGIN; SELECT ... FOR UPDATE SKIP LOCKED (routed topics, oldest first, LIMIT N);
 *   one add_bulk round trip per queue (jobId = event id, data = envelope);
 *   UPDATE published_at; COMMIT.
 * A crash anywhere before COMMIT leaves the rows unpublished, so they are published again
 * (the queue drops a job whose id exists). A Redis failure rolls back and records the
 * error on the rows in a transaction of its own. Rows that can never become job data are
 * set aside (quarantined_at) in the batch's transaction instead of blocking the head of
 * the outbox forever. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbox/envelope.h"
#include "outbox/relay_internal.h"
#include "outbox/routes.h"
#include "queue/json_text.h"
#include "util/error.h"

#define ST_SELECT "ferry_relay_select"
#define ST_PUBLISH "ferry_relay_publish"
#define ST_QUARANTINE "ferry_relay_quarantine"
#define ST_FAILED "ferry_relay_failed"
#define JOB_DATA_MAX_DEPTH 512 /* what the queue accepts */

int ferry__relay_prepare(ferry_relay *r, ferry_error *err) {
    char sql[2 * FERRY__QSCHEMA_MAX + 400];
    const char *qs = r->qs;
    snprintf(sql, sizeof sql,
             "SELECT id, topic, payload, trace_id, ctid FROM %s.outbox_events "
             "WHERE published_at IS NULL AND quarantined_at IS NULL AND topic = ANY($1::text[]) "
             "ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED",
             qs);
    int rc = ferry__pgc_prepare(&r->pg, ferry__relay_deadline(r), ST_SELECT, sql, 2, err);
    if (rc) return rc;
    /* By ctid: the rows are locked by this transaction, so their ctids cannot change, and a
     * TID scan is several times cheaper than 100 primary-key lookups. The id test makes a
     * wrong ctid harmless (that row would just be published again). */
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events SET published_at = now() "
             "WHERE ctid = ANY($1::tid[]) AND id = ANY($2::uuid[])",
             qs);
    rc = ferry__pgc_prepare(&r->pg, ferry__relay_deadline(r), ST_PUBLISH, sql, 2, err);
    if (rc) return rc;
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events AS o SET quarantined_at = now(), attempts = o.attempts + 1, "
             "last_error = q.reason FROM unnest($1::uuid[], $2::text[]) AS q(id, reason) "
             "WHERE o.id = q.id",
             qs);
    rc = ferry__pgc_prepare(&r->pg, ferry__relay_deadline(r), ST_QUARANTINE, sql, 2, err);
    if (rc) return rc;
    /* After the rollback another relay may hold (and publish) some of these rows: skip
     * them rather than wait, and never touch a row already published. */
    snprintf(sql, sizeof sql,
             "UPDATE %s.outbox_events SET attempts = attempts + 1, last_error = $2 "
             "WHERE id IN (SELECT id FROM %s.outbox_events WHERE id = ANY($1::uuid[]) "
             "AND published_at IS NULL FOR UPDATE SKIP LOCKED)",
             qs, qs);
    return ferry__pgc_prepare(&r->pg, ferry__relay_deadline(r), ST_FAILED, sql, 2, err);
}

typedef struct batch_row {
    const char *id, *ctid;
    long topic;     /* routes index, -1 = not ours (left alone) */
    char *envelope; /* job data; NULL when quarantined or skipped */
    char reason[200];
    char opts[64]; /* {"jobId":"<id>"} */
} batch_row;

typedef struct batch {
    PGresult *res;
    int n;
    batch_row *rows;
    size_t published, quarantined, jobs;
} batch;

static void batch_free(batch *b) {
    for (int i = 0; b->rows && i < b->n; i++)
        free(b->rows[i].envelope);
    free(b->rows);
    PQclear(b->res);
}

/* Envelopes and job options for every row; rows that cannot become job data get a reason. */
static int build_rows(ferry_relay *r, batch *b, ferry_error *err) {
    b->rows = calloc((size_t)b->n, sizeof *b->rows);
    if (!b->rows) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (int i = 0; i < b->n; i++) {
        batch_row *row = &b->rows[i];
        row->id = PQgetvalue(b->res, i, 0);
        row->ctid = PQgetvalue(b->res, i, 4);
        row->topic = ferry__routes_find(r->routes, PQgetvalue(b->res, i, 1));
        if (row->topic < 0) continue; /* the SELECT filters topics; defensive only */
        const char *payload = PQgetvalue(b->res, i, 2);
        size_t plen = (size_t)PQgetlength(b->res, i, 2);
        const char *trace = PQgetisnull(b->res, i, 3) ? NULL : PQgetvalue(b->res, i, 3);
        size_t tlen = trace ? (size_t)PQgetlength(b->res, i, 3) : 0, idlen = strlen(row->id);
        if (idlen != FERRY_UUID_STRLEN) { /* the column is uuid: cannot happen */
            snprintf(row->reason, sizeof row->reason, "id is not a canonical uuid");
            continue;
        }
        size_t need = ferry__envelope_size(row->id, idlen, trace, tlen, plen);
        if (need > r->max_envelope) {
            snprintf(row->reason, sizeof row->reason,
                     "job data would be %zu bytes, over the relay's limit of %zu", need,
                     r->max_envelope);
            continue;
        }
        if (!(row->envelope = malloc(need + 1)))
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        size_t len = ferry__envelope_write(row->envelope, need + 1, row->id, idlen, trace, tlen,
                                           payload, plen);
        ferry__json_check_error je;
        if (ferry__json_check(row->envelope, len, JOB_DATA_MAX_DEPTH, &je)) {
            snprintf(row->reason, sizeof row->reason, "job data is not valid JSON at byte %zu: %s",
                     je.offset, je.reason);
            free(row->envelope);
            row->envelope = NULL;
            continue;
        }
        /* {"jobId":"<id>"}; the id is a 36-character uuid (the column type), so it fits */
        memcpy(row->opts, "{\"jobId\":\"", 10);
        memcpy(row->opts + 10, row->id, idlen);
        memcpy(row->opts + 10 + idlen, "\"}", 3);
    }
    return 0;
}

/* One queue's add_bulk, run on its own thread when the batch fans out to several queues. */
typedef struct queue_add {
    ferry_queue *queue;
    const char *name;
    const ferry_job_spec *specs;
    size_t n;
    int rc;
    ferry_error err;
    pthread_t thread;
    int threaded;
} queue_add;

static void *queue_add_main(void *arg) {
    queue_add *a = arg;
    a->rc = ferry_queue_add_bulk(a->queue, a->specs, a->n, NULL, &a->err);
    return NULL;
}

/* Every queue's jobs at once: the round trips overlap (each queue has its own connection),
 * so a fan-out batch costs about one Redis round trip, not one per queue. specs are grouped
 * by queue in queue order, count[q] each. */
static int add_all_queues(ferry_relay *r, const ferry_job_spec *specs, const size_t *count,
                          ferry_error *err) {
    queue_add *adds = calloc(r->nqueues, sizeof *adds);
    if (!adds) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    size_t start = 0, used = 0;
    for (size_t q = 0; q < r->nqueues; start += count[q], q++) {
        if (!count[q]) continue;
        queue_add *a = &adds[used++];
        *a = (queue_add){.queue = r->queues[q],
                         .name = r->queue_names[q],
                         .specs = specs + start,
                         .n = count[q]};
    }
    /* the first runs here; the others on threads (inline if a thread cannot start) */
    for (size_t i = 1; i < used; i++)
        adds[i].threaded = pthread_create(&adds[i].thread, NULL, queue_add_main, &adds[i]) == 0;
    for (size_t i = 0; i < used; i++)
        if (i == 0 || !adds[i].threaded) queue_add_main(&adds[i]);
    int rc = 0;
    for (size_t i = 0; i < used; i++) {
        if (adds[i].threaded) pthread_join(adds[i].thread, NULL);
        if (adds[i].rc && !rc)
            rc = ferry__err(err, adds[i].rc, "queue %s: %s", adds[i].name, adds[i].err.message);
    }
    free(adds);
    return rc;
}

/* Group the jobs by queue and add them: one add_bulk (one round trip) per queue. */
static int add_jobs(ferry_relay *r, batch *b, ferry_error *err) {
    size_t *count = calloc(r->nqueues, sizeof *count), *off = calloc(r->nqueues, sizeof *off);
    size_t total = 0;
    int rc = 0;
    if (!count || !off) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (!row->envelope) continue;
        const relay_topic *t = &r->topics[row->topic];
        for (size_t j = 0; j < t->ntargets; j++, total++)
            count[t->targets[j].queue]++;
    }
    ferry_job_spec *specs = rc ? NULL : malloc((total ? total : 1) * sizeof *specs);
    if (!rc && !specs) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (size_t q = 1; !rc && q < r->nqueues; q++)
        off[q] = off[q - 1] + count[q - 1];
    for (int i = 0; !rc && i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (!row->envelope) continue;
        const relay_topic *t = &r->topics[row->topic];
        for (size_t j = 0; j < t->ntargets; j++) {
            ferry_job_spec *s = &specs[off[t->targets[j].queue]++];
            s->name = t->targets[j].job_name;
            s->data_json = row->envelope;
            s->opts_json = row->opts;
        }
    }
    if (!rc) rc = add_all_queues(r, specs, count, err);
    if (!rc) b->jobs = total;
    free(specs);
    free(count);
    free(off);
    return rc;
}

/* "{id,id,...}" of the rows to publish (those with job data) or, with quarantined = 1, of
 * the rows to set aside. */
static char *id_array(const batch *b, int quarantined, size_t *count) {
    char *a = malloc((size_t)b->n * (FERRY_UUID_STRLEN + 1) + 3);
    if (!a) return NULL;
    size_t k = 0;
    *count = 0;
    a[k++] = '{';
    for (int i = 0; i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        int pick = quarantined ? row->reason[0] != 0 : row->envelope != NULL;
        if (!pick) continue;
        if (*count) a[k++] = ',';
        size_t n = strlen(row->id);
        memcpy(a + k, row->id, n);
        k += n;
        (*count)++;
    }
    a[k++] = '}';
    a[k] = 0;
    return a;
}

/* {"(block,offset)",...} of the rows to publish. */
static char *tid_array(const batch *b) {
    size_t cap = 3;
    for (int i = 0; i < b->n; i++)
        cap += strlen(b->rows[i].ctid) + 3;
    char *a = malloc(cap);
    if (!a) return NULL;
    size_t k = 0, count = 0;
    a[k++] = '{';
    for (int i = 0; i < b->n; i++) {
        if (!b->rows[i].envelope) continue;
        size_t len = strlen(b->rows[i].ctid);
        if (count++) a[k++] = ',';
        a[k++] = '"';
        memcpy(a + k, b->rows[i].ctid, len);
        k += len;
        a[k++] = '"';
    }
    a[k++] = '}';
    a[k] = 0;
    return a;
}

/* The quarantined rows as a uuid[] literal (returned) and their reasons as a text[] literal
 * (*reasons); *n = how many. Returns NULL with *n = 0 when there are none, NULL with *n > 0
 * when out of memory. */
static char *quarantine_arrays(const batch *b, char **reasons, size_t *n) {
    *reasons = NULL;
    char *ids = id_array(b, 1, n);
    if (!ids || *n == 0) {
        free(ids);
        return NULL;
    }
    const char **list = malloc(*n * sizeof *list);
    size_t k = 0;
    for (int i = 0; list && i < b->n; i++)
        if (b->rows[i].reason[0]) list[k++] = b->rows[i].reason;
    *reasons = list ? ferry__pg_text_array(list, k) : NULL;
    free(list);
    if (!*reasons) {
        free(ids);
        return NULL;
    }
    return ids;
}

static void rollback(ferry_relay *r) {
    if (!r->pg.conn || r->pg.broken) return;
    ferry_error e = {0};
    if (ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "rollback", NULL, "ROLLBACK", 0, NULL,
                        NULL, &e))
        r->pg.broken = 1; /* unknown state: start over on a new connection */
}

/* After a Redis failure: attempts + 1 and last_error on the batch's rows, own transaction. */
static void record_failure(ferry_relay *r, const batch *b, const char *message) {
    size_t n = 0;
    char *ids = id_array(b, 0, &n);
    if (!ids || n == 0) {
        free(ids);
        return;
    }
    const char *params[] = {ids, message};
    ferry_error e = {0};
    if (ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "record failure", ST_FAILED, NULL, 2,
                        params, NULL, &e))
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: could not record the failure on the rows: %s",
                         e.message);
    free(ids);
}

static void count_failure(ferry_relay *r) {
    pthread_mutex_lock(&r->mu);
    r->stats.failed_batches++;
    pthread_mutex_unlock(&r->mu);
}

relay_batch_rc ferry__relay_batch(ferry_relay *r, int *rows, ferry_error *err) {
    *rows = 0;
    batch b = {0};
    char limit[16];
    snprintf(limit, sizeof limit, "%d", r->batch_size);
    const char *sel[] = {r->topics_array, limit};
    /* BEGIN and the locking SELECT in one round trip */
    const ferry__pg_stmt open_st[] = {{"begin", NULL, "BEGIN", 0, NULL},
                                      {"select batch", ST_SELECT, NULL, 2, sel}};
    PGresult *res[2] = {NULL, NULL};
    int rc = ferry__pgc_pipeline(&r->pg, ferry__relay_deadline(r), open_st, 2, res, err);
    if (rc) goto db_failed;
    PQclear(res[0]);
    b.res = res[1];
    b.n = PQntuples(b.res);
    *rows = b.n;
    if (b.n == 0) {
        batch_free(&b);
        rc = ferry__pgc_exec(&r->pg, ferry__relay_deadline(r), "commit", NULL, "COMMIT", 0, NULL,
                             NULL, err);
        if (rc) goto db_failed;
        return RELAY_BATCH_OK;
    }
    if ((rc = build_rows(r, &b, err))) goto db_failed; /* out of memory: nothing sent yet */
    if ((rc = add_jobs(r, &b, err))) {
        rollback(r);
        if (!r->pg.broken) record_failure(r, &b, err ? err->message : "redis error");
        batch_free(&b);
        count_failure(r);
        return RELAY_BATCH_REDIS_FAILED;
    }
    if (r->fault) r->fault("relay_after_publish", r->fault_userdata);
    /* mark published (+ set aside the rows that cannot become jobs) and commit: one round trip */
    size_t n = 0;
    char *ids = id_array(&b, 0, &n), *tids = tid_array(&b);
    char *qids = NULL, *reasons = NULL;
    size_t nq = 0;
    if (ids && (qids = quarantine_arrays(&b, &reasons, &nq)) == NULL && nq)
        rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (!ids || !tids) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (rc) {
        free(ids);
        free(tids);
        goto db_failed;
    }
    const char *pub[] = {tids, ids}, *quar[] = {qids, reasons};
    ferry__pg_stmt close_st[3];
    PGresult *close_res[3] = {NULL, NULL, NULL};
    size_t ns = 0;
    if (n) close_st[ns++] = (ferry__pg_stmt){"mark published", ST_PUBLISH, NULL, 2, pub};
    if (nq) close_st[ns++] = (ferry__pg_stmt){"quarantine rows", ST_QUARANTINE, NULL, 2, quar};
    close_st[ns++] = (ferry__pg_stmt){"commit", NULL, "COMMIT", 0, NULL};
    rc = ferry__pgc_pipeline(&r->pg, ferry__relay_deadline(r), close_st, ns, close_res, err);
    free(ids);
    free(tids);
    free(qids);
    free(reasons);
    if (rc) goto db_failed;
    b.published = n ? (size_t)atoll(PQcmdTuples(close_res[0])) : 0;
    for (size_t i = 0; i < ns; i++)
        PQclear(close_res[i]);
    if (b.published != n) /* cannot happen while the rows are locked; harmless if it does */
        ferry__relay_log(r, FERRY_LOG_WARN,
                         "relay: marked %zu of %zu rows published; the others will be published "
                         "again (the queues drop the duplicate jobs)",
                         b.published, n);
    b.quarantined = nq;
    for (int i = 0; i < b.n; i++)
        if (b.rows[i].reason[0])
            ferry__relay_log(r, FERRY_LOG_ERROR,
                             "relay: event %s set aside (quarantined_at), not published: %s",
                             b.rows[i].id, b.rows[i].reason);
    pthread_mutex_lock(&r->mu);
    r->stats.published += b.published;
    r->stats.jobs_added += b.jobs;
    r->stats.quarantined += b.quarantined;
    r->stats.batches++;
    pthread_mutex_unlock(&r->mu);
    batch_free(&b);
    return RELAY_BATCH_OK;
db_failed:
    /* The jobs may already be in Redis: the rows stay unpublished and are published again,
     * and the queues drop the duplicates by jobId. */
    rollback(r);
    batch_free(&b);
    count_failure(r);
    return RELAY_BATCH_DB_FAILED;
}
