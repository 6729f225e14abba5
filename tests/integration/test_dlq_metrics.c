/* test_dlq_metrics.c - the dead letters' metrics and audit history against real PostgreSQL
 * and Redis:
 *  - a recorder with a registry counts ferry_dead_letters_total{queue} per row it wrote, a
 *    duplicate not; two recorders share one registry;
 *  - ferry_redrives_total{mode,result}: a dry run counts "would" per row (and "refused" for
 *    a row kept as text), an execution "done", a row deleted during the run "skipped";
 *    the counters match the stats the calls return; promtool accepts the rendering;
 *  - ferry_dlq_audit_list returns the redrive and purge history newest first, by dead letter
 *    and since an instant, with the total, and refuses a bad id or limit. */
#include "deadletter/dlq_internal.h"
#include "ferry/deadletter.h"
#include "ferry/metrics.h"
#include "support/ob.h"
#include "support/pm.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

static ferry_metrics *registry(void) {
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    if (ferry_metrics_create(NULL, &m, &e)) fail_msg("metrics: %s", e.message);
    return m;
}

/* The value of counter `name` for the label values v (0 when the family is missing). */
static uint64_t counter(ferry_metrics *m, const char *name, const char *const *v) {
    ferry_metrics_family *f = ferry_metrics_family_find(m, name);
    if (!f) return 0;
    ferry_metrics_counter *c = NULL;
    ferry_error e = {0};
    if (ferry_metrics_counter_with(f, v, &c, &e)) fail_msg("series of %s: %s", name, e.message);
    return ferry_metrics_counter_value(c);
}

static uint64_t redrives(ferry_metrics *m, const char *mode, const char *result) {
    const char *v[] = {mode, result};
    return counter(m, "ferry_redrives_total", v);
}

static void record(const char *schema, const char *queue, const char *job_id, const char *data) {
    ferry_dlq_options o = {schema};
    ferry_dlq_failure f = {.prefix = "dm",
                           .queue = queue,
                           .job_id = job_id,
                           .job_name = "j",
                           .data = data,
                           .error = "boom",
                           .attempts_made = 1,
                           .job_timestamp_ms = 1000};
    ferry_error e = {0};
    int inserted = 0;
    if (ferry_dlq_record(db, &o, &f, &inserted, &e)) fail_msg("record: %s", e.message);
    assert_int_equal(inserted, 1);
}

static ferry_dlq_recorder *recorder(const char *schema, ferry_metrics *m, ferry_error *e) {
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = th_env_require("DATABASE_URL");
    ro.schema = schema;
    ro.prefix = "dm";
    ro.metrics = m;
    ferry_dlq_recorder *r = NULL;
    ferry_dlq_recorder_start(&ro, &r, e);
    return r;
}

static void test_recorder_counts_rows(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    ferry_metrics *m = registry();
    ferry_error e = {0};
    ferry_dlq_recorder *r1 = recorder(s, m, &e), *r2 = recorder(s, m, &e);
    if (!r1 || !r2) fail_msg("recorder: %s", e.message);
    ferry_dlq_failure f = {.prefix = "dm",
                           .queue = "qa",
                           .job_id = "1",
                           .job_name = "j",
                           .data = "{}",
                           .error = "x",
                           .attempts_made = 1,
                           .job_timestamp_ms = 5};
    assert_int_equal(ferry_dlq_recorder_push(r1, &f), 0);
    assert_int_equal(ferry_dlq_recorder_push(r1, &f), 0); /* the same failure: one row */
    f.job_id = "2";
    assert_int_equal(ferry_dlq_recorder_push(r2, &f), 0);
    f.queue = "qb";
    assert_int_equal(ferry_dlq_recorder_push(r2, &f), 0);
    assert_int_equal(ferry_dlq_recorder_flush(r1, 10000), 0);
    assert_int_equal(ferry_dlq_recorder_flush(r2, 10000), 0);
    ferry_dlq_recorder_stats st1, st2;
    ferry_dlq_recorder_get_stats(r1, &st1);
    ferry_dlq_recorder_get_stats(r2, &st2);
    assert_int_equal(st1.recorded, 1);
    assert_int_equal(st1.duplicates, 1);
    assert_int_equal(st2.recorded, 2);
    const char *qa[] = {"qa"}, *qb[] = {"qb"};
    assert_int_equal(counter(m, "ferry_dead_letters_total", qa), 2);
    assert_int_equal(counter(m, "ferry_dead_letters_total", qb), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letters", s), 3);
    char *text = NULL;
    if (ferry_metrics_render(m, &text, NULL, &e)) fail_msg("render: %s", e.message);
    assert_non_null(strstr(text, "ferry_dead_letters_total{queue=\"qa\"} 2"));
    pm_promtool_check(text, "recorder");
    free(text);
    ferry_dlq_recorder_close(r1, 1000);
    ferry_dlq_recorder_close(r2, 1000);
    ferry_metrics_destroy(m);
}

/* the hook deletes this row while the redrive runs, so it is skipped */
static const char *hook_schema;
static char hook_victim[40];

static void delete_victim(const char *new_job_id) {
    (void)new_job_id;
    if (!hook_victim[0]) return;
    PGconn *c = ob_pg();
    ob_exec(c, "SET client_min_messages = warning");
    PQclear(ob_sql(c, "DELETE FROM %s.dead_letters WHERE id = '%s'", hook_schema, hook_victim));
    PQfinish(c);
    hook_victim[0] = 0;
}

static void test_redrive_counters(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *prefix = th_prefix();
    ferry_redis_options ro = th_redis_options(0);
    record(s, "rq", "1", "{\"n\":1}");
    record(s, "rq", "2", "{\"n\":2}");
    record(s, "rq", "3", "{\"n\":3}");
    record(s, "rq", "4", "not json"); /* kept as text: refused */
    PQclear(ob_sql(db, "UPDATE %s.dead_letters SET prefix = '%s'", s, prefix));
    ferry_metrics *m = registry();
    ferry_dlq_options o = {s};
    ferry_dlq_filter f = {.prefix = prefix};
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "tester";
    a.redis = &ro;
    a.metrics = m;
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    if (ferry_dlq_redrive(db, &o, &f, &a, &st, &e)) fail_msg("dry run: %s", e.message);
    assert_int_equal(st.would, 3);
    assert_int_equal(st.refused, 1);
    assert_int_equal(redrives(m, "dry_run", "would"), 3);
    assert_int_equal(redrives(m, "dry_run", "refused"), 1);
    assert_int_equal(redrives(m, "execute", "done"), 0);

    /* executed: row 3 is deleted while row 1 is being redriven */
    PGresult *r = ob_sql(db, "SELECT id::text FROM %s.dead_letters WHERE job_id = '3'", s);
    snprintf(hook_victim, sizeof hook_victim, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    hook_schema = s;
    ferry__dlq_after_add_hook = delete_victim;
    a.execute = 1;
    int rc = ferry_dlq_redrive(db, &o, &f, &a, &st, &e);
    ferry__dlq_after_add_hook = NULL;
    if (rc) fail_msg("redrive: %s", e.message);
    assert_int_equal(st.done, 2);
    assert_int_equal(st.skipped, 1);
    assert_int_equal(st.refused, 1);
    assert_int_equal(redrives(m, "execute", "done"), 2);
    assert_int_equal(redrives(m, "execute", "skipped"), 1);
    assert_int_equal(redrives(m, "execute", "refused"), 1);
    assert_int_equal(redrives(m, "dry_run", "would"), 3); /* unchanged */

    /* a purge is not a redrive: not counted */
    a.execute = 0;
    if (ferry_dlq_purge(db, &o, &f, &a, &st, &e)) fail_msg("purge: %s", e.message);
    assert_int_equal(st.would, 3);
    assert_int_equal(redrives(m, "dry_run", "would"), 3);
    char *text = NULL;
    if (ferry_metrics_render(m, &text, NULL, &e)) fail_msg("render: %s", e.message);
    assert_non_null(strstr(text, "ferry_redrives_total{mode=\"execute\",result=\"done\"} 2"));
    pm_promtool_check(text, "redrives");
    free(text);
    ferry_metrics_destroy(m);

    ferry_conn *c = th_conn();
    redisReply *k = th_cmd_ok(c, "KEYS %s:rq:dlq-*", prefix);
    assert_int_equal(k->elements, 2);
    freeReplyObject(k);
    ferry__conn_close(c);
}

static void test_audit_list(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *prefix = th_prefix();
    ferry_redis_options ro = th_redis_options(0);
    record(s, "aq", "1", "{}");
    record(s, "aq", "2", "{}");
    PQclear(ob_sql(db, "UPDATE %s.dead_letters SET prefix = '%s'", s, prefix));
    PGresult *r = ob_sql(db, "SELECT id::text FROM %s.dead_letters WHERE job_id = '1'", s);
    char one[40];
    snprintf(one, sizeof one, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    ferry_dlq_options o = {s};
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "alice";
    a.redis = &ro;
    ferry_dlq_filter all = {.prefix = prefix}, first = {.id = one};
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    if (ferry_dlq_redrive(db, &o, &all, &a, &st, &e)) fail_msg("dry run: %s", e.message);
    long long before_exec = 0;
    r = ob_sql(db, "SELECT (extract(epoch FROM now()) * 1000)::bigint");
    before_exec = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    a.execute = 1;
    a.actor = "bob";
    if (ferry_dlq_redrive(db, &o, &first, &a, &st, &e)) fail_msg("redrive: %s", e.message);
    assert_int_equal(st.done, 1);

    ferry_dlq_audit_rows *h = NULL;
    if (ferry_dlq_audit_list(db, &o, NULL, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->total, 3);
    assert_int_equal(h->n, 3);
    /* newest first: bob's executed redrive, then alice's two dry-run rows */
    assert_string_equal(h->entries[0].actor, "bob");
    assert_int_equal(h->entries[0].dry_run, 0);
    assert_string_equal(h->entries[0].action, "redrive");
    assert_string_equal(h->entries[0].dead_letter_id, one);
    char want[80];
    snprintf(want, sizeof want, "dlq-%s-1", one);
    assert_string_equal(h->entries[0].new_job_id, want);
    assert_string_equal(h->entries[0].queue, "aq");
    assert_non_null(h->entries[0].filter);
    assert_true(h->entries[0].at_ms >= before_exec - 1000);
    assert_true(h->entries[0].id > h->entries[1].id);
    assert_string_equal(h->entries[1].actor, "alice");
    assert_int_equal(h->entries[1].dry_run, 1);
    ferry_dlq_audit_rows_free(h);

    ferry_dlq_audit_filter byid = {.dead_letter_id = one};
    if (ferry_dlq_audit_list(db, &o, &byid, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->total, 2); /* its dry run and its redrive */
    ferry_dlq_audit_rows_free(h);

    ferry_dlq_audit_filter lim = {.limit = 1};
    if (ferry_dlq_audit_list(db, &o, &lim, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->n, 1);
    assert_int_equal(h->total, 3);
    ferry_dlq_audit_rows_free(h);

    /* since: in the future, nothing; since long ago, all */
    ferry_dlq_audit_filter later = {.since_ms = before_exec + 3600 * 1000};
    if (ferry_dlq_audit_list(db, &o, &later, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->total, 0);
    assert_int_equal(h->n, 0);
    ferry_dlq_audit_rows_free(h);
    ferry_dlq_audit_filter both = {.dead_letter_id = one, .since_ms = 1000};
    if (ferry_dlq_audit_list(db, &o, &both, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->total, 2);
    ferry_dlq_audit_rows_free(h);

    /* purged rows keep their history */
    a.execute = 1;
    if (ferry_dlq_purge(db, &o, &first, &a, &st, &e)) fail_msg("purge: %s", e.message);
    if (ferry_dlq_audit_list(db, &o, &byid, &h, &e)) fail_msg("audit: %s", e.message);
    assert_int_equal(h->total, 3);
    assert_string_equal(h->entries[0].action, "purge");
    ferry_dlq_audit_rows_free(h);

    ferry_dlq_audit_filter bad = {.dead_letter_id = "nope"};
    h = (ferry_dlq_audit_rows *)1;
    assert_int_equal(ferry_dlq_audit_list(db, &o, &bad, &h, &e), FERRY_EINVAL);
    assert_null(h);
    assert_non_null(strstr(e.message, "UUID"));
    ferry_dlq_audit_filter badlim = {.limit = FERRY_DLQ_LIMIT_MAX + 1};
    assert_int_equal(ferry_dlq_audit_list(db, &o, &badlim, &h, &e), FERRY_EINVAL);
    ferry_dlq_audit_filter badsince = {.since_ms = -1};
    assert_int_equal(ferry_dlq_audit_list(db, &o, &badsince, &h, &e), FERRY_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recorder_counts_rows),
        cmocka_unit_test(test_redrive_counters),
        cmocka_unit_test(test_audit_list),
    };
    return th_exit(cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown));
}
