/* test_worker_flows.c - a worker finishing BullMQ flow children and deduplicated jobs,
 * against real Redis, with the flows written as Node's FlowProducer writes them (protocol
 * §9: the parent in waiting-children, each child with parentKey / parent and a member of
 * the parent's :dependencies): the children's completions release the parent, which then
 * runs; a child failing with failParentOnFailure fails its parent; a completion refused
 * for pending (-4) or failed (-9) children fails the job with BullMQ's error text (retried
 * while attempts remain for -4, at once for -9) instead of leaving it active; and a
 * keepLastIfActive duplicate stored while its owner ran becomes a job when the owner
 * finishes. The script's effects in detail are in test_finish_script.c. */
#include "support/wt.h"

/* What the handler does depends on the job name: "child" returns {"child":"<id>"},
 * "failchild" fails for good, "gated" waits on the gate, anything else returns "done". */
typedef struct fx {
    wt t;
    wt_hctx h;
} fx;

static ferry_outcome handler(ferry_job *j, void *ud) {
    fx *f = ud;
    wt_hctx_count_run(&f->h);
    const char *name = ferry_job_name(j);
    if (!strcmp(name, "child")) {
        char rv[128];
        snprintf(rv, sizeof rv, "{\"child\":\"%s\"}", ferry_job_id(j));
        ferry_job_set_return(j, rv);
        return FERRY_COMPLETED;
    }
    if (!strcmp(name, "failchild")) {
        ferry_job_set_failure(j, "child broke", NULL);
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(name, "gated")) wt_gate_pass(&f->h.g);
    ferry_job_set_return(j, "\"done\"");
    return FERRY_COMPLETED;
}

/* A job hash as Node's addJob stores it, in t's queue, put in wait with the marker. */
static void raw_job(wt *t, const char *id, const char *name, const char *opts) {
    freeReplyObject(wt_cmd(t, "HSET %s%s name %s data {} opts %s timestamp %lld delay 0 priority 0",
                           t->base, id, name, opts, (long long)ferry__now_ms()));
}
static void raw_enqueue(wt *t, const char *id) {
    freeReplyObject(wt_cmd(t, "LPUSH %swait %s", t->base, id));
    freeReplyObject(wt_cmd(t, "ZADD %smarker 0 0", t->base));
}

/* Parent `pid` in waiting-children with children `kids` (named `kname`) in wait; flags is
 * "" or ",\"fpof\":true" and so on. */
static void raw_flow(wt *t, const char *pid, const char *const *kids, size_t n, const char *kname,
                     const char *flags) {
    raw_job(t, pid, "parent", "{}");
    freeReplyObject(
        wt_cmd(t, "ZADD %swaiting-children %lld %s", t->base, (long long)ferry__now_ms(), pid));
    char pjson[256];
    snprintf(pjson, sizeof pjson, "{\"id\":\"%s\",\"queueKey\":\"%s:%s\"%s}", pid, t->prefix,
             WT_QUEUE, flags);
    for (size_t i = 0; i < n; i++) {
        raw_job(t, kids[i], kname, "{\"attempts\":1}");
        freeReplyObject(
            wt_cmd(t, "HSET %s%s parentKey %s%s parent %s", t->base, kids[i], t->base, pid, pjson));
        freeReplyObject(wt_cmd(t, "SADD %s%s:dependencies %s%s", t->base, pid, t->base, kids[i]));
    }
    for (size_t i = 0; i < n; i++)
        raw_enqueue(t, kids[i]);
}

static ferry_worker *start(fx *f) {
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&f->t, &o, &ro);
    o.concurrency = 2;
    return wt_start(&o, handler, f);
}

/* Both children complete; the parent leaves waiting-children only then, runs, and sees
 * their return values in :processed. */
static void test_children_release_parent(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    const char *kids[] = {"c1", "c2"};
    raw_flow(&f.t, "P", kids, 2, "child", "");
    ferry_worker *w = start(&f);
    WT_WAIT_ZCARD(&f.t, "completed", 3);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&f.h), 3);
    wt_expect_field(&f.t, "P", "returnvalue", "\"done\"");
    char field[256];
    snprintf(field, sizeof field, "%sc1", f.t.base);
    redisReply *r = wt_cmd(&f.t, "HGET %sP:processed %s", f.t.base, field);
    assert_string_equal(r->str, "{\"child\":\"c1\"}");
    freeReplyObject(r);
    snprintf(field, sizeof field, "%sc2", f.t.base);
    r = wt_cmd(&f.t, "HGET %sP:processed %s", f.t.base, field);
    assert_string_equal(r->str, "{\"child\":\"c2\"}");
    freeReplyObject(r);
    assert_int_equal(WT_EXISTS(&f.t, "P:dependencies"), 0);
    assert_int_equal(WT_ZCARD(&f.t, "waiting-children"), 0);
    /* the parent became waiting after both children completed, and ran after that */
    char *ev = wt_events(&f.t, "P", NULL);
    assert_string_equal(ev, "waiting active completed drained");
    free(ev);
    /* in the stream: the parent's waiting event just before the last child's completed
     * event (BullMQ's order), after the first child's */
    ev = wt_events(&f.t, NULL, "jobId");
    const char *pw = strstr(ev, "waiting(jobId=P)");
    const char *c1 = strstr(ev, "completed(jobId=c1)"), *c2 = strstr(ev, "completed(jobId=c2)");
    assert_true(pw && c1 && c2);
    assert_true(pw > (c1 < c2 ? c1 : c2) && pw < (c1 < c2 ? c2 : c1));
    free(ev);
    assert_int_equal(wt_count(&f.t, &f.t.errors), 0);
    wt_fini(&f.t);
}

/* failParentOnFailure: the child fails for good, the parent gets defa and is failed by the
 * worker without running ("child <key> failed"). */
static void test_fpof_child_fails_parent(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    const char *kids[] = {"f1"};
    raw_flow(&f.t, "P", kids, 1, "failchild", ",\"fpof\":true");
    ferry_worker *w = start(&f);
    WT_WAIT_ZCARD(&f.t, "failed", 2);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&f.h), 1); /* the child only */
    char want[256];
    snprintf(want, sizeof want, "child %sf1 failed", f.t.base);
    wt_expect_field(&f.t, "P", "failedReason", want);
    wt_expect_field(&f.t, "P", "defa", NULL); /* deleted when it landed in failed */
    wt_expect_field(&f.t, "f1", "failedReason", "child broke");
    char child[128];
    snprintf(child, sizeof child, "%sf1", f.t.base);
    char *sc = wt_zscore(&f.t, "P:unsuccessful", child);
    assert_non_null(sc);
    free(sc);
    assert_int_equal(WT_ZCARD(&f.t, "P:unsuccessful"), 1);
    wt_fini(&f.t);
}

/* A completion refused for pending children (-4): failed with BullMQ's text, retried while
 * attempts remain (each attempt runs the handler), then failed for good; never left
 * active. */
static void test_pending_children_fail_completion(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    raw_job(&f.t, "X", "plain", "{\"attempts\":2}");
    freeReplyObject(wt_cmd(&f.t, "SADD %sX:dependencies %sother", f.t.base, f.t.base));
    raw_enqueue(&f.t, "X");
    ferry_worker *w = start(&f);
    WT_WAIT_ZCARD(&f.t, "failed", 1);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&f.h), 2);
    wt_expect_field(&f.t, "X", "failedReason", "Job X has pending dependencies. moveToFinished");
    wt_expect_field(&f.t, "X", "atm", "2");
    assert_int_equal(WT_LLEN(&f.t, "active"), 0);
    assert_int_equal(WT_ZCARD(&f.t, "completed"), 0);
    char *st = wt_hget(&f.t, "X", "stacktrace");
    assert_non_null(strstr(st, "Error: Job X has pending dependencies. moveToFinished"));
    free(st);
    assert_int_equal(wt_count(&f.t, &f.t.failed_retry), 1);
    assert_int_equal(wt_count(&f.t, &f.t.failed_final), 1);
    assert_true(wt_count(&f.t, &f.t.errors) >= 2); /* each refusal is reported, as Node emits */
    assert_non_null(strstr(f.t.last_error, "pending dependencies"));
    wt_fini(&f.t);
}

/* A completion refused for failed children (-9): an UnrecoverableError, failed at once
 * though attempts remain. */
static void test_failed_children_fail_completion(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    raw_job(&f.t, "Y", "plain", "{\"attempts\":3}");
    freeReplyObject(wt_cmd(&f.t, "ZADD %sY:unsuccessful 1 %sgone", f.t.base, f.t.base));
    raw_enqueue(&f.t, "Y");
    ferry_worker *w = start(&f);
    WT_WAIT_ZCARD(&f.t, "failed", 1);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&f.h), 1);
    wt_expect_field(&f.t, "Y", "failedReason",
                    "Cannot complete job Y because it has at least one failed child. "
                    "moveToFinished");
    char *st = wt_hget(&f.t, "Y", "stacktrace");
    assert_non_null(strstr(st, "UnrecoverableError: Cannot complete job Y"));
    free(st);
    assert_int_equal(wt_count(&f.t, &f.t.failed_final), 1);
    assert_int_equal(wt_count(&f.t, &f.t.failed_retry), 0);
    wt_fini(&f.t);
}

/* keepLastIfActive: while the owner runs, a duplicate is stored in dn:<id> (as Node's
 * addJob does); when the owner finishes the stored job is created and runs, and its own
 * finish releases the deduplication key. */
static void test_keep_last_if_active(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    raw_job(&f.t, "A", "gated", "{\"de\":{\"id\":\"d1\",\"keepLastIfActive\":true}}");
    freeReplyObject(wt_cmd(&f.t, "HSET %sA deid d1", f.t.base));
    freeReplyObject(wt_cmd(&f.t, "SET %sde:d1 A", f.t.base));
    raw_enqueue(&f.t, "A");
    ferry_worker *w = start(&f);
    WT_WAIT_GATE_ENTERED(&f.h.g, 1);
    freeReplyObject(wt_cmd(&f.t, "HSET %sdn:d1 name second data {\"n\":2} opts %s jid next1",
                           f.t.base, "{\"de\":{\"id\":\"d1\",\"keepLastIfActive\":true}}"));
    wt_gate_open(&f.h.g);
    WT_WAIT_ZCARD(&f.t, "completed", 2);
    wt_stop(w);
    assert_int_equal(wt_runs_of(&f.h), 2);
    wt_expect_field(&f.t, "next1", "name", "second");
    wt_expect_field(&f.t, "next1", "data", "{\"n\":2}");
    wt_expect_field(&f.t, "next1", "deid", "d1");
    wt_expect_field(&f.t, "next1", "returnvalue", "\"done\"");
    assert_int_equal(WT_EXISTS(&f.t, "dn:d1"), 0);
    assert_int_equal(WT_EXISTS(&f.t, "de:d1"), 0); /* released by next1's finish */
    char *ev = wt_events(&f.t, "next1", NULL);
    assert_string_equal(ev, "added waiting active completed drained");
    free(ev);
    wt_fini(&f.t);
}

/* A job a flow adopts while it runs (Node's updateExistingJobsParent writes parentKey and
 * parent onto it and adds it to the parent's dependencies) releases that parent when it
 * completes: the finish reads the parent from the job, not from what the fetch saw. */
static void test_adopted_while_active(void **state) {
    (void)state;
    fx f;
    wt_init(&f.t);
    wt_hctx_init(&f.h);
    raw_job(&f.t, "X", "gated", "{}");
    raw_enqueue(&f.t, "X");
    ferry_worker *w = start(&f);
    WT_WAIT_GATE_ENTERED(&f.h.g, 1);
    /* the parent lives in another queue, so no worker of this test runs it */
    char pbase[128], pjson[256];
    snprintf(pbase, sizeof pbase, "%s:adopter:", f.t.prefix);
    snprintf(pjson, sizeof pjson, "{\"id\":\"AP\",\"queueKey\":\"%s:adopter\"}", f.t.prefix);
    freeReplyObject(wt_cmd(&f.t,
                           "HSET %sAP name parent data {} opts {} timestamp 1 delay 0 "
                           "priority 0",
                           pbase));
    freeReplyObject(wt_cmd(&f.t, "ZADD %swaiting-children 1 AP", pbase));
    freeReplyObject(wt_cmd(&f.t, "SADD %sAP:dependencies %sX", pbase, f.t.base));
    freeReplyObject(wt_cmd(&f.t, "HSET %sX parentKey %sAP parent %s", f.t.base, pbase, pjson));
    wt_gate_open(&f.h.g);
    WT_WAIT_ZCARD(&f.t, "completed", 1);
    wt_stop(w);
    redisReply *r = wt_cmd(&f.t, "LRANGE %swait 0 -1", pbase);
    assert_int_equal(r->elements, 1);
    assert_string_equal(r->element[0]->str, "AP");
    freeReplyObject(r);
    r = wt_cmd(&f.t, "HGET %sAP:processed %sX", pbase, f.t.base);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "\"done\"");
    freeReplyObject(r);
    r = wt_cmd(&f.t, "ZCARD %swaiting-children", pbase);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    wt_fini(&f.t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_children_release_parent),
        cmocka_unit_test(test_fpof_child_fails_parent),
        cmocka_unit_test(test_pending_children_fail_completion),
        cmocka_unit_test(test_failed_children_fail_completion),
        cmocka_unit_test(test_keep_last_if_active),
        cmocka_unit_test(test_adopted_while_active),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
