/* redrive.c - acting on dead letters: redrive (re-enqueue) and purge, each a dry run by
 * default and audited in dead_letter_redrives. The rows are chosen once, at the start (a
 * snapshot of ids, so rows redriven during the run are not taken twice), then handled in
 * order. A redrive's job id is "dlq-<row id>-<count + 1>": the same for a row until its
 * redrive is recorded, so a run that stopped between adding the job and committing the row
 * adds nothing the second time (BullMQ keeps the first job of a custom id). */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"

void (*ferry__dlq_after_add_hook)(const char *new_job_id);

#define BATCH 1000

void ferry_dlq_action_options_init(ferry_dlq_action_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

static int actor_check(const char *actor, ferry_error *err) {
    size_t n = actor ? strlen(actor) : 0;
    if (n == 0 || n > FERRY_DLQ_ACTOR_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters: actor must be 1..%d characters",
                          FERRY_DLQ_ACTOR_MAX);
    for (size_t i = 0; i < n; i++)
        if (actor[i] < 0x20 || actor[i] > 0x7e)
            return ferry__err(err, FERRY_EINVAL,
                              "dead letters: actor must be printable ASCII (no control "
                              "characters)");
    return 0;
}

/* What every action shares: the schema, the chosen ids, the audit's filter text. */
typedef struct action {
    PGconn *conn;
    char qs[FERRY__QSCHEMA_MAX];
    const ferry_dlq_action_options *a;
    ferry_dlq_action_stats *st;
    char **ids;
    size_t nids;
    char *filter_text;
    long fewer_than; /* the filter's redriven_fewer_than, re-checked under the row lock */
    ferry_metrics_counter *count[4]; /* redrive: ferry_redrives_total by status, or NULL */
} action;

static void action_free(action *x) {
    for (size_t i = 0; i < x->nids; i++)
        free(x->ids[i]);
    free(x->ids);
    free(x->filter_text);
}

static int rollback(PGconn *conn, int rc) {
    PQclear(PQexec(conn, "ROLLBACK"));
    return rc;
}

/* Choose the rows: their ids, oldest failure first. */
static int action_begin(action *x, PGconn *conn, const ferry_dlq_options *o,
                        const ferry_dlq_filter *f, const ferry_dlq_action_options *a,
                        int not_redriven, ferry_dlq_action_stats *st, ferry_error *err) {
    memset(x, 0, sizeof *x);
    x->conn = conn;
    x->a = a;
    x->st = st;
    memset(st, 0, sizeof *st);
    if (!conn || !a) return ferry__err(err, FERRY_EINVAL, "dead letters: NULL argument");
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, x->qs, err);
    if (rc) return rc;
    rc = actor_check(a->actor, err);
    if (rc) return rc;
    if (a->filter_text && strlen(a->filter_text) > 4 * FERRY_DLQ_FILTER_TEXT_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters: filter text over %d bytes",
                          4 * FERRY_DLQ_FILTER_TEXT_MAX);
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE,
                          "dead letters: needs an idle connection (the rows are handled in "
                          "transactions of their own)");
    ferry__dlq_where w;
    rc = ferry__dlq_where_build(f, not_redriven, &w, err);
    if (rc) {
        ferry__dlq_where_free(&w);
        return rc;
    }
    x->fewer_than = w.fewer_than;
    x->filter_text = a->filter_text ? strdup(a->filter_text) : ferry__dlq_filter_text(f, a->again);
    if (!x->filter_text) {
        ferry__dlq_where_free(&w);
        return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    }
    char sql[sizeof w.sql + FERRY__QSCHEMA_MAX + 200];
    snprintf(sql, sizeof sql,
             "SELECT id::text FROM %s.dead_letters WHERE %s ORDER BY failed_at, id LIMIT %lld",
             x->qs, w.sql, w.limit ? w.limit : (long long)FERRY_DLQ_LIMIT_MAX);
    PGresult *r = NULL;
    rc = ferry__pg_run(conn, "dead letters choose", sql, w.n, w.v, &r, err);
    ferry__dlq_where_free(&w);
    if (rc) return rc;
    size_t n = (size_t)PQntuples(r);
    x->ids = n ? calloc(n, sizeof *x->ids) : NULL;
    if (n && !x->ids) rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        x->ids[i] = strdup(PQgetvalue(r, (int)i, 0));
        if (!x->ids[i])
            rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
        else
            x->nids++;
    }
    PQclear(r);
    st->matched = (long long)x->nids;
    return rc;
}

static void emit(const action *x, const ferry_dlq_entry *e, const char *new_id, int status,
                 const char *reason) {
    if (status >= 0 && status < 4) ferry_metrics_counter_add(x->count[status], 1);
    switch (status) {
    case FERRY_DLQ_WOULD:
        x->st->would++;
        break;
    case FERRY_DLQ_DONE:
        x->st->done++;
        break;
    case FERRY_DLQ_SKIPPED:
        x->st->skipped++;
        break;
    default:
        x->st->refused++;
        break;
    }
    if (x->a->item) {
        ferry_dlq_item it = {e, new_id, status, reason};
        x->a->item(&it, x->a->userdata);
    }
}

static int chosen(const action *x, const char *id) {
    for (size_t i = 0; i < x->nids; i++)
        if (!strcasecmp(x->ids[i], id)) return 1;
    return 0;
}

/* Why a listed id has no row. Only the audit can tell a row that existed: every dry run
 * and purge of it left a row in dead_letter_redrives (kept after the row is deleted). An
 * id the audit never saw may never have existed, or been deleted without ferry's purge
 * (by hand, by SQL): the reason says both. `purged` / `audited` come from one query. */
static const char *why_missing(int purged, int audited) {
    if (purged) return "deleted since it was chosen (purged)";
    if (audited) return "deleted since it was chosen";
    return "not found (never existed or deleted since)";
}

/* The ids of the filter's list that were not chosen (no row with the id, or a row no
 * longer matching the rest of the filter), each reported SKIPPED once, before the run. */
static int skip_unchosen(action *x, const ferry_dlq_filter *f, ferry_error *err) {
    if (!f || !f->ids || !f->nids) return 0;
    const char **missing = calloc(f->nids, sizeof *missing);
    if (!missing) return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    size_t nm = 0;
    for (size_t i = 0; i < f->nids; i++) {
        int seen = chosen(x, f->ids[i]);
        for (size_t j = 0; !seen && j < nm; j++)
            seen = !strcasecmp(missing[j], f->ids[i]);
        if (!seen) missing[nm++] = f->ids[i];
    }
    int rc = 0;
    PGresult *r = NULL;
    if (nm) {
        char *arr = ferry__pg_text_array(missing, nm);
        if (!arr) rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
        /* per id: has a row now, was purged (an executed purge audited it), was audited */
        char sql[3 * FERRY__QSCHEMA_MAX + 400];
        snprintf(sql, sizeof sql,
                 "SELECT u.id::text, EXISTS (SELECT 1 FROM %s.dead_letters d WHERE d.id = u.id), "
                 "EXISTS (SELECT 1 FROM %s.dead_letter_redrives a WHERE a.dead_letter_id = u.id "
                 "AND a.action = 'purge' AND NOT a.dry_run), EXISTS (SELECT 1 FROM "
                 "%s.dead_letter_redrives a WHERE a.dead_letter_id = u.id) FROM "
                 "unnest($1::uuid[]) AS u(id)",
                 x->qs, x->qs, x->qs);
        const char *p[] = {arr};
        if (rc == 0) rc = ferry__pg_run(x->conn, "dead letters", sql, 1, p, &r, err);
        free(arr);
    }
    for (size_t i = 0; rc == 0 && i < nm; i++) {
        int exists = 0, purged = 0, audited = 0;
        for (int k = 0; k < PQntuples(r); k++)
            if (!strcasecmp(PQgetvalue(r, k, 0), missing[i])) {
                exists = PQgetvalue(r, k, 1)[0] == 't';
                purged = PQgetvalue(r, k, 2)[0] == 't';
                audited = PQgetvalue(r, k, 3)[0] == 't';
                break;
            }
        ferry_dlq_entry gone = {0};
        for (size_t c = 0; c < FERRY_DLQ_ID_STRLEN && missing[i][c]; c++)
            gone.id[c] = (char)tolower((unsigned char)missing[i][c]);
        emit(x, &gone, NULL, FERRY_DLQ_SKIPPED,
             exists ? "no longer matches the filter (redriven or changed since it was chosen)"
                    : why_missing(purged, audited));
    }
    PQclear(r);
    free(missing);
    return rc;
}

static void progress(const action *x, size_t done) {
    if (x->a->progress && (done % 100 == 0 || done == x->nids))
        x->a->progress((long long)done, (long long)x->nids, x->a->userdata);
}

/* Write one audit row. */
static int audit(const action *x, const char *what, const ferry_dlq_entry *e, const char *new_id,
                 int dry, ferry_error *err) {
    char sql[FERRY__QSCHEMA_MAX + 300];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.dead_letter_redrives (dead_letter_id, prefix, queue, job_id, "
             "new_job_id, redriven_by, dry_run, action, filter) VALUES ($1::uuid, $2, $3, $4, "
             "$5, $6, $7::boolean, $8, $9)",
             x->qs);
    const char *p[] = {e->id,       e->prefix,       e->queue, e->job_id,     new_id,
                       x->a->actor, dry ? "t" : "f", what,     x->filter_text};
    return ferry__pg_run(x->conn, "dead letters audit", sql, 9, p, NULL, err);
}

/* Read rows by id (those of ids[0..n) still there, locked when `lock`), in the order
 * chosen. */
static int read_rows(const action *x, char **ids, size_t n, int lock, PGresult **out,
                     ferry_error *err) {
    char *arr = ferry__pg_text_array((const char *const *)ids, n);
    if (!arr) return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    char sql[FERRY__QSCHEMA_MAX + 600];
    snprintf(sql, sizeof sql,
             "SELECT " FERRY__DLQ_COLUMNS " FROM %s.dead_letters WHERE id = ANY($1::uuid[]) "
             "ORDER BY failed_at, id%s",
             x->qs, lock ? " FOR UPDATE SKIP LOCKED" : "");
    const char *p[] = {arr};
    int rc = ferry__pg_run(x->conn, "dead letters read", sql, 1, p, out, err);
    free(arr);
    return rc;
}

/* ---- redrive ------------------------------------------------------------------------ */

typedef struct qcache {
    ferry_queue **q;
    char **key; /* "<prefix>\n<queue>" */
    size_t n;
} qcache;

static void qcache_free(qcache *c) {
    for (size_t i = 0; i < c->n; i++) {
        ferry_queue_close(c->q[i]);
        free(c->key[i]);
    }
    free(c->q);
    free(c->key);
}

static int qcache_get(qcache *c, const ferry_redis_options *ro, const ferry_dlq_entry *e,
                      ferry_queue **out, ferry_error *err) {
    size_t kn = strlen(e->prefix) + strlen(e->queue) + 2;
    char *key = malloc(kn);
    if (!key) return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    snprintf(key, kn, "%s\n%s", e->prefix, e->queue);
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->key[i], key)) {
            free(key);
            *out = c->q[i];
            return 0;
        }
    ferry_queue **nq = realloc(c->q, (c->n + 1) * sizeof *nq);
    if (nq) c->q = nq;
    char **nk = nq ? realloc(c->key, (c->n + 1) * sizeof *nk) : NULL;
    if (nk) c->key = nk;
    if (!nq || !nk) {
        free(key);
        return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    }
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = ro;
    qo.prefix = e->prefix;
    qo.allow_unknown_opts = 1; /* options a later BullMQ stored come back as they were */
    int rc = ferry_queue_open(e->queue, &qo, out, err);
    if (rc) {
        free(key);
        return rc;
    }
    c->q[c->n] = *out;
    c->key[c->n] = key;
    c->n++;
    return 0;
}

/* Why a chosen row was not there to lock. */
static const char *why_skipped(const action *x, const char *id) {
    char sql[FERRY__QSCHEMA_MAX + 100];
    snprintf(sql, sizeof sql, "SELECT redrive_count FROM %s.dead_letters WHERE id = $1::uuid",
             x->qs);
    const char *p[] = {id};
    PGresult *r = NULL;
    const char *why = "locked by a concurrent redrive or purge";
    if (ferry__pg_run(x->conn, "dead letters", sql, 1, p, &r, NULL) == 0) {
        if (PQntuples(r) == 0)
            why = "deleted since the run began";
        else if ((!x->a->again && atol(PQgetvalue(r, 0, 0)) > 0) ||
                 (x->fewer_than && atol(PQgetvalue(r, 0, 0)) >= x->fewer_than))
            why = "redriven since the run began";
        PQclear(r);
    }
    return why;
}

/* Why a row cannot be redriven as it was stored, or NULL. */
static const char *unredrivable(const ferry_dlq_entry *e) {
    if (!e->data_is_json) return "its data is not JSON (kept as text when it was recorded)";
    if (strstr(e->queue, "\xEF\xBF\xBD") || strstr(e->prefix, "\xEF\xBF\xBD"))
        return "its queue name or prefix holds U+FFFD (bytes that were not UTF-8 were replaced "
               "when it was recorded): it would go to a different queue";
    return NULL;
}

/* One row of an executed redrive, in its own transaction. Returns 0 to go on, else the
 * error that stops the run. */
static int redrive_one(action *x, qcache *qc, const char *id, ferry_error *err) {
    int rc = ferry__pg_run(x->conn, "dead letters redrive", "BEGIN", 0, NULL, NULL, err);
    if (rc) return rc;
    char sql[FERRY__QSCHEMA_MAX + 600];
    char cond[64] = "";
    if (!x->a->again)
        snprintf(cond, sizeof cond, " AND redrive_count = 0");
    else if (x->fewer_than)
        snprintf(cond, sizeof cond, " AND redrive_count < %ld", x->fewer_than);
    snprintf(sql, sizeof sql,
             "SELECT " FERRY__DLQ_COLUMNS " FROM %s.dead_letters WHERE id = $1::uuid%s FOR "
             "UPDATE SKIP LOCKED",
             x->qs, cond);
    const char *p1[] = {id};
    PGresult *r = NULL;
    rc = ferry__pg_run(x->conn, "dead letters redrive", sql, 1, p1, &r, err);
    if (rc) return rollback(x->conn, rc);
    if (PQntuples(r) == 0) {
        PQclear(r);
        rollback(x->conn, 0);
        ferry_dlq_entry gone = {0};
        snprintf(gone.id, sizeof gone.id, "%s", id);
        emit(x, &gone, NULL, FERRY_DLQ_SKIPPED, why_skipped(x, id));
        return 0;
    }
    ferry_dlq_entry e;
    rc = ferry__dlq_entry_read(r, 0, &e, err);
    PQclear(r);
    if (rc) return rollback(x->conn, rc);
    char new_id[FERRY_DLQ_ID_STRLEN + 32];
    snprintf(new_id, sizeof new_id, "dlq-%s-%ld", e.id, e.redrive_count + 1);
    const char *reason = NULL;
    char why[FERRY_ERROR_MESSAGE_MAX + 64];
    const char *cannot = unredrivable(&e);
    if (cannot) {
        rollback(x->conn, 0);
        emit(x, &e, new_id, FERRY_DLQ_REFUSED, cannot);
        ferry__dlq_entry_clear(&e);
        return 0;
    }
    ferry_queue *q = NULL;
    rc = qcache_get(qc, x->a->redis, &e, &q, err);
    if (rc == FERRY_EINVAL) {
        snprintf(why, sizeof why, "its queue cannot be opened: %s", err ? err->message : "");
        rollback(x->conn, 0);
        emit(x, &e, new_id, FERRY_DLQ_REFUSED, why);
        ferry__dlq_entry_clear(&e);
        return 0;
    }
    if (rc) {
        ferry__dlq_entry_clear(&e);
        return rollback(x->conn, rc);
    }
    ferry_job_info *existing = NULL;
    rc = ferry_queue_get_job(q, new_id, &existing, err);
    ferry_job_info_free(existing);
    if (rc == 0)
        reason = "the job was in the queue already (an earlier run stopped before recording it)";
    else if (rc != FERRY_ENOTFOUND) {
        ferry__dlq_entry_clear(&e);
        return rollback(x->conn, rc);
    }
    char *opts = ferry__dlq_redrive_opts(e.opts, new_id);
    if (!opts) {
        ferry__dlq_entry_clear(&e);
        return rollback(x->conn, ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory"));
    }
    ferry_job_spec spec = {e.job_name, e.data, opts};
    ferry_error aerr = {0};
    rc = ferry_queue_add(q, &spec, NULL, &aerr);
    free(opts);
    if (rc == FERRY_EINVAL || rc == FERRY_ETOOBIG) {
        snprintf(why, sizeof why, "the queue refused the job: %s", aerr.message);
        rollback(x->conn, 0);
        emit(x, &e, new_id, FERRY_DLQ_REFUSED, why);
        ferry__dlq_entry_clear(&e);
        return 0;
    }
    if (rc) {
        if (err) *err = aerr;
        ferry__dlq_entry_clear(&e);
        return rollback(x->conn, rc);
    }
    if (ferry__dlq_after_add_hook) ferry__dlq_after_add_hook(new_id);
    snprintf(sql, sizeof sql,
             "UPDATE %s.dead_letters SET redrive_count = redrive_count + 1, redriven_at = now(), "
             "redriven_by = $2, redrive_job_id = $3 WHERE id = $1::uuid",
             x->qs);
    const char *p2[] = {e.id, x->a->actor, new_id};
    rc = ferry__pg_run(x->conn, "dead letters redrive", sql, 3, p2, NULL, err);
    if (rc == 0) rc = audit(x, "redrive", &e, new_id, 0, err);
    if (rc == 0) rc = ferry__pg_run(x->conn, "dead letters redrive", "COMMIT", 0, NULL, NULL, err);
    if (rc) {
        ferry__dlq_entry_clear(&e);
        return rollback(x->conn, rc);
    }
    emit(x, &e, new_id, FERRY_DLQ_DONE, reason);
    ferry__dlq_entry_clear(&e);
    return 0;
}

/* A dry run over ids[0..n): one transaction writing the audit rows. */
static int dry_batch(action *x, const char *what, char **ids, size_t n, ferry_error *err) {
    int rc = ferry__pg_run(x->conn, "dead letters dry run", "BEGIN", 0, NULL, NULL, err);
    if (rc) return rc;
    PGresult *r = NULL;
    rc = read_rows(x, ids, n, 0, &r, err);
    if (rc) return rollback(x->conn, rc);
    int rows = PQntuples(r);
    ferry_dlq_entry *es = rows ? calloc((size_t)rows, sizeof *es) : NULL;
    if (rows && !es) rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    int nread = 0;
    for (int i = 0; rc == 0 && i < rows; i++) {
        rc = ferry__dlq_entry_read(r, i, &es[i], err);
        if (rc == 0) nread++;
    }
    PQclear(r);
    int redrive = !strcmp(what, "redrive");
    char new_id[FERRY_DLQ_ID_STRLEN + 32];
    for (int i = 0; rc == 0 && i < nread; i++) {
        if (redrive && unredrivable(&es[i])) continue; /* refused: nothing it would do */
        snprintf(new_id, sizeof new_id, "dlq-%s-%ld", es[i].id, es[i].redrive_count + 1);
        rc = audit(x, what, &es[i], redrive ? new_id : NULL, 1, err);
    }
    if (rc == 0) rc = ferry__pg_run(x->conn, "dead letters dry run", "COMMIT", 0, NULL, NULL, err);
    if (rc) rollback(x->conn, 0);
    for (int i = 0; i < nread; i++) {
        if (rc == 0) {
            snprintf(new_id, sizeof new_id, "dlq-%s-%ld", es[i].id, es[i].redrive_count + 1);
            if (redrive && unredrivable(&es[i]))
                emit(x, &es[i], new_id, FERRY_DLQ_REFUSED, unredrivable(&es[i]));
            else
                emit(x, &es[i], redrive ? new_id : NULL, FERRY_DLQ_WOULD, NULL);
        }
        ferry__dlq_entry_clear(&es[i]);
    }
    free(es);
    /* rows chosen but gone before this batch read them */
    if (rc == 0 && (size_t)nread < n) {
        x->st->skipped += (long long)(n - (size_t)nread);
        ferry_metrics_counter_add(x->count[FERRY_DLQ_SKIPPED], (uint64_t)(n - (size_t)nread));
    }
    return rc;
}

int ferry_dlq_redrive(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_filter *f,
                      const ferry_dlq_action_options *a, ferry_dlq_action_stats *stats,
                      ferry_error *err) {
    ferry_dlq_action_stats st;
    action x;
    int rc = action_begin(&x, conn, o, f, a, a ? !a->again : 1, &st, err);
    if (rc == 0) rc = ferry__dlq_redrive_counters(a->metrics, a->execute, x.count, err);
    if (rc == 0) rc = skip_unchosen(&x, f, err);
    qcache qc = {0};
    for (size_t i = 0; rc == 0 && i < x.nids;) {
        if (!a->execute) {
            size_t n = x.nids - i < BATCH ? x.nids - i : BATCH;
            rc = dry_batch(&x, "redrive", x.ids + i, n, err);
            i += n;
        } else {
            rc = redrive_one(&x, &qc, x.ids[i], err);
            i++;
        }
        if (rc == 0) progress(&x, i);
    }
    qcache_free(&qc);
    action_free(&x);
    if (stats) *stats = st;
    return rc;
}

/* ---- purge -------------------------------------------------------------------------- */

static int purge_batch(action *x, char **ids, size_t n, ferry_error *err) {
    int rc = ferry__pg_run(x->conn, "dead letters purge", "BEGIN", 0, NULL, NULL, err);
    if (rc) return rc;
    PGresult *r = NULL;
    rc = read_rows(x, ids, n, 1, &r, err);
    if (rc) return rollback(x->conn, rc);
    int rows = PQntuples(r);
    ferry_dlq_entry *es = rows ? calloc((size_t)rows, sizeof *es) : NULL;
    char **got = rows ? calloc((size_t)rows, sizeof *got) : NULL;
    if (rows && (!es || !got)) rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    int nread = 0;
    for (int i = 0; rc == 0 && i < rows; i++) {
        rc = ferry__dlq_entry_read(r, i, &es[i], err);
        if (rc == 0) got[nread++] = es[i].id;
    }
    PQclear(r);
    for (int i = 0; rc == 0 && i < nread; i++)
        rc = audit(x, "purge", &es[i], NULL, 0, err);
    char *arr = NULL;
    if (rc == 0 && nread) {
        arr = ferry__pg_text_array((const char *const *)got, (size_t)nread);
        if (!arr) rc = ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    }
    if (rc == 0 && nread) {
        char sql[FERRY__QSCHEMA_MAX + 100];
        snprintf(sql, sizeof sql, "DELETE FROM %s.dead_letters WHERE id = ANY($1::uuid[])", x->qs);
        const char *p[] = {arr};
        rc = ferry__pg_run(x->conn, "dead letters purge", sql, 1, p, NULL, err);
    }
    free(arr);
    if (rc == 0) rc = ferry__pg_run(x->conn, "dead letters purge", "COMMIT", 0, NULL, NULL, err);
    if (rc) rollback(x->conn, 0);
    for (int i = 0; i < nread; i++) {
        if (rc == 0) emit(x, &es[i], NULL, FERRY_DLQ_DONE, NULL);
        ferry__dlq_entry_clear(&es[i]);
    }
    free(es);
    free(got);
    if (rc == 0 && (size_t)nread < n) x->st->skipped += (long long)(n - (size_t)nread);
    return rc;
}

int ferry_dlq_purge(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_filter *f,
                    const ferry_dlq_action_options *a, ferry_dlq_action_stats *stats,
                    ferry_error *err) {
    ferry_dlq_action_stats st;
    action x;
    int rc = action_begin(&x, conn, o, f, a, 0, &st, err);
    if (rc == 0) rc = skip_unchosen(&x, f, err);
    for (size_t i = 0; rc == 0 && i < x.nids;) {
        size_t n = x.nids - i < BATCH ? x.nids - i : BATCH;
        rc = a->execute ? purge_batch(&x, x.ids + i, n, err)
                        : dry_batch(&x, "purge", x.ids + i, n, err);
        i += n;
        if (rc == 0) progress(&x, i);
    }
    action_free(&x);
    if (stats) *stats = st;
    return rc;
}
