/* trace_fixture.h - the state every trace test looks at, built with the calls the system
 * itself makes (prefix tf_; static inline, each test file is its own executable):
 *
 *   1. an event appended with ferry_outbox_append (topic order.placed, a trace id);
 *   2. a real `ferry relay` publishes it through a fan-out route into two queues, "pay"
 *      (job capture) and "notify" (job confirm), jobId = the event id;
 *   3. a worker on "notify" applies it through the inbox (ferry_inbox_run_job, consumer
 *      "notify-svc"): an inbox marker, the job completed;
 *   4. a worker on "pay" fails it for good ("card declined" + a second line); its
 *      dead-letter recorder records the dead letter;
 *   5. that dead letter is redriven for real (ferry_dlq_redrive with its id), after a dry
 *      run; the new job dlq-<row>-1 fails again and is recorded as a second dead letter.
 *
 * Needs support/ob.h (PostgreSQL, relay) included first. */
#ifndef FERRY_TEST_TRACE_FIXTURE_H
#define FERRY_TEST_TRACE_FIXTURE_H

#include <pthread.h>

#include "ferry/deadletter.h"
#include "ferry/inbox.h"
#include "ferry/worker.h"

#define TF_ROUTES                                                                                  \
    "order.placed pay:capture notify:confirm\n"                                                    \
    "other.topic  pay:other\n"
#define TF_TRACE_ID "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
#define TF_CONSUMER "notify-svc"
#define TF_REASON "card declined"

typedef struct tf_state {
    char event_id[40];
    char dl1[40], dl2[40]; /* the first dead letter, and that of its redriven job */
    char redrive_job[80];  /* dlq-<dl1>-1 */
    const char *routes_path;
} tf_state;

typedef struct tf_inbox_ctx {
    PGconn *conn;
    const char *schema;
} tf_inbox_ctx;

static ferry_outcome tf_effect(PGconn *conn, void *ud) {
    (void)conn;
    (void)ud;
    return FERRY_COMPLETED;
}

static ferry_outcome tf_notify(ferry_job *job, void *ud) {
    tf_inbox_ctx *c = ud;
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = c->schema;
    return ferry_inbox_run_job(c->conn, &o, TF_CONSUMER, job, tf_effect, NULL);
}

static ferry_outcome tf_pay(ferry_job *job, void *ud) {
    (void)ud;
    ferry_job_set_failure(job, TF_REASON "\nat the bank's gateway", NULL);
    return FERRY_FAILED_PERMANENT;
}

static ferry_worker *tf_worker(const char *queue, const char *prefix, ferry_handler_fn fn, void *ud,
                               ferry_dlq_recorder *rec, ferry_redis_options *ro) {
    ferry_redis_options_init(ro);
    ro->url = th_env_require("REDIS_URL");
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    o.redis = ro;
    o.prefix = prefix;
    o.name = "trace-test";
    if (rec) {
        o.final_failure = ferry_dlq_recorder_final_failure;
        o.final_failure_userdata = rec;
    }
    ferry_worker *w = NULL;
    ferry_error e = {0};
    if (ferry_worker_create(queue, &o, fn, ud, &w, &e)) fail_msg("worker %s: %s", queue, e.message);
    if (ferry_worker_start(w, &e)) fail_msg("worker %s start: %s", queue, e.message);
    return w;
}

static void tf_wait_sql(PGconn *db, long long want, const char *fmt, ...) FERRY_PRINTF(3, 4);
static void tf_wait_sql(PGconn *db, long long want, const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    long long last = -1;
    if (!ob_wait_count(db, sql, want, 1, 20000, &last))
        fail_msg("waited for %lld from %s, last %lld", want, sql, last);
}

/* Build the state under schema / prefix (see the top). */
static inline void tf_build(PGconn *db, const char *schema, const char *prefix, tf_state *st) {
    memset(st, 0, sizeof *st);
    st->routes_path = ob_file("trace-routes", TF_ROUTES);
    /* 1 */
    ob_append(db, schema, "order.placed", "{\"order\": 7, \"card\": \"4111-secret\"}", TF_TRACE_ID,
              1, st->event_id);
    /* 2 */
    ob_relay r;
    ob_relay_start(&r, schema, prefix, st->routes_path, NULL, NULL);
    tf_wait_sql(db, 1, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL",
                schema);
    ob_relay_stop(&r);
    /* 3, 4 */
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = th_env_require("DATABASE_URL");
    ro.schema = schema;
    ro.prefix = prefix;
    ferry_dlq_recorder *rec = NULL;
    ferry_error e = {0};
    if (ferry_dlq_recorder_start(&ro, &rec, &e)) fail_msg("recorder: %s", e.message);
    tf_inbox_ctx ictx = {ob_pg(), schema};
    ferry_redis_options r1, r2;
    ferry_worker *wn = tf_worker("notify", prefix, tf_notify, &ictx, NULL, &r1);
    ferry_worker *wp = tf_worker("pay", prefix, tf_pay, NULL, rec, &r2);
    tf_wait_sql(db, 1, "SELECT count(*) FROM %s.processed_messages WHERE message_id = '%s'", schema,
                st->event_id);
    tf_wait_sql(db, 1, "SELECT count(*) FROM %s.dead_letters WHERE job_id = '%s'", schema,
                st->event_id);
    PGresult *res = ob_sql(db, "SELECT id::text FROM %s.dead_letters WHERE job_id = '%s'", schema,
                           st->event_id);
    snprintf(st->dl1, sizeof st->dl1, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    /* 5: a dry run, then the execution of exactly that row */
    ferry_dlq_options dopts = {schema};
    const char *ids[] = {st->dl1};
    ferry_dlq_filter f = {.ids = ids, .nids = 1};
    ferry_redis_options rro;
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "tracer";
    a.redis = &rro;
    ferry_dlq_action_stats ast;
    if (ferry_dlq_redrive(db, &dopts, &f, &a, &ast, &e)) fail_msg("dry run: %s", e.message);
    assert_int_equal(ast.would, 1);
    a.execute = 1;
    if (ferry_dlq_redrive(db, &dopts, &f, &a, &ast, &e)) fail_msg("redrive: %s", e.message);
    assert_int_equal(ast.done, 1);
    snprintf(st->redrive_job, sizeof st->redrive_job, "dlq-%s-1", st->dl1);
    tf_wait_sql(db, 1, "SELECT count(*) FROM %s.dead_letters WHERE job_id = '%s'", schema,
                st->redrive_job);
    res = ob_sql(db, "SELECT id::text FROM %s.dead_letters WHERE job_id = '%s'", schema,
                 st->redrive_job);
    snprintf(st->dl2, sizeof st->dl2, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    assert_int_equal(ferry_worker_close(wn, 10000), 0);
    ferry_worker_free(wn);
    assert_int_equal(ferry_worker_close(wp, 10000), 0);
    ferry_worker_free(wp);
    ferry_dlq_recorder_close(rec, 5000);
    PQfinish(ictx.conn);
}

#endif
