/* test_trace.c - ferry_trace_get (ferry/trace.h) against the real servers, on state built
 * by the real pipeline (trace_fixture.h: append, `ferry relay` with a fan-out route, an
 * inbox worker, a failing worker with a dead-letter recorder, an executed redrive whose job
 * fails again):
 *  - with the routes: the outbox row, both route targets, the three jobs (the two the
 *    relay added, in their states, and the redrive's, with redriveOf), the inbox marker,
 *    both dead letters (the second through the redrive chain), the dry and executed
 *    redrive rows;
 *  - without routes: the same jobs, found by listing the prefix's queues;
 *  - an event that was never published: its row and no job; an id nothing knows:
 *    FERRY_ENOTFOUND; an id that is not a UUID: FERRY_EINVAL without echoing it; an
 *    upper-case id finds the same event;
 *  - a queue bound that stops the listing says so (and the dead letters still lead to the
 *    jobs of their queue). */
#include <ctype.h>
#include <stdlib.h>

#include "ferry/trace.h"
#include "support/ob.h"
#include "trace_fixture.h"

static PGconn *db;
static const char *schema;
static char prefix[64];
static tf_state st;
static ferry_routes *routes;
static ferry_redis_options rro;

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    tf_build(db, schema, prefix, &st);
    ferry_error e = {0};
    if (ferry_routes_parse(TF_ROUTES, strlen(TF_ROUTES), "routes", &routes, &e))
        fail_msg("routes: %s", e.message);
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ferry_routes_free(routes);
    ob_close(db, NULL);
    return 0;
}

static ferry_trace *trace(const char *id, int with_routes, int want_rc) {
    ferry_trace_options o;
    ferry_trace_options_init(&o);
    o.schema = schema;
    o.redis = &rro;
    o.prefix = prefix;
    o.routes = with_routes ? routes : NULL;
    ferry_trace *t = NULL;
    ferry_error e = {0};
    int rc = ferry_trace_get(db, &o, id, &t, &e);
    if (rc != want_rc) fail_msg("trace: rc %d, want %d: %s", rc, want_rc, e.message);
    if (rc) assert_null(t);
    return t;
}

static const ferry_trace_job *job_of(const ferry_trace *t, const char *queue, const char *id) {
    for (size_t i = 0; i < t->njobs; i++)
        if (!strcmp(t->jobs[i].queue, queue) && !strcmp(t->jobs[i].job->id, id)) return &t->jobs[i];
    fail_msg("no job %s in %s among %zu", id, queue, t->njobs);
    return NULL;
}

static void expect_jobs(const ferry_trace *t) {
    assert_int_equal(t->njobs, 3);
    const ferry_trace_job *n = job_of(t, "notify", st.event_id);
    assert_string_equal(n->job->name, "confirm");
    assert_string_equal(n->job->state, "completed");
    assert_null(n->redrive_of);
    const ferry_trace_job *p = job_of(t, "pay", st.event_id);
    assert_string_equal(p->job->name, "capture");
    assert_string_equal(p->job->state, "failed");
    assert_non_null(strstr(p->job->failed_reason, TF_REASON));
    assert_null(p->redrive_of);
    const ferry_trace_job *r = job_of(t, "pay", st.redrive_job);
    assert_string_equal(r->job->name, "capture");
    assert_string_equal(r->job->state, "failed");
    assert_non_null(r->redrive_of);
    assert_string_equal(r->redrive_of, st.dl1);
    /* sorted by queue, then id */
    assert_string_equal(t->jobs[0].queue, "notify");
}

static void test_every_hop_with_routes(void **state) {
    (void)state;
    ferry_trace *t = trace(st.event_id, 1, 0);
    assert_string_equal(t->event_id, st.event_id);
    /* outbox */
    assert_non_null(t->outbox);
    assert_string_equal(t->outbox->id, st.event_id);
    assert_string_equal(t->outbox->topic, "order.placed");
    assert_string_equal(t->outbox->aggregate_id, "6f9619ff-8b86-d011-b42d-00cf4fc964ff");
    assert_string_equal(t->outbox->trace_id, TF_TRACE_ID);
    assert_true(t->outbox->created_at_ms > 1700000000000LL);
    assert_true(t->outbox->published_at_ms >= t->outbox->created_at_ms);
    assert_int_equal(t->outbox->quarantined_at_ms, 0);
    assert_null(t->outbox->last_error);
    /* routes: the fan-out, in the file's order */
    assert_int_equal(t->routes_known, 1);
    assert_int_equal(t->nroutes, 2);
    assert_string_equal(t->routes[0].queue, "pay");
    assert_string_equal(t->routes[0].name, "capture");
    assert_string_equal(t->routes[1].queue, "notify");
    assert_string_equal(t->routes[1].name, "confirm");
    expect_jobs(t);
    assert_int_equal(t->queues_complete, 1);
    /* inbox */
    assert_int_equal(t->ninbox, 1);
    assert_string_equal(t->inbox[0].consumer, TF_CONSUMER);
    assert_true(t->inbox[0].processed_at_ms >= t->outbox->published_at_ms - 1000);
    /* dead letters: the first, then the redriven job's */
    assert_int_equal(t->ndead_letters, 2);
    assert_string_equal(t->dead_letters[0].id, st.dl1);
    assert_string_equal(t->dead_letters[0].queue, "pay");
    assert_string_equal(t->dead_letters[0].job_id, st.event_id);
    assert_string_equal(t->dead_letters[0].name, "capture");
    assert_non_null(strstr(t->dead_letters[0].error, TF_REASON));
    assert_int_equal(t->dead_letters[0].redrive_count, 1);
    assert_string_equal(t->dead_letters[0].redrive_job_id, st.redrive_job);
    assert_string_equal(t->dead_letters[0].redriven_by, "tracer");
    assert_true(t->dead_letters[0].redriven_at_ms > 0);
    assert_string_equal(t->dead_letters[1].id, st.dl2);
    assert_string_equal(t->dead_letters[1].job_id, st.redrive_job);
    assert_int_equal(t->dead_letters[1].redrive_count, 0);
    assert_null(t->dead_letters[1].redrive_job_id);
    /* redrives: the dry run, then the execution */
    assert_int_equal(t->nredrives, 2);
    assert_string_equal(t->redrives[0].dead_letter_id, st.dl1);
    assert_int_equal(t->redrives[0].dry_run, 1);
    assert_int_equal(t->redrives[1].dry_run, 0);
    assert_string_equal(t->redrives[1].action, "redrive");
    assert_string_equal(t->redrives[1].new_job_id, st.redrive_job);
    assert_string_equal(t->redrives[1].redriven_by, "tracer");
    assert_string_equal(t->redrives[1].queue, "pay");
    assert_string_equal(t->redrives[1].job_id, st.event_id);
    ferry_trace_free(t);
}

static void test_without_routes_lists_the_queues(void **state) {
    (void)state;
    ferry_trace *t = trace(st.event_id, 0, 0);
    assert_int_equal(t->routes_known, 0);
    assert_int_equal(t->nroutes, 0);
    expect_jobs(t);
    assert_int_equal(t->queues_complete, 1);
    ferry_trace_free(t);
    /* the id in upper case is the same event */
    char upper[40];
    for (size_t i = 0; i <= strlen(st.event_id); i++)
        upper[i] = (char)toupper((unsigned char)st.event_id[i]);
    t = trace(upper, 1, 0);
    assert_string_equal(t->event_id, st.event_id);
    assert_int_equal(t->njobs, 3);
    ferry_trace_free(t);
}

static void test_unpublished_unknown_and_bad(void **state) {
    (void)state;
    /* appended but no relay ran since: its row, its routes, no job anywhere */
    char id[40];
    ob_append(db, schema, "other.topic", "{\"x\": 1}", NULL, 1, id);
    ferry_trace *t = trace(id, 1, 0);
    assert_non_null(t->outbox);
    assert_int_equal(t->outbox->published_at_ms, 0);
    assert_null(t->outbox->trace_id);
    assert_int_equal(t->nroutes, 1);
    assert_string_equal(t->routes[0].queue, "pay");
    assert_string_equal(t->routes[0].name, "other");
    assert_int_equal(t->njobs, 0);
    assert_int_equal(t->ninbox + t->ndead_letters + t->nredrives, 0);
    ferry_trace_free(t);
    /* nothing knows this one */
    ferry_trace_options o;
    ferry_trace_options_init(&o);
    o.schema = schema;
    o.redis = &rro;
    o.prefix = prefix;
    ferry_error e = {0};
    ferry_trace *none = NULL;
    assert_int_equal(ferry_trace_get(db, &o, "0190a5c4-7b1e-7c3d-9f00-1234567890ab", &none, &e),
                     FERRY_ENOTFOUND);
    assert_null(none);
    assert_non_null(strstr(e.message, "0190a5c4-7b1e-7c3d-9f00-1234567890ab"));
    /* not a UUID: refused before any query, without quoting the text */
    assert_int_equal(ferry_trace_get(db, &o, "x'; DROP TABLE secret--", &none, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "not a UUID"));
    assert_null(strstr(e.message, "DROP"));
    assert_int_equal(ferry_trace_get(db, &o, "", &none, &e), FERRY_EINVAL);
    assert_int_equal(ferry_trace_get(db, &o, "0190a5c4-7b1e-7c3d-9f00-1234567890abc", &none, &e),
                     FERRY_EINVAL);
    o.max_queues = FERRY_TRACE_QUEUES_MAX + 1;
    assert_int_equal(ferry_trace_get(db, &o, st.event_id, &none, &e), FERRY_EINVAL);
    /* the connection is still usable and idle */
    assert_int_equal(PQtransactionStatus(db), PQTRANS_IDLE);
}

/* A queue bound that stops the search says so. */
static void test_queue_bound(void **state) {
    (void)state;
    ferry_trace_options o;
    ferry_trace_options_init(&o);
    o.schema = schema;
    o.redis = &rro;
    o.prefix = prefix;
    o.max_queues = 1; /* one of the two queues (whichever the scan meets first) */
    ferry_trace *t = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_trace_get(db, &o, st.event_id, &t, &e), 0);
    assert_int_equal(t->queues_complete, 0);
    /* the dead letters still lead to pay's jobs, whichever queue was listed */
    assert_true(t->njobs == 2 || t->njobs == 3);
    job_of(t, "pay", st.event_id);
    job_of(t, "pay", st.redrive_job);
    ferry_trace_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_hop_with_routes),
        cmocka_unit_test(test_without_routes_lists_the_queues),
        cmocka_unit_test(test_unpublished_unknown_and_bad),
        cmocka_unit_test(test_queue_bound),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(rc);
}
