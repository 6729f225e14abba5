/* relay_batch.c - publishing batches. One batch is one PostgreSQL transaction:
 *   BEGIN; SET LOCAL synchronous_commit = off;
 *   claim: UPDATE ... SET published_at = now() of unpublished rows of routed topics, oldest
 *          first: up to N picked FOR UPDATE SKIP LOCKED, of which the oldest whose payloads
 *          fit in the byte budget are marked (at least one), RETURNING them;
 *   add their jobs to Redis (jobId = event id, data = envelope), one add_bulk per queue;
 *   COMMIT.
 * Nothing is committed before Redis acknowledged the jobs: a crash anywhere before COMMIT
 * rolls the claim back, the rows stay unpublished and are published again (the queue drops a
 * job whose id exists). A Redis failure rolls back and records the error on the rows in a
 * transaction of their own. Rows that can never become job data are set aside
 * (quarantined_at) in the batch's transaction instead of blocking the head of the outbox.
 *
 * A batch's COMMIT travels with the next claim (one round trip). A relay that finds itself
 * the only one on the schema also alternates two connections ("lanes") so PostgreSQL and
 * Redis work at the same time: while batch k's jobs are added, the other lane commits batch
 * k-1 and claims batch k+1. Jobs are still added one batch after the other, oldest first,
 * so one relay keeps the outbox's order, and no batch commits before its own jobs are in
 * Redis. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "envelope/envelope.h"
#include "outbox/relay/relay_internal.h"
#include "outbox/routes.h"
#include "queue/queue_module.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/json_text.h"

#define DRAIN_SLICE_MS 1000     /* a drain returns to the main loop this often */
#define ALONE_TRUST_MS 100      /* how long the answer "no other relay" is trusted */
#define NOT_ALONE_TRUST_MS 1000 /* and the answer "other relays" */
#define POOL_MAX 8              /* threads adding to queues besides the relay's own */

/* ---- rows and jobs ------------------------------------------------------------------- */

typedef struct batch_row {
    const char *id;
    long topic;       /* routes index, -1 = not ours (put back) */
    char *envelope;   /* job data, until its jobs were sent (NULL when set aside or put back) */
    size_t size;      /* job data bytes */
    int publish;      /* becomes jobs (else set aside or put back) */
    double created_s; /* the row's created_at, seconds since the epoch */
    char reason[200];
} batch_row;

typedef struct batch {
    PGresult *res;
    int n;
    int limit;       /* rows the claim could lock (its LIMIT) */
    int left_behind; /* it locked rows past the byte budget (they wait for the next batch) */
    batch_row *rows;
    size_t published, quarantined, put_back, jobs;
    int64_t claim_sent_us; /* mono µs when its claim was sent */
} batch;

static void batch_free(batch *b) {
    for (int i = 0; b->rows && i < b->n; i++)
        free(b->rows[i].envelope);
    free(b->rows);
    PQclear(b->res);
    memset(b, 0, sizeof *b);
}

/* Envelopes for every row; rows that cannot become job data get a reason. */
static int build_rows(ferry_relay *r, batch *b, ferry_error *err) {
    b->rows = calloc((size_t)b->n, sizeof *b->rows);
    if (!b->rows) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (int i = 0; i < b->n; i++) {
        batch_row *row = &b->rows[i];
        row->id = PQgetvalue(b->res, i, 0);
        row->created_s = atof(PQgetvalue(b->res, i, 5));
        row->topic = ferry__routes_find(r->routes, PQgetvalue(b->res, i, 1));
        if (row->topic < 0) { /* the claim filters topics; defensive only */
            b->put_back++;
            continue;
        }
        const char *payload = PQgetvalue(b->res, i, 2);
        size_t plen = (size_t)PQgetlength(b->res, i, 2);
        const char *trace = PQgetisnull(b->res, i, 3) ? NULL : PQgetvalue(b->res, i, 3);
        size_t tlen = trace ? (size_t)PQgetlength(b->res, i, 3) : 0, idlen = strlen(row->id);
        if (idlen != FERRY_UUID_STRLEN) { /* the column is uuid: cannot happen */
            snprintf(row->reason, sizeof row->reason, "id is not a canonical uuid");
            b->quarantined++;
            continue;
        }
        size_t need = ferry__envelope_size(row->id, idlen, trace, tlen, plen);
        row->size = need;
        /* a default sizeLimit below the relay's limit would make the queues refuse the whole
         * add for this one row, batch after batch: set the row aside instead */
        if (need > r->data_limit) {
            if (need <= r->max_envelope)
                snprintf(row->reason, sizeof row->reason,
                         "job data would be %zu bytes, over the default job options' sizeLimit "
                         "of %zu",
                         need, r->data_limit);
            else
                snprintf(row->reason, sizeof row->reason,
                         "job data would be %zu bytes, over the relay's limit of %zu", need,
                         r->max_envelope);
            b->quarantined++;
            continue;
        }
        if (!(row->envelope = malloc(need + 1)))
            return ferry__err(err, FERRY_ENOMEM, "out of memory");
        size_t len = ferry__envelope_write(row->envelope, need + 1, row->id, idlen, trace, tlen,
                                           payload, plen);
        /* The queue's own check, with its depth limit: the jobs are added with data_checked,
         * so this is the only check the data gets. */
        ferryx_json_check_error je;
        if (ferryx_json_check(row->envelope, len, FERRY_JOB_DATA_DEPTH_MAX, &je)) {
            snprintf(row->reason, sizeof row->reason, "job data is not valid JSON at byte %zu: %s",
                     je.offset, je.reason);
            free(row->envelope);
            row->envelope = NULL;
            b->quarantined++;
            continue;
        }
        row->publish = 1;
        b->published++;
    }
    return 0;
}

/* One queue's add_bulk, run by the relay's thread or a pool thread. */
typedef struct queue_add {
    ferry_queue *queue;
    const char *name;
    const ferry_job_spec *specs;
    const char *const *job_ids; /* the event ids */
    size_t n;
    int rc;
    ferry_error err;
} queue_add;

static void queue_add_run(queue_add *a) {
    /* jobId = event id without building and parsing {"jobId":...} per job; the data was
     * checked in build_rows */
    a->rc = ferry__queue_add_bulk_ids(a->queue, a->specs, a->job_ids, a->n, 1, NULL, &a->err);
}

/* Threads that add to the other queues of a fan-out batch while the relay's thread adds to
 * the first: each queue has its own connection, so the round trips overlap and a batch
 * costs about one Redis round trip, not one per queue. Started once per run. */
struct relay_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t threads[POOL_MAX];
    size_t nthreads;
    queue_add *items; /* this batch's adds for the pool */
    size_t nitems, next, finished;
    int stop;
};

static void *pool_main(void *arg) {
    struct relay_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next >= p->nitems)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) break;
        queue_add *a = &p->items[p->next++];
        pthread_mutex_unlock(&p->mu);
        queue_add_run(a);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->nitems) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void ferry__relay_pool_start(ferry_relay *r) {
    size_t want = r->nqueues > 1 ? r->nqueues - 1 : 0;
    if (want > POOL_MAX) want = POOL_MAX;
    if (!want) return;
    struct relay_pool *p = calloc(1, sizeof *p);
    if (!p) return; /* the adds then run one after the other */
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    while (p->nthreads < want && pthread_create(&p->threads[p->nthreads], NULL, pool_main, p) == 0)
        p->nthreads++;
    r->pool = p;
}

void ferry__relay_pool_stop(ferry_relay *r) {
    struct relay_pool *p = r->pool;
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (size_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
    r->pool = NULL;
}

/* Work for the relay's thread once Redis has work: called exactly once per add_jobs. */
typedef struct add_hook {
    void (*fn)(void *arg);
    void *arg;
} add_hook;

static void hook_run(const add_hook *h) {
    if (h && h->fn) h->fn(h->arg);
}

/* Run adds[0..n): the others on the pool, then the hook, then the first here (this thread
 * then helps with what the pool has not started), and wait for all. */
static void run_adds(ferry_relay *r, queue_add *adds, size_t n, const add_hook *hook) {
    struct relay_pool *p = r->pool;
    if (!p || !p->nthreads || n < 2) {
        hook_run(hook);
        for (size_t i = 0; i < n; i++)
            queue_add_run(&adds[i]);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->items = adds + 1;
    p->nitems = n - 1;
    p->next = p->finished = 0;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    hook_run(hook); /* Redis is busy with the pool's scripts meanwhile */
    queue_add_run(&adds[0]);
    pthread_mutex_lock(&p->mu);
    while (p->next < p->nitems) {
        queue_add *a = &p->items[p->next++];
        pthread_mutex_unlock(&p->mu);
        queue_add_run(a);
        pthread_mutex_lock(&p->mu);
        p->finished++;
    }
    while (p->finished < p->nitems)
        pthread_cond_wait(&p->done, &p->mu);
    p->items = NULL;
    p->nitems = p->next = p->finished = 0;
    pthread_mutex_unlock(&p->mu);
}

/* Every queue's jobs at once. specs are grouped by queue in queue order, count[q] each. */
static int add_all_queues(ferry_relay *r, const ferry_job_spec *specs, const char **job_ids,
                          const size_t *count, const add_hook *hook, ferry_error *err) {
    queue_add *adds = calloc(r->nqueues, sizeof *adds);
    if (!adds) {
        hook_run(hook);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    size_t start = 0, used = 0;
    for (size_t q = 0; q < r->nqueues; start += count[q], q++) {
        if (!count[q]) continue;
        adds[used++] = (queue_add){.queue = r->queues[q],
                                   .name = r->queue_names[q],
                                   .specs = specs + start,
                                   .job_ids = job_ids + start,
                                   .n = count[q]};
    }
    run_adds(r, adds, used, hook);
    int rc = 0;
    for (size_t i = 0; i < used && !rc; i++) {
        if (!adds[i].rc) continue;
        /* the queue's own messages mostly name it already */
        char named[FERRY_ERROR_MESSAGE_MAX];
        snprintf(named, sizeof named, "queue %s: ", adds[i].name);
        if (!strncmp(adds[i].err.message, named, strlen(named)))
            rc = ferry__err(err, adds[i].rc, "%s", adds[i].err.message);
        else
            rc = ferry__err(err, adds[i].rc, "queue %s: %s", adds[i].name, adds[i].err.message);
    }
    free(adds);
    return rc;
}

/* Group the jobs by queue and add them: one add_bulk (one round trip) per queue. The hook
 * runs once, as soon as the first scripts are on their way. */
static int add_jobs(ferry_relay *r, batch *b, const add_hook *hook, ferry_error *err) {
    size_t *count = calloc(r->nqueues, sizeof *count), *off = calloc(r->nqueues, sizeof *off);
    size_t total = 0;
    int rc = 0;
    if (!count || !off) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (!row->publish) continue;
        const relay_topic *t = &r->topics[row->topic];
        for (size_t j = 0; j < t->ntargets; j++, total++)
            count[t->targets[j].queue]++;
    }
    ferry_job_spec *specs = rc ? NULL : malloc((total ? total : 1) * sizeof *specs);
    const char **job_ids = rc ? NULL : malloc((total ? total : 1) * sizeof *job_ids);
    if (!rc && (!specs || !job_ids)) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    for (size_t q = 1; !rc && q < r->nqueues; q++)
        off[q] = off[q - 1] + count[q - 1];
    for (int i = 0; !rc && i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (!row->publish) continue;
        const relay_topic *t = &r->topics[row->topic];
        for (size_t j = 0; j < t->ntargets; j++) {
            size_t k = off[t->targets[j].queue]++;
            specs[k] = (ferry_job_spec){
                .name = t->targets[j].job_name, .data_json = row->envelope, .opts_json = NULL};
            job_ids[k] = row->id;
        }
    }
    if (!rc && total)
        rc = add_all_queues(r, specs, job_ids, count, hook, err);
    else
        hook_run(hook);
    if (!rc) b->jobs = total;
    free(specs);
    free(job_ids);
    free(count);
    free(off);
    /* Sent (or failed): the envelopes, as large as the payloads, go now rather than when the
     * batch commits, which may be after the next batch's adds (claiming ahead). */
    for (int i = 0; b->rows && i < b->n; i++) {
        free(b->rows[i].envelope);
        b->rows[i].envelope = NULL;
    }
    return rc;
}

/* "{id,id,...}" of the rows with job data (the ones published). */
static char *published_ids(const batch *b) {
    char *a = malloc((size_t)b->n * (FERRY_UUID_STRLEN + 1) + 3);
    if (!a) return NULL;
    size_t k = 0, count = 0;
    a[k++] = '{';
    for (int i = 0; i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (!row->publish) continue;
        if (count++) a[k++] = ',';
        size_t n = strlen(row->id);
        memcpy(a + k, row->id, n);
        k += n;
    }
    a[k++] = '}';
    a[k] = 0;
    return a;
}

/* The rows to put back as a uuid[] literal (*ids) and their reasons as a text[] literal
 * with NULL for "no reason" (*reasons). Both malloc'd; 0 or FERRY_ENOMEM. */
static int put_back_arrays(const batch *b, char **ids, char **reasons) {
    size_t idcap = 3, rcap = 3;
    for (int i = 0; i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (row->publish) continue;
        idcap += strlen(row->id) + 1;
        rcap += 2 * strlen(row->reason) + 8; /* quotes, escapes, or NULL; and a comma */
    }
    *ids = malloc(idcap);
    *reasons = malloc(rcap);
    if (!*ids || !*reasons) {
        free(*ids);
        free(*reasons);
        *ids = *reasons = NULL;
        return FERRY_ENOMEM;
    }
    size_t k = 0, m = 0, count = 0;
    (*ids)[k++] = '{';
    (*reasons)[m++] = '{';
    for (int i = 0; i < b->n; i++) {
        const batch_row *row = &b->rows[i];
        if (row->publish) continue;
        if (count++) {
            (*ids)[k++] = ',';
            (*reasons)[m++] = ',';
        }
        size_t n = strlen(row->id);
        memcpy(*ids + k, row->id, n);
        k += n;
        if (!row->reason[0]) {
            memcpy(*reasons + m, "NULL", 4);
            m += 4;
            continue;
        }
        (*reasons)[m++] = '"';
        for (const char *p = row->reason; *p; p++) {
            if (*p == '"' || *p == '\\') (*reasons)[m++] = '\\';
            (*reasons)[m++] = *p;
        }
        (*reasons)[m++] = '"';
    }
    (*ids)[k++] = '}';
    (*ids)[k] = 0;
    (*reasons)[m++] = '}';
    (*reasons)[m] = 0;
    return 0;
}

/* ---- lanes --------------------------------------------------------------------------- */

/* Rows may be waiting: the claim locked as many as it could, or left some behind for the
 * byte budget (they would otherwise wait for the next NOTIFY or poll). */
static int batch_full(const batch *b) {
    return b->left_behind || b->n >= b->limit;
}

static void adapt_claim_limit(ferry_relay *r, const batch *b) {
    /* (while Redis refuses adds the limit only shrinks: see refused()) */
    if (r->refusing) return;
    r->claim_limit = ferry__relay_next_claim_limit(r->claim_limit, r->batch_size, b->n, b->limit,
                                                   b->left_behind, 0);
}

/* lane_send's statements: a commit is at most 3 (set rows aside, SET LOCAL, COMMIT), a
 * claim at most 5 (BEGIN, SET LOCAL, the claim, RELAY_ST_AFTER_CLAIM, the relay probe), and one
 * send may carry both. */
#define COMMIT_STMTS_MAX 3
#define CLAIM_STMTS_MAX 5
#define LANE_STMTS (COMMIT_STMTS_MAX + CLAIM_STMTS_MAX)

typedef struct lane {
    ferry__pgc *pg;
    batch b;   /* the rows claimed by the open transaction */
    int tx;    /* a transaction may be open (BEGIN sent, no COMMIT/ROLLBACK since) */
    int added; /* b's jobs are in Redis: the transaction should commit */
    /* statements sent and not read yet */
    size_t nst;
    ferry__pg_segs segs;
    ferry__pg_stmt st[LANE_STMTS];
    int commit_at, claim_at, alone_at; /* their index in st, -1 = not sent */
    int claim_limit;                   /* the LIMIT of the claim sent */
    int64_t claim_sent_us;             /* mono µs when it was sent */
} lane;

static void count_failure(ferry_relay *r) {
    pthread_mutex_lock(&r->mu);
    r->stats.failed_batches++;
    pthread_mutex_unlock(&r->mu);
}

/* Row i of a claimed batch as an event row (never its payload). */
static ferry_relay_event_row event_row(const ferry_relay *r, const batch *b, int i) {
    const batch_row *row = &b->rows[i];
    return (ferry_relay_event_row){
        .id = row->id,
        .topic = PQgetvalue(b->res, i, 1),
        .trace_id = PQgetisnull(b->res, i, 3) ? NULL : PQgetvalue(b->res, i, 3),
        .jobs = row->publish && row->topic >= 0 ? r->topics[row->topic].ntargets : 0};
}

/* A row set aside: the QUARANTINED event (its line, at error, when there is no event
 * callback). */
static void report_set_aside(ferry_relay *r, const batch *b, int i, const char *reason) {
    ferry_relay_event_row er = event_row(r, b, i);
    er.jobs = 0;
    ferry_relay_event ev = {.kind = FERRY_RELAY_EVENT_QUARANTINED,
                            .level = FERRY_LOG_ERROR,
                            .rows = &er,
                            .nrows = 1,
                            .reason = reason};
    ferry__relay_event(r, &ev, "relay: event %s set aside (quarantined_at), not published: %s",
                       er.id, reason);
}

/* The PUBLISHED event of a committed batch, with its published rows (only built when a
 * program takes the events: it costs an array per batch). */
static void report_published(ferry_relay *r, const batch *b) {
    if (!r->event) return;
    ferry_relay_event_row *rows = b->published ? malloc(b->published * sizeof *rows) : NULL;
    size_t k = 0;
    for (int i = 0; rows && i < b->n; i++)
        if (b->rows[i].publish) rows[k++] = event_row(r, b, i);
    ferry_relay_event ev = {.kind = FERRY_RELAY_EVENT_PUBLISHED,
                            .level = FERRY_LOG_INFO,
                            .rows = rows,
                            .nrows = k, /* 0 when out of memory: the counts still hold */
                            .published = b->published,
                            .jobs = b->jobs,
                            .quarantined = b->quarantined,
                            .duration_ms = (ferry__relay_mono_us() - b->claim_sent_us) / 1000};
    ferry__relay_event(r, &ev, NULL);
    free(rows);
}

/* The lane's batch committed: count it, report the rows set aside and the batch, drop it. */
static void committed(ferry_relay *r, lane *l) {
    batch *b = &l->b;
    if (b->n == 0) return; /* an empty claim */
    for (int i = 0; i < b->n; i++)
        if (b->rows && b->rows[i].reason[0]) report_set_aside(r, b, i, b->rows[i].reason);
    if (b->rows) report_published(r, b);
    pthread_mutex_lock(&r->mu);
    r->stats.published += b->published;
    r->stats.jobs_added += b->jobs;
    r->stats.quarantined += b->quarantined;
    r->stats.batches++;
    pthread_mutex_unlock(&r->mu);
    ferry__relay_metrics_committed(r, b->published, b->claim_sent_us);
}

/* The batch's jobs are in Redis: each published row's age (ferry_relay_commit_to_enqueue). */
static void observe_enqueued(ferry_relay *r, const batch *b) {
    if (!r->m_commit_to_enqueue) return;
    int64_t now_ms = ferry__now_ms();
    for (int i = 0; i < b->n; i++)
        if (b->rows[i].publish) ferry__relay_metrics_enqueued(r, now_ms, b->rows[i].created_s);
}

/* Send, without waiting: with commit, the lane's batch's put-backs and COMMIT (one
 * segment); with claim, BEGIN + the claim of the next batch (another segment, so it runs
 * whatever became of the COMMIT). */
static int lane_send(ferry_relay *r, lane *l, int commit, int claim, ferry_error *err) {
    char limit[16], budget[24], *ids = NULL, *reasons = NULL;
    snprintf(limit, sizeof limit, "%d", r->claim_limit);
    snprintf(budget, sizeof budget, "%zu", r->batch_bytes);
    const char *claim_params[] = {r->topics_array, limit, budget}, *put_params[2] = {NULL, NULL};
    const char *alone_params[] = {r->schema};
    size_t k = 0;
    ferry__pg_segs segs = 0;
    l->commit_at = l->claim_at = l->alone_at = -1;
    if (commit) {
        if (l->b.quarantined + l->b.put_back) {
            if (put_back_arrays(&l->b, &ids, &reasons))
                return ferry__err(err, FERRY_ENOMEM, "out of memory");
            put_params[0] = ids;
            put_params[1] = reasons;
            l->st[k++] = (ferry__pg_stmt){"set rows aside", RELAY_ST_PUT_BACK, NULL, 2, put_params};
        }
        /* only the publish bookkeeping commits asynchronously (see the claim below) */
        if (l->b.quarantined)
            l->st[k++] = (ferry__pg_stmt){"set rows aside", NULL,
                                          "SET LOCAL synchronous_commit = on", 0, NULL};
        l->commit_at = (int)k;
        l->st[k++] = (ferry__pg_stmt){"commit", RELAY_ST_COMMIT, NULL, 0, NULL};
        segs |= 1u << (k - 1);
    }
    if (claim) {
        l->st[k++] = (ferry__pg_stmt){"begin", RELAY_ST_BEGIN, NULL, 0, NULL};
        /* The transaction records only published_at. If PostgreSQL crashes and loses a
         * commit that had not reached the disk yet, the rows read as unpublished again and
         * are published again: the jobs exist already and the queue drops them by jobId
         * (or, if they ran and were removed meanwhile, the consumers' inboxes absorb the
         * second run) - exactly what a relay crash between the Redis adds and COMMIT does,
         * the at-least-once contract of the relay. Nothing is lost: the jobs are in Redis
         * before COMMIT is sent. So the commit need not wait for the WAL flush.
         * (A later durable commit on the server flushes this one too: WAL is sequential.) */
        l->st[k++] = (ferry__pg_stmt){"begin", RELAY_ST_ASYNC, NULL, 0, NULL};
        l->claim_at = (int)k;
        l->claim_limit = r->claim_limit;
        l->claim_sent_us = ferry__relay_mono_us();
        l->st[k++] = (ferry__pg_stmt){"claim batch", RELAY_ST_CLAIM, NULL, 3, claim_params};
        l->st[k++] = (ferry__pg_stmt){"claim batch", RELAY_ST_AFTER_CLAIM, NULL, 0, NULL};
        /* on the connection that holds our shared lock, once in a while */
        int64_t trust = r->alone ? ALONE_TRUST_MS : NOT_ALONE_TRUST_MS;
        if (l->pg == &r->pg && (!r->alone_at || ferry__mono_ms() - r->alone_at >= trust)) {
            l->alone_at = (int)k;
            l->st[k++] = (ferry__pg_stmt){"relay probe", RELAY_ST_ALONE, NULL, 1, alone_params};
        }
    }
    int rc = ferry__pgc_send(l->pg, ferry__relay_deadline(r), l->st, k, segs, err);
    free(ids);
    free(reasons);
    l->nst = rc ? 0 : k;
    l->segs = segs;
    if (claim) l->tx = 1;
    return rc;
}

/* Read what lane_send sent: count the batch committed, or keep the claimed rows in l->b. */
static int lane_recv(ferry_relay *r, lane *l, ferry_error *err) {
    PGresult *out[LANE_STMTS] = {NULL};
    size_t failed = 0, n = l->nst;
    l->nst = 0;
    if (!n) return 0;
    int rc = ferry__pgc_recv(l->pg, ferry__relay_deadline(r), l->st, n, l->segs, out, &failed, err);
    /* The claim ran into statement_timeout (57014, on the claim or, a cancel left pending,
     * on RELAY_ST_AFTER_CLAIM; lock waits end in 55P03 instead), or took the client's deadline
     * too: retried as it is, it would time out for ever (relay_claim_limit.c). */
    if (rc && l->claim_at >= 0 &&
        (failed == (size_t)l->claim_at || failed == (size_t)l->claim_at + 1) &&
        (!strcmp(l->pg->sqlstate, "57014") || rc == FERRY_ETIMEDOUT))
        r->claim_timeout = l->claim_limit;
    if (l->commit_at >= 0) {
        PGresult *c = out[l->commit_at];
        /* COMMIT of a transaction that failed reports ROLLBACK */
        if (c && !strcmp(PQcmdStatus(c), "COMMIT")) {
            committed(r, l);
        } else if (!rc) {
            rc = ferry__err(err, FERRY__EDB, "commit: the transaction was rolled back");
        }
        batch_free(&l->b);
        l->added = 0;
        /* A COMMIT that ran ended the transaction either way (COMMIT or ROLLBACK). One that
         * did not run (a statement before it in its segment failed) leaves the transaction
         * open and aborted, holding the rows' locks: keep tx so a rollback ends it. */
        l->tx = c == NULL;
    }
    if (l->alone_at >= 0 && out[l->alone_at]) {
        r->alone = !strcmp(PQgetvalue(out[l->alone_at], 0, 0), "t");
        r->alone_at = ferry__mono_ms();
    }
    if (l->claim_at >= 0) {
        PGresult *c = out[l->claim_at];
        l->tx = 1; /* even if BEGIN failed: a ROLLBACK is harmless */
        if (c) {
            l->b.res = c;
            l->b.n = PQntuples(c);
            l->b.limit = l->claim_limit;
            l->b.claim_sent_us = l->claim_sent_us;
            /* rows locked (and visible) but not marked: left behind for the budget */
            l->b.left_behind = l->b.n > 0 && atoll(PQgetvalue(c, 0, 4)) > l->b.n;
            adapt_claim_limit(r, &l->b);
            if (l->b.n > 0 && !rc) r->slow_row[0] = '\0'; /* a claim got through */
            out[l->claim_at] = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        PQclear(out[i]);
    return rc;
}

static void rollback(ferry_relay *r, lane *l) {
    if (l->tx && l->pg->conn && !l->pg->broken) {
        ferry_error e = {0};
        if (ferry__pgc_exec(l->pg, ferry__relay_deadline(r), "rollback", NULL, "ROLLBACK", 0, NULL,
                            NULL, &e))
            l->pg->broken = 1; /* unknown state: start over on a new connection */
    }
    batch_free(&l->b);
    l->tx = l->added = 0;
}

/* A second connection found broken is closed at once: its session (and any transaction it
 * held, with the rows' locks) ends now rather than at the server's idle timeout. The next
 * drain that wants it opens a new one. (The main connection is reopened by relay.c.) */
static void drop_broken_lane2(ferry_relay *r) {
    if (r->pg2.conn && r->pg2.broken) ferry__pgc_close(&r->pg2);
}

/* After a failure: read what is in flight, commit what is in Redis already (if its
 * connection still works), roll back the rest. */
static void settle(ferry_relay *r, lane *lanes, int nl) {
    for (int i = 0; i < nl; i++) {
        lane *l = &lanes[i];
        ferry_error e = {0};
        if (l->nst) (void)lane_recv(r, l, &e); /* what committed is counted */
        if (l->added && l->pg->conn && !l->pg->broken && !lane_send(r, l, 1, 0, &e))
            lane_recv(r, l, &e);
        rollback(r, l);
    }
    drop_broken_lane2(r);
}

/* After a Redis failure: attempts + 1 and last_error on the batch's rows, own transaction. */
static void record_failure(ferry_relay *r, lane *l, const char *message) {
    char *ids = published_ids(&l->b);
    if (!ids || !l->b.published || !l->pg->conn || l->pg->broken) {
        free(ids);
        return;
    }
    const char *params[] = {ids, message};
    ferry_error e = {0};
    if (ferry__pgc_exec(l->pg, ferry__relay_deadline(r), "record failure", RELAY_ST_FAILED, NULL, 2,
                        params, NULL, &e))
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: could not record the failure on the rows: %s",
                         e.message);
    free(ids);
}

/* Job data size from which a row Redis refuses again and again is blamed rather than Redis:
 * a large add can be refused alone (an OOM reply: its own bytes in the query buffer take
 * Redis past maxmemory) where smaller ones pass. It must be refused REFUSED_ROW_TIMES times
 * in a row over at least REFUSED_ROW_MS, so a passing condition is not blamed on it. */
#define REFUSED_ROW_MIN (64 * 1024)
#define REFUSED_ROW_TIMES 3
#define REFUSED_ROW_MS 5000

/* Error replies of a Redis that is starting, failing over or busy: they pass by themselves
 * and say nothing about the row. The code is the reply's first word, which the queue's
 * message quotes after ": " (a queue name cannot hold ':', so it cannot fake one). */
static int transient_reply(const char *message) {
    static const char *const codes[] = {": LOADING ",    ": READONLY ",    ": BUSY ",
                                        ": MASTERDOWN ", ": CLUSTERDOWN ", ": NOREPLICAS ",
                                        ": TRYAGAIN "};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strstr(message, codes[i])) return 1;
    return 0;
}

/* Redis refused the batch's add (an error reply, not a lost connection): every event behind
 * it would wait for ever if the same row were retried unchanged. A batch of several rows
 * claims half as many next time (and no more until an add passes); a large row refused
 * alone REFUSED_ROW_TIMES times in a row, over REFUSED_ROW_MS at least, is set aside
 * (quarantined_at, last_error) so the events behind it move. A small row only means Redis
 * refuses everything (it is full, a queue key is broken): it is retried, as are connection
 * failures and transient replies. Either way the drain returns RELAY_BATCH_REDIS_FAILED
 * (the usual backoff). Returns 1 when the row was set aside (its last_error and attempts
 * are then written), else 0 (the caller records the failure on the rows). */
static int refused(ferry_relay *r, lane *l, int rc, const ferry_error *err) {
    const batch *b = &l->b;
    const char *message = err ? err->message : "error reply";
    if (rc != FERRY_EREDIS || b->n < 1 || transient_reply(message)) return 0;
    r->refusing = 1; /* until an add goes through, claims do not grow back */
    if (b->n > 1) {
        r->claim_limit =
            ferry__relay_next_claim_limit(r->claim_limit, r->batch_size, 0, b->n, 0, 1);
        r->refused_row[0] = '\0';
        ferry__relay_log(r, FERRY_LOG_WARN,
                         "relay: Redis refused a batch of %d rows; claiming %d at a time now", b->n,
                         r->claim_limit);
        return 0;
    }
    const batch_row *row = &b->rows[0];
    if (!row->publish || row->size < REFUSED_ROW_MIN) {
        r->refused_row[0] = '\0';
        return 0;
    }
    int64_t now = ferry__mono_ms();
    if (strcmp(row->id, r->refused_row)) {
        snprintf(r->refused_row, sizeof r->refused_row, "%s", row->id);
        r->refused_times = 1;
        r->refused_since = now;
        return 0;
    }
    if (++r->refused_times < REFUSED_ROW_TIMES || now - r->refused_since < REFUSED_ROW_MS) return 0;
    r->refused_row[0] = '\0';
    char reason[FERRY_ERROR_MESSAGE_MAX + 256];
    snprintf(reason, sizeof reason,
             "Redis refused this row's job data (%zu bytes) %d times in %lld s: %s; set aside so "
             "the events behind it are published: fix the cause (for an OOM reply, Redis' "
             "maxmemory) and clear quarantined_at to publish it",
             row->size, r->refused_times, (long long)((now - r->refused_since) / 1000), message);
    if (!l->pg->conn || l->pg->broken || ferry__relay_set_aside(r, l->pg, row->id, reason) != 1)
        return 0;
    report_set_aside(r, b, 0, reason);
    pthread_mutex_lock(&r->mu);
    r->stats.quarantined++;
    pthread_mutex_unlock(&r->mu);
    return 1;
}

/* The other lane's statements, sent while this batch's jobs are added. */
typedef struct other_send {
    ferry_relay *r;
    lane *o;
    int send, claim;
    int rc;
    ferry_error err;
} other_send;

static void send_other(void *arg) {
    other_send *s = arg;
    if (s->send) s->rc = lane_send(s->r, s->o, s->o->added, s->claim, &s->err);
}

relay_batch_rc ferry__relay_drain(ferry_relay *r, int *rows, int *more, ferry_error *err) {
    *rows = 0;
    *more = 0;
    lane lanes[2] = {{.pg = &r->pg}, {.pg = &r->pg2}};
    int nl = 1, cur = 0, rc;
    int64_t until = ferry__mono_ms() + DRAIN_SLICE_MS;
    r->claim_timeout = 0;
    if ((rc = lane_send(r, &lanes[0], 0, 1, err)) || (rc = lane_recv(r, &lanes[0], err)))
        goto db_failed;
    if (batch_full(&lanes[0].b) && r->alone && ferry__relay_lane2(r)) nl = 2;
    for (;;) {
        lane *c = &lanes[cur], *o = nl == 2 ? &lanes[1 - cur] : NULL;
        batch *b = &c->b;
        *rows = b->n;
        if (b->n == 0) break;
        if ((rc = build_rows(r, b, err))) goto db_failed; /* out of memory */
        int full = batch_full(b);
        int next = full && !atomic_load(&r->stopping) && ferry__mono_ms() < until;
        /* Claim the next batch ahead, on the other lane while this one's jobs are added,
         * only while no other relay publishes: replicas overlap each other's PostgreSQL
         * and Redis work already, and more batches in flight would only cost CPU (locked
         * rows to skip, wake-ups). The other lane commits the batch before meanwhile.
         * Not after a batch that left rows behind for the byte budget: they stay locked
         * until it commits, so a claim made before would skip them and publish younger
         * rows first. Its COMMIT goes first, then the next claim on the same connection. */
        int ahead = next && o && r->alone && !b->left_behind;
        other_send os = {r, o, o && (o->added || ahead), ahead, 0, {0}};
        add_hook hook = {send_other, &os};
        if ((rc = add_jobs(r, b, &hook, err))) {
            for (int i = 0; i < nl; i++) { /* the batch before may still commit */
                ferry_error e = {0};
                if (lanes[i].nst) lane_recv(r, &lanes[i], &e);
            }
            if (o) rollback(r, o);
            ferry_error e = {0};
            if (c->tx && c->pg->conn && !c->pg->broken &&
                ferry__pgc_exec(c->pg, ferry__relay_deadline(r), "rollback", NULL, "ROLLBACK", 0,
                                NULL, NULL, &e))
                c->pg->broken = 1;
            c->tx = 0;
            /* (a row set aside has its last_error and attempts written by that) */
            if (!refused(r, c, rc, err)) record_failure(r, c, err ? err->message : "redis error");
            batch_free(&c->b);
            drop_broken_lane2(r);
            count_failure(r);
            return RELAY_BATCH_REDIS_FAILED;
        }
        r->refused_row[0] = '\0';
        r->refusing = 0;
        observe_enqueued(r, b);
        if (r->fault) r->fault("relay_after_publish", r->fault_userdata);
        c->added = 1;
        if (os.rc) {
            if (err) *err = os.err;
            rc = os.rc;
            goto db_failed;
        }
        if (o && (rc = lane_recv(r, o, err))) goto db_failed;
        if (ahead) {
            cur = 1 - cur; /* this batch commits with the claim after the next */
            continue;
        }
        /* this COMMIT and the next claim (if any) in one round trip */
        if ((rc = lane_send(r, c, 1, next, err)) || (rc = lane_recv(r, c, err))) goto db_failed;
        if (!next) {
            *more = full;
            return RELAY_BATCH_OK;
        }
    }
    /* an empty claim: end its transaction, and commit the batch before it */
    for (int i = 0; i < nl; i++)
        if ((lanes[i].tx || lanes[i].added) && (rc = lane_send(r, &lanes[i], 1, 0, err)))
            goto db_failed;
    for (int i = 0; i < nl; i++)
        if ((rc = lane_recv(r, &lanes[i], err))) goto db_failed;
    return RELAY_BATCH_OK;
db_failed:
    /* Jobs may already be in Redis for rows that stay unpublished: they are published
     * again, and the queues drop the duplicates by jobId. */
    settle(r, lanes, nl);
    count_failure(r);
    if (r->claim_timeout) return ferry__relay_claim_timed_out(r, err);
    return RELAY_BATCH_DB_FAILED;
}
