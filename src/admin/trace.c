/* trace.c - one outbox event followed through every hop (ferry/trace.h): the outbox row,
 * the inbox markers, the dead letters (and those of the jobs their redrives created), the
 * redrive audit rows, and the jobs in Redis. It sits in the admin layer because it reads
 * every module below it. The jobs: the relay adds one per route target with jobId = the
 * event id, so the candidates are (queue, event id) for each queue the routes give (or every
 * queue under the prefix), (queue, job id) of each dead letter and (queue, new job id) of
 * each executed redrive; one pipelined EXISTS tells which are there, and only those are
 * read (a queue opened without writing its meta). Reads only; no payload in any message.
 *
 * Every PostgreSQL statement ends by a deadline whatever the server does (ferry__pgc_exec
 * over the caller's connection: libpq's blocking calls have none, and statement_timeout
 * does nothing for a server that stopped answering): the snapshot's statements share
 * PG_SNAPSHOT_MS, the ROLLBACK that ends it has PG_ROLLBACK_MS of its own. After a
 * deadline the connection still has the statement in flight: no ROLLBACK is sent, the
 * trace fails with FERRY_ETIMEDOUT, and the caller closes the connection (the admin pool
 * drops one that is not idle). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/trace.h"
#include "outbox/routes.h"
#include "pg/pg.h"
#include "redis/conn.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/uuid7.h"

#define EXISTS_CHUNK 1000
#define PG_SNAPSHOT_MS 30000 /* BEGIN and the four reads, together */
#define PG_ROLLBACK_MS 5000

/* Tests only (tests/integration/test_trace_pg.c declares them): when > 0, the deadline of
 * the snapshot and of the ROLLBACK in ms instead of the two above; when set, called with
 * the connection and the statement's `what` before each statement is sent. */
int ferry__trace_pg_ms;
void (*ferry__trace_pg_hook)(PGconn *conn, const char *what);

void ferry_trace_options_init(ferry_trace_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

void ferry_trace_free(ferry_trace *t) {
    if (!t) return;
    if (t->outbox) {
        free(t->outbox->id);
        free(t->outbox->topic);
        free(t->outbox->aggregate_id);
        free(t->outbox->trace_id);
        free(t->outbox->last_error);
        free(t->outbox);
    }
    for (size_t i = 0; i < t->nroutes; i++) {
        free(t->routes[i].queue);
        free(t->routes[i].name);
    }
    free(t->routes);
    for (size_t i = 0; i < t->njobs; i++) {
        free(t->jobs[i].queue);
        ferry_job_info_free(t->jobs[i].job);
        free(t->jobs[i].redrive_of);
    }
    free(t->jobs);
    for (size_t i = 0; i < t->ninbox; i++)
        free(t->inbox[i].consumer);
    free(t->inbox);
    for (size_t i = 0; i < t->ndead_letters; i++) {
        ferry_trace_dead_letter *d = &t->dead_letters[i];
        free(d->queue);
        free(d->job_id);
        free(d->name);
        free(d->error);
        free(d->redriven_by);
        free(d->redrive_job_id);
    }
    free(t->dead_letters);
    for (size_t i = 0; i < t->nredrives; i++) {
        ferry_trace_redrive *r = &t->redrives[i];
        free(r->queue);
        free(r->job_id);
        free(r->new_job_id);
        free(r->action);
        free(r->redriven_by);
    }
    free(t->redrives);
    free(t);
}

/* A copy of column c of row (NULL when SQL NULL); sets *oom when out of memory. */
static char *col(const PGresult *r, int row, int c, int *oom) {
    if (PQgetisnull(r, row, c)) return NULL;
    char *s = strdup(PQgetvalue(r, row, c));
    if (!s) *oom = 1;
    return s;
}

static char *dup(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

static int oom_err(ferry_error *err) {
    return ferry__err(err, FERRY_ENOMEM, "trace: out of memory");
}

/* ---- PostgreSQL ------------------------------------------------------------------------ */

/* The caller's connection as ferry__pgc_exec takes it, and the snapshot's deadline. */
typedef struct tpg {
    ferry__pgc c; /* c.conn borrowed; c.broken once a deadline passed or the link failed */
    int64_t deadline;
} tpg;

static int pg_exec(tpg *db, int64_t deadline, const char *what, const char *sql, int nparams,
                   const char *const *params, PGresult **out, ferry_error *err) {
    if (ferry__trace_pg_hook) ferry__trace_pg_hook(db->c.conn, what);
    return ferry__pgc_exec(&db->c, deadline, what, NULL, sql, nparams, params, out, err);
}

static int pg_run(tpg *db, const char *what, const char *sql, int nparams,
                  const char *const *params, PGresult **out, ferry_error *err) {
    return pg_exec(db, db->deadline, what, sql, nparams, params, out, err);
}

#define MS(expr) "COALESCE((extract(epoch FROM " expr ") * 1000)::bigint, 0)"

static int read_outbox(tpg *db, const char *qs, ferry_trace *t, ferry_error *err) {
    char sql[FERRY__QSCHEMA_MAX + 400];
    snprintf(sql, sizeof sql,
             "SELECT id::text, topic, aggregate_id::text, trace_id, %s, %s, attempts, "
             "last_error, %s FROM %s.outbox_events WHERE id = $1::uuid",
             MS("created_at"), MS("published_at"), MS("quarantined_at"), qs);
    const char *p[] = {t->event_id};
    PGresult *r = NULL;
    int rc = pg_run(db, "trace: outbox", sql, 1, p, &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1) {
        ferry_trace_outbox *ob = calloc(1, sizeof *ob);
        int oom = !ob;
        if (ob) {
            ob->id = col(r, 0, 0, &oom);
            ob->topic = col(r, 0, 1, &oom);
            ob->aggregate_id = col(r, 0, 2, &oom);
            ob->trace_id = col(r, 0, 3, &oom);
            ob->created_at_ms = atoll(PQgetvalue(r, 0, 4));
            ob->published_at_ms = atoll(PQgetvalue(r, 0, 5));
            ob->attempts = atol(PQgetvalue(r, 0, 6));
            ob->last_error = col(r, 0, 7, &oom);
            ob->quarantined_at_ms = atoll(PQgetvalue(r, 0, 8));
        }
        t->outbox = ob; /* freed with t, also when half-filled */
        if (oom) rc = oom_err(err);
    }
    PQclear(r);
    return rc;
}

static int read_inbox(tpg *db, const char *qs, ferry_trace *t, ferry_error *err) {
    char sql[FERRY__QSCHEMA_MAX + 300];
    snprintf(sql, sizeof sql,
             "SELECT consumer, %s FROM %s.processed_messages WHERE message_id = $1::uuid "
             "ORDER BY processed_at, consumer LIMIT %d",
             MS("processed_at"), qs, FERRY_TRACE_ROWS_MAX);
    const char *p[] = {t->event_id};
    PGresult *r = NULL;
    int rc = pg_run(db, "trace: inbox", sql, 1, p, &r, err);
    if (rc) return rc;
    int n = PQntuples(r), oom = 0;
    if (n) {
        t->inbox = calloc((size_t)n, sizeof *t->inbox);
        oom = !t->inbox;
    }
    for (int i = 0; !oom && i < n; i++) {
        t->inbox[i].consumer = col(r, i, 0, &oom);
        t->inbox[i].processed_at_ms = atoll(PQgetvalue(r, i, 1));
        t->ninbox++;
    }
    PQclear(r);
    return oom ? oom_err(err) : 0;
}

/* The dead letters of the event's jobs, and of the jobs their executed redrives created
 * (a redriven job that failed again is a dead letter with the redrive's job id). */
static int read_dead_letters(tpg *db, const char *qs, const char *prefix, ferry_trace *t,
                             ferry_error *err) {
    char sql[4 * FERRY__QSCHEMA_MAX + 1200];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE chain(id, depth) AS ("
             " SELECT d.id, 0 FROM %s.dead_letters d WHERE d.prefix = $2 AND d.job_id = $1"
             " UNION"
             " SELECT d.id, c.depth + 1 FROM chain c"
             " JOIN %s.dead_letter_redrives r ON r.dead_letter_id = c.id AND NOT r.dry_run"
             " AND r.action = 'redrive' AND r.new_job_id IS NOT NULL"
             " JOIN %s.dead_letters d ON d.prefix = $2 AND d.queue = r.queue"
             " AND d.job_id = r.new_job_id"
             " WHERE c.depth < %d)"
             " SELECT id::text, queue, job_id, job_name, error, attempts_made, %s, redriven_by,"
             " redrive_job_id, redrive_count, %s FROM %s.dead_letters"
             " WHERE id IN (SELECT id FROM chain) ORDER BY failed_at, id LIMIT %d",
             qs, qs, qs, FERRY_TRACE_DEPTH_MAX, MS("failed_at"), MS("redriven_at"), qs,
             FERRY_TRACE_ROWS_MAX);
    const char *p[] = {t->event_id, prefix};
    PGresult *r = NULL;
    int rc = pg_run(db, "trace: dead letters", sql, 2, p, &r, err);
    if (rc) return rc;
    int n = PQntuples(r), oom = 0;
    if (n) {
        t->dead_letters = calloc((size_t)n, sizeof *t->dead_letters);
        oom = !t->dead_letters;
    }
    for (int i = 0; !oom && i < n; i++) {
        ferry_trace_dead_letter *d = &t->dead_letters[i];
        snprintf(d->id, sizeof d->id, "%s", PQgetvalue(r, i, 0));
        d->queue = col(r, i, 1, &oom);
        d->job_id = col(r, i, 2, &oom);
        d->name = col(r, i, 3, &oom);
        d->error = col(r, i, 4, &oom);
        d->attempts_made = atol(PQgetvalue(r, i, 5));
        d->failed_at_ms = atoll(PQgetvalue(r, i, 6));
        d->redriven_by = col(r, i, 7, &oom);
        d->redrive_job_id = col(r, i, 8, &oom);
        d->redrive_count = atol(PQgetvalue(r, i, 9));
        d->redriven_at_ms = atoll(PQgetvalue(r, i, 10));
        t->ndead_letters++;
    }
    PQclear(r);
    return oom ? oom_err(err) : 0;
}

static int read_redrives(tpg *db, const char *qs, ferry_trace *t, ferry_error *err) {
    if (!t->ndead_letters) return 0;
    const char **ids = calloc(t->ndead_letters, sizeof *ids);
    if (!ids) return oom_err(err);
    for (size_t i = 0; i < t->ndead_letters; i++)
        ids[i] = t->dead_letters[i].id;
    char *arr = ferry__pg_text_array(ids, t->ndead_letters);
    free(ids);
    if (!arr) return oom_err(err);
    char sql[FERRY__QSCHEMA_MAX + 400];
    snprintf(sql, sizeof sql,
             "SELECT dead_letter_id::text, queue, job_id, new_job_id, action, redriven_by, %s, "
             "dry_run FROM %s.dead_letter_redrives WHERE dead_letter_id = ANY($1::uuid[]) "
             "ORDER BY id LIMIT %d",
             MS("redriven_at"), qs, FERRY_TRACE_ROWS_MAX);
    const char *p[] = {arr};
    PGresult *r = NULL;
    int rc = pg_run(db, "trace: redrives", sql, 1, p, &r, err);
    free(arr);
    if (rc) return rc;
    int n = PQntuples(r), oom = 0;
    if (n) {
        t->redrives = calloc((size_t)n, sizeof *t->redrives);
        oom = !t->redrives;
    }
    for (int i = 0; !oom && i < n; i++) {
        ferry_trace_redrive *x = &t->redrives[i];
        snprintf(x->dead_letter_id, sizeof x->dead_letter_id, "%s", PQgetvalue(r, i, 0));
        x->queue = col(r, i, 1, &oom);
        x->job_id = col(r, i, 2, &oom);
        x->new_job_id = col(r, i, 3, &oom);
        x->action = col(r, i, 4, &oom);
        x->redriven_by = col(r, i, 5, &oom);
        x->redriven_at_ms = atoll(PQgetvalue(r, i, 6));
        x->dry_run = PQgetvalue(r, i, 7)[0] == 't';
        t->nredrives++;
    }
    PQclear(r);
    return oom ? oom_err(err) : 0;
}

/* ---- the jobs -------------------------------------------------------------------------- */

typedef struct cand {
    const char *queue, *job_id; /* borrowed from the trace, the routes or the queue names */
    const char *redrive_of;     /* borrowed; NULL when none */
} cand;

typedef struct cands {
    cand *v;
    size_t n, cap;
} cands;

/* Add one (repeats are merged after sorting: see cands_sort). */
static int cand_add(cands *c, const char *queue, const char *job_id, const char *redrive_of) {
    if (!queue || !job_id || !*queue || !*job_id) return 0;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 64;
        cand *nv = realloc(c->v, ncap * sizeof *nv);
        if (!nv) return -1;
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = (cand){queue, job_id, redrive_of};
    return 0;
}

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    int c = strcmp(x->queue, y->queue);
    return c ? c : strcmp(x->job_id, y->job_id);
}

/* Sort by queue, then id, merging repeats (one keeps the redrive it came from). */
static void cands_sort(cands *c) {
    if (!c->n) return;
    qsort(c->v, c->n, sizeof *c->v, cand_cmp);
    size_t w = 0;
    for (size_t i = 1; i < c->n; i++) {
        if (!cand_cmp(&c->v[w], &c->v[i])) {
            if (!c->v[w].redrive_of) c->v[w].redrive_of = c->v[i].redrive_of;
            continue;
        }
        c->v[++w] = c->v[i];
    }
    c->n = w + 1;
}

/* Which candidates have a job hash (<prefix>:<queue>:<id>): one pipelined EXISTS per
 * chunk. there[i] set to 1 for those. */
static int exists_all(const ferry_trace_options *o, const char *prefix, const cands *c, char *there,
                      ferry_error *err) {
    ferry_conn *rc_conn = NULL;
    int rc = ferry__conn_open(o->redis, NULL, &rc_conn, err);
    if (rc) return rc;
    redisReply **replies = calloc(EXISTS_CHUNK, sizeof *replies);
    if (!replies) {
        ferry__conn_close(rc_conn);
        return oom_err(err);
    }
    for (size_t start = 0; rc == 0 && start < c->n; start += EXISTS_CHUNK) {
        size_t n = c->n - start < EXISTS_CHUNK ? c->n - start : EXISTS_CHUNK;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            const cand *x = &c->v[start + i];
            size_t kn = strlen(prefix) + strlen(x->queue) + strlen(x->job_id) + 3;
            char *key = malloc(kn);
            if (!key) {
                rc = oom_err(err);
                break;
            }
            snprintf(key, kn, "%s:%s:%s", prefix, x->queue, x->job_id);
            const char *argv[] = {"EXISTS", key};
            size_t lens[] = {6, strlen(key)};
            rc = ferry__conn_append_argv(rc_conn, 2, argv, lens, err);
            free(key);
        }
        if (rc) break;
        rc = ferry__conn_pipeline_read(rc_conn, n, replies, err);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            redisReply *y = replies[i];
            if (y && y->type == REDIS_REPLY_INTEGER && y->integer > 0) there[start + i] = 1;
        }
        for (size_t i = 0; rc == 0 && i < n; i++) {
            freeReplyObject(replies[i]);
            replies[i] = NULL;
        }
    }
    free(replies);
    ferry__conn_close(rc_conn);
    return rc;
}

/* Read the jobs of the candidates that exist into t->jobs (sorted by queue, then id). */
static int read_jobs(const ferry_trace_options *o, const char *prefix, cands *c, ferry_trace *t,
                     ferry_error *err) {
    cands_sort(c);
    if (!c->n) return 0;
    char *there = calloc(c->n, 1);
    if (!there) return oom_err(err);
    int rc = exists_all(o, prefix, c, there, err);
    size_t found = 0;
    for (size_t i = 0; i < c->n; i++)
        found += there[i] != 0;
    if (rc == 0 && found) {
        t->jobs = calloc(found, sizeof *t->jobs);
        if (!t->jobs) rc = oom_err(err);
    }
    ferry_queue *q = NULL;
    const char *qname = NULL;
    for (size_t i = 0; rc == 0 && i < c->n; i++) {
        if (!there[i]) continue;
        const cand *x = &c->v[i];
        if (!qname || strcmp(qname, x->queue)) {
            ferry_queue_close(q);
            q = NULL;
            qname = x->queue;
            ferry_queue_options qo;
            ferry_queue_options_init(&qo);
            qo.redis = o->redis;
            qo.prefix = prefix;
            qo.skip_meta_update = 1;
            qo.allow_unknown_opts = 1;
            ferry_error qerr = {0};
            int orc = ferry_queue_open(x->queue, &qo, &q, &qerr);
            if (orc == FERRY_EINVAL) { /* a name ferry cannot open: nothing to show there */
                q = NULL;
                continue;
            }
            if (orc) {
                if (err) *err = qerr;
                rc = orc;
                break;
            }
        }
        if (!q) continue;
        ferry_job_info *j = NULL;
        ferry_error jerr = {0};
        int jrc = ferry_queue_get_job(q, x->job_id, &j, &jerr);
        if (jrc == FERRY_ENOTFOUND || jrc == FERRY_EINVAL) continue; /* gone meanwhile */
        if (jrc) {
            if (err) *err = jerr;
            rc = jrc;
            break;
        }
        int oom = 0;
        ferry_trace_job *tj = &t->jobs[t->njobs++];
        tj->job = j;
        tj->queue = dup(x->queue, &oom);
        tj->redrive_of = dup(x->redrive_of, &oom);
        if (oom) rc = oom_err(err);
    }
    ferry_queue_close(q);
    free(there);
    return rc;
}

/* The candidates: (queue, event id) in each queue to look in, the dead letters' own jobs,
 * the executed redrives' new jobs. `names` holds the queue names listed (owned by the
 * caller). */
static int gather(const ferry_trace_options *o, const char *prefix, ferry_trace *t, char ***names,
                  size_t *nnames, cands *c, ferry_error *err) {
    int narrowed = o->routes && t->outbox;
    if (narrowed) {
        for (size_t i = 0; i < t->nroutes; i++)
            if (cand_add(c, t->routes[i].queue, t->event_id, NULL)) return oom_err(err);
        t->queues_complete = 1;
    } else {
        size_t max = o->max_queues ? o->max_queues : FERRY_TRACE_QUEUES_DEFAULT;
        int complete = 0;
        int rc = ferry_queue_names(o->redis, prefix, max, names, nnames, &complete, err);
        if (rc) return rc;
        t->queues_complete = complete && *nnames < max;
        for (size_t i = 0; i < *nnames; i++)
            if (cand_add(c, (*names)[i], t->event_id, NULL)) return oom_err(err);
    }
    for (size_t i = 0; i < t->ndead_letters; i++) {
        const ferry_trace_dead_letter *d = &t->dead_letters[i];
        if (cand_add(c, d->queue, t->event_id, NULL) || cand_add(c, d->queue, d->job_id, NULL))
            return oom_err(err);
    }
    for (size_t i = 0; i < t->nredrives; i++) {
        const ferry_trace_redrive *r = &t->redrives[i];
        if (r->dry_run || !r->new_job_id || !r->action || strcmp(r->action, "redrive")) continue;
        if (cand_add(c, r->queue, r->new_job_id, r->dead_letter_id)) return oom_err(err);
    }
    /* a redrive whose audit row was lost still names its job on the row */
    for (size_t i = 0; i < t->ndead_letters; i++) {
        const ferry_trace_dead_letter *d = &t->dead_letters[i];
        if (d->redrive_job_id && cand_add(c, d->queue, d->redrive_job_id, d->id))
            return oom_err(err);
    }
    return 0;
}

static int fill_routes(const ferry_trace_options *o, ferry_trace *t, ferry_error *err) {
    t->routes_known = o->routes != NULL;
    if (!o->routes || !t->outbox || !t->outbox->topic) return 0;
    long ti = ferry__routes_find(o->routes, t->outbox->topic);
    if (ti < 0) return 0;
    size_t n = ferry_routes_target_count(o->routes, (size_t)ti);
    if (!n) return 0;
    t->routes = calloc(n, sizeof *t->routes);
    if (!t->routes) return oom_err(err);
    int oom = 0;
    for (size_t j = 0; j < n && !oom; j++) {
        const char *q = NULL, *name = NULL;
        if (ferry_routes_target(o->routes, (size_t)ti, j, &q, &name)) continue;
        ferry_trace_route *r = &t->routes[t->nroutes++];
        r->queue = dup(q, &oom);
        r->name = dup(name ? name : "", &oom);
    }
    return oom ? oom_err(err) : 0;
}

/* ---- the whole trace ------------------------------------------------------------------- */

int ferry_trace_get(PGconn *conn, const ferry_trace_options *o, const char *event_id,
                    ferry_trace **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!conn || !out || !event_id) return ferry__err(err, FERRY_EINVAL, "trace: NULL argument");
    if (strlen(event_id) != FERRY_UUID_STRLEN ||
        !ferry__uuid_text_valid(event_id, FERRY_UUID_STRLEN))
        return ferry__err(err, FERRY_EINVAL,
                          "trace: the event id is not a UUID (an outbox event id looks like "
                          "0190a5c4-7b1e-7c3d-9f00-1234567890ab)");
    ferry_trace_options none;
    ferry_trace_options_init(&none);
    if (!o) o = &none;
    if (o->max_queues > FERRY_TRACE_QUEUES_MAX)
        return ferry__err(err, FERRY_EINVAL, "trace: max_queues must be 1..%d (got %zu)",
                          FERRY_TRACE_QUEUES_MAX, o->max_queues);
    const char *prefix = o->prefix ? o->prefix : FERRY_DEFAULT_PREFIX;
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o->schema, qs, err);
    if (rc) return rc;
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE, "trace: needs an idle connection");
    ferry_trace *t = calloc(1, sizeof *t);
    if (!t) return oom_err(err);
    for (size_t i = 0; i < FERRY_UUID_STRLEN; i++)
        t->event_id[i] = (char)tolower((unsigned char)event_id[i]);
    /* one snapshot of the PostgreSQL sections, so they agree with each other */
    int snapshot_ms = ferry__trace_pg_ms > 0 ? ferry__trace_pg_ms : PG_SNAPSHOT_MS;
    int rollback_ms = ferry__trace_pg_ms > 0 ? ferry__trace_pg_ms : PG_ROLLBACK_MS;
    tpg db = {.c = {.conn = conn}, .deadline = ferry__mono_ms() + snapshot_ms};
    rc =
        pg_run(&db, "trace", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, err);
    if (rc == 0) rc = read_outbox(&db, qs, t, err);
    if (rc == 0) rc = read_inbox(&db, qs, t, err);
    if (rc == 0) rc = read_dead_letters(&db, qs, prefix, t, err);
    if (rc == 0) rc = read_redrives(&db, qs, t, err);
    /* a broken connection has a statement in flight: nothing more can be sent on it */
    if (!db.c.broken && PQtransactionStatus(conn) != PQTRANS_IDLE) {
        ferry_error rerr = {0};
        int rrc = pg_exec(&db, ferry__mono_ms() + rollback_ms, "trace: rollback", "ROLLBACK", 0,
                          NULL, NULL, &rerr);
        if (rc == 0 && rrc) { /* the reads are fine, but the connection is left in a transaction */
            rc = rrc;
            if (err) *err = rerr;
        }
    }
    if (rc == 0) rc = fill_routes(o, t, err);
    char **names = NULL;
    size_t nnames = 0;
    cands c = {0};
    if (rc == 0) rc = gather(o, prefix, t, &names, &nnames, &c, err);
    if (rc == 0) rc = read_jobs(o, prefix, &c, t, err);
    free(c.v);
    ferry_queue_job_ids_free(names, nnames);
    if (rc == 0 && !t->outbox && !t->njobs && !t->ninbox && !t->ndead_letters)
        rc = ferry__err(err, FERRY_ENOTFOUND,
                        "trace: no outbox event, job, inbox marker or dead letter has the id %s",
                        t->event_id);
    if (rc) {
        ferry_trace_free(t);
        return rc;
    }
    *out = t;
    return 0;
}
