/* api_overview.c - GET /api/overview: one snapshot of the whole pipeline for the dashboard
 * (outbox backlog, every queue's counts, ages, pause and rate limit, workers and finishes
 * per 10 s bucket, the dead letters not redriven, the inbox markers), and the short
 * history the server keeps of three of its numbers (one point per 5 s at most, the last
 * 60), so a page opened now draws its sparklines at once.
 *
 * Each source stands alone: PostgreSQL down, or no database, gives that part null and its
 * reason ("outboxError", "deadLettersError", "inboxError"); only Redis unreachable fails the
 * whole answer (503). Work is bounded: at most OVERVIEW_QUEUES_MAX queues in detail
 * ("queuesComplete" false past them), 6 Redis round trips each (counts, ages, paused, rate
 * limit, workers, throughput), and three statements with a database. docs/serve.md
 * "Dashboard" states the cost of a refresh. The stream (stream.c) sends the same JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "admin/framework.h"
#include "ferry/deadletter.h"
#include "ferry/inbox.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define OVERVIEW_QUEUES_MAX 200
#define THROUGHPUT_BUCKET_MS 10000
#define THROUGHPUT_BUCKETS 30

/* A library error's text as JSON (printable). */
static json_t *err_text(const char *what, const ferry_error *e) {
    char shown[FERRY_ERROR_MESSAGE_MAX + 64], text[FERRY_ERROR_MESSAGE_MAX + 128];
    snprintf(text, sizeof text, "%s%s", what,
             e->message[0] ? ferryx_printable(e->message, shown, sizeof shown)
                           : ferry_strerror(e->code));
    return ferry__api_str(text);
}

static int redis_down(int code) {
    return code == FERRY_EIO || code == FERRY_ETIMEDOUT || code == FERRY_ECLOSED ||
           code == FERRY_ETLS || code == FERRY_EAUTH;
}

static json_t *int_array(const long long *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

typedef struct totals {
    long long ready, active, failed, delayed, workers;
    double oldest_ready_s;
} totals;

/* One queue's detail; 0, or the error of a call (Redis). */
static int queue_detail(ferry__admin_req *r, ferry_queue *q, const char *name, totals *t,
                        json_t **out, ferry_error *err) {
    ferry_job_counts c;
    ferry_job_ages a;
    int paused = 0;
    long long ttl = 0, done[THROUGHPUT_BUCKETS], failed[THROUGHPUT_BUCKETS];
    (void)r;
    int rc = ferry_queue_counts(q, &c, err);
    if (!rc) rc = ferry_queue_ages(q, &a, err);
    if (!rc) rc = ferry_queue_is_paused(q, &paused, err);
    if (rc) return rc;
    /* the rest is shown as null with its reason, unless Redis itself is gone */
    ferry_error te = {0}, le = {0};
    int trc = ferry_queue_throughput(q, THROUGHPUT_BUCKET_MS, THROUGHPUT_BUCKETS, done, failed,
                                     NULL, &te);
    int lrc = ferry_queue_rate_limit_ttl(q, &ttl, &le);
    if ((trc && redis_down(trc)) || (lrc && redis_down(lrc))) {
        *err = trc ? te : le;
        return trc ? trc : lrc;
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", ferry__api_str(name));
    json_t *counts = json_object();
    json_object_set_new(counts, "wait", json_integer(c.waiting));
    json_object_set_new(counts, "active", json_integer(c.active));
    json_object_set_new(counts, "delayed", json_integer(c.delayed));
    json_object_set_new(counts, "prioritized", json_integer(c.prioritized));
    json_object_set_new(counts, "failed", json_integer(c.failed));
    json_object_set_new(counts, "completed", json_integer(c.completed));
    json_object_set_new(counts, "paused", json_integer(c.paused));
    json_object_set_new(counts, "waiting-children", json_integer(c.waiting_children));
    json_object_set_new(o, "counts", counts);
    json_object_set_new(o, "oldestReadyAgeSeconds",
                        json_real(a.ready_found ? a.oldest_ready_s : 0));
    json_object_set_new(o, "oldestActiveAgeSeconds",
                        json_real(a.active_found ? a.oldest_active_s : 0));
    json_object_set_new(o, "paused", json_boolean(paused));
    if (lrc) {
        json_object_set_new(o, "rateLimitedMs", json_null());
        json_object_set_new(o, "rateLimitError", err_text("", &le));
    } else {
        json_object_set_new(o, "rateLimitedMs", json_integer(ttl > 0 ? ttl : 0));
    }
    ferry_queue_worker *w = NULL;
    size_t nw = 0;
    ferry_error we = {0};
    if (ferry_queue_workers(q, &w, &nw, &we) == 0) {
        json_object_set_new(o, "workers", json_integer((json_int_t)nw));
        ferry_queue_workers_free(w, nw);
        t->workers += (long long)nw;
    } else {
        json_object_set_new(o, "workers", json_null()); /* CLIENT LIST refused (hosted Redis) */
        json_object_set_new(o, "workersError", err_text("", &we));
    }
    if (trc) {
        json_object_set_new(o, "throughput", json_null());
        json_object_set_new(o, "throughputError", err_text("", &te));
    } else {
        json_t *tp = json_object();
        json_object_set_new(tp, "bucketSeconds", json_integer(THROUGHPUT_BUCKET_MS / 1000));
        json_object_set_new(tp, "completed", int_array(done, THROUGHPUT_BUCKETS));
        json_object_set_new(tp, "failed", int_array(failed, THROUGHPUT_BUCKETS));
        json_object_set_new(o, "throughput", tp);
    }
    t->ready += c.waiting + c.prioritized + c.paused;
    t->active += c.active;
    t->failed += c.failed;
    t->delayed += c.delayed;
    if (a.ready_found && a.oldest_ready_s > t->oldest_ready_s) t->oldest_ready_s = a.oldest_ready_s;
    *out = o;
    return 0;
}

/* "queues", "queuesComplete" and "totals" into o. Returns 0, or the Redis error. */
static int add_queues(ferry__admin_req *r, json_t *o, totals *t, ferry_error *err) {
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    int rc = ferry_queue_names(r->cfg->redis, r->cfg->prefix, OVERVIEW_QUEUES_MAX + 1, &names, &n,
                               &complete, err);
    if (rc) return rc;
    if (n > OVERVIEW_QUEUES_MAX) complete = 0;
    json_t *list = json_array();
    for (size_t i = 0; i < n && i < OVERVIEW_QUEUES_MAX; i++) {
        ferry_queue *q = NULL;
        rc = ferry__admin_queue(r, names[i], &q, err);
        if (rc == FERRY_EINVAL) { /* a meta key whose name no queue API takes */
            rc = 0;
            continue;
        }
        json_t *one = NULL;
        if (!rc) rc = queue_detail(r, q, names[i], t, &one, err);
        ferry__admin_queue_release(r, q);
        if (rc) break;
        json_array_append_new(list, one);
    }
    ferry_queue_job_ids_free(names, n);
    if (rc) {
        json_decref(list);
        return rc;
    }
    json_object_set_new(o, "queues", list);
    json_object_set_new(o, "queuesComplete", json_boolean(complete));
    json_t *tj = json_object();
    json_object_set_new(tj, "ready", json_integer(t->ready));
    json_object_set_new(tj, "active", json_integer(t->active));
    json_object_set_new(tj, "failed", json_integer(t->failed));
    json_object_set_new(tj, "delayed", json_integer(t->delayed));
    json_object_set_new(tj, "workers", json_integer(t->workers));
    json_object_set_new(tj, "oldestReadyAgeSeconds", json_real(t->oldest_ready_s));
    json_object_set_new(o, "totals", tj);
    return 0;
}

/* The PostgreSQL parts: outbox, dead letters, inbox (each null + its error on failure). */
static void add_database(ferry__admin_req *r, json_t *o, long long *outbox_n, long long *dl_n) {
    *outbox_n = *dl_n = -1;
    if (!r->cfg->has_database) {
        const char *why = "no database configured (ferry serve --database)";
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", json_string(why));
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", json_string(why));
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", json_string(why));
        return;
    }
    ferry_error e = {0};
    PGconn *conn = NULL;
    if (ferry__admin_pg(r, &conn, &e)) {
        json_t *why = err_text("database: ", &e);
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", json_incref(why));
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", json_incref(why));
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", why);
        return;
    }
    int broken = 0;

    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = r->cfg->schema;
    ferry_outbox_status *st = NULL;
    if (ferry_outbox_status_get(conn, &oo, r->cfg->routes, &st, &e) == 0) {
        json_t *ob = json_object();
        json_object_set_new(ob, "unpublished", json_integer(st->unpublished));
        json_object_set_new(ob, "oldestAgeSeconds",
                            json_real(st->unpublished ? st->oldest_age_s : 0));
        json_object_set_new(ob, "withErrors", json_integer(st->with_errors));
        json_object_set_new(ob, "quarantined", json_integer(st->quarantined));
        json_object_set_new(ob, "unroutedRows", json_integer(st->unknown_rows));
        json_object_set_new(o, "outbox", ob);
        json_object_set_new(o, "outboxError", json_null());
        *outbox_n = st->unpublished;
        ferry_outbox_status_free(st);
    } else {
        json_object_set_new(o, "outbox", json_null());
        json_object_set_new(o, "outboxError", err_text("outbox: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;

    ferry_dlq_options dlo;
    ferry_dlq_options_init(&dlo);
    dlo.schema = r->cfg->schema;
    ferry_dlq_filter f = {0};
    f.prefix = r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX;
    f.redriven_fewer_than = 1; /* never redriven */
    f.limit = 1;               /* the oldest failure, and the total */
    ferry_dlq_list *l = NULL;
    if (!broken && ferry_dlq_list_get(conn, &dlo, &f, &l, &e) == 0) {
        double age = 0;
        if (l->n) {
            long long now = (long long)ferry__now_ms(), at = l->entries[0].failed_at_ms;
            age = at < now ? (double)(now - at) / 1000.0 : 0;
        }
        json_object_set_new(
            o, "deadLetters",
            json_pack("{s:I,s:f}", "notRedriven", (json_int_t)l->total, "oldestAgeSeconds", age));
        json_object_set_new(o, "deadLettersError", json_null());
        *dl_n = l->total;
        ferry_dlq_list_free(l);
    } else {
        json_object_set_new(o, "deadLetters", json_null());
        json_object_set_new(o, "deadLettersError", err_text("dead letters: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;

    ferry_inbox_options io;
    ferry_inbox_options_init(&io);
    io.schema = r->cfg->schema;
    ferry_inbox_status *is = NULL;
    if (!broken && ferry_inbox_status_get(conn, &io, &is, &e) == 0) {
        json_t *cons = json_array();
        for (size_t i = 0; i < is->n && i < FERRY__ADMIN_LIST_MAX; i++)
            json_array_append_new(cons, json_pack("{s:o,s:I}", "consumer",
                                                  ferry__api_str(is->consumers[i].consumer),
                                                  "markers", (json_int_t)is->consumers[i].rows));
        json_object_set_new(
            o, "inbox",
            json_pack("{s:I,s:o}", "markers", (json_int_t)is->total_rows, "consumers", cons));
        json_object_set_new(o, "inboxError", json_null());
        ferry_inbox_status_free(is);
    } else {
        json_object_set_new(o, "inbox", json_null());
        json_object_set_new(o, "inboxError", err_text("inbox: ", &e));
    }
    if (PQstatus(conn) != CONNECTION_OK) broken = 1;
    ferry__admin_pg_release(r, conn, broken);
}

/* Add a point when the newest is old enough, and the ring as JSON into o. */
static void add_history(ferry_admin_server *s, json_t *o, const admin_history_point *now) {
    json_t *ob = json_array(), *dl = json_array(), *rd = json_array();
    int64_t t = ferry__mono_ms();
    pthread_mutex_lock(&s->history_mu);
    if (!s->history_n || t - s->history_last_ms >= ADMIN_HISTORY_INTERVAL_MS) {
        s->history[s->history_next] = *now;
        s->history_next = (s->history_next + 1) % ADMIN_HISTORY_MAX;
        if (s->history_n < ADMIN_HISTORY_MAX) s->history_n++;
        s->history_last_ms = t;
    }
    size_t first = (s->history_next + ADMIN_HISTORY_MAX - s->history_n) % ADMIN_HISTORY_MAX;
    for (size_t i = 0; i < s->history_n; i++) {
        const admin_history_point *p = &s->history[(first + i) % ADMIN_HISTORY_MAX];
        json_array_append_new(ob, p->outbox_unpublished < 0 ? json_null()
                                                            : json_integer(p->outbox_unpublished));
        json_array_append_new(dl,
                              p->dead_letters < 0 ? json_null() : json_integer(p->dead_letters));
        json_array_append_new(rd, p->ready < 0 ? json_null() : json_integer(p->ready));
    }
    pthread_mutex_unlock(&s->history_mu);
    json_object_set_new(o, "history",
                        json_pack("{s:i,s:o,s:o,s:o}", "intervalSeconds",
                                  ADMIN_HISTORY_INTERVAL_MS / 1000, "outboxUnpublished", ob,
                                  "deadLetters", dl, "ready", rd));
}

json_t *ferry__admin_overview(ferry__admin_req *r, int *status, ferry_error *err) {
    admin_request *ar = r->server;
    json_t *o = json_object();
    if (!o) {
        *status = 500;
        ferry__err(err, FERRY_ENOMEM, "overview: out of memory");
        return NULL;
    }
    json_object_set_new(o, "at", json_integer((json_int_t)ferry__now_ms()));
    totals t = {0};
    int rc = add_queues(r, o, &t, err);
    if (rc) {
        json_decref(o);
        *status = redis_down(rc) ? 503 : 500;
        return NULL;
    }
    admin_history_point p = {-1, -1, t.ready};
    add_database(r, o, &p.outbox_unpublished, &p.dead_letters);
    add_history(ar->srv, o, &p);
    return o;
}

/* GET /api/overview */
static int overview(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_error err = {0};
    int status = 500;
    json_t *o = ferry__admin_overview(r, &status, &err);
    if (!o) {
        char shown[FERRY_ERROR_MESSAGE_MAX + 64];
        return ferry__admin_fail(out, status, "redis: %s",
                                 ferryx_printable(err.message, shown, sizeof shown));
    }
    out->json = o;
    return 0;
}

const ferry__admin_route ferry__admin_routes_overview[] = {
    {"GET", "/api/overview", FERRY__ADMIN_SCOPE_READ, overview},
    {NULL, NULL, 0, NULL},
};
