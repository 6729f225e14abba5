/* test_dlq.c - dead letters against real Redis and PostgreSQL:
 *  - ferry_dlq_record writes a failure once; data that is not JSON is kept as text;
 *  - poison jobs among good ones: a worker with a recorder records each final failure once
 *    while the good jobs complete, and a sync afterwards finds every one recorded (the
 *    recorder and the sync agree on what a failure is);
 *  - a sync of failures made without a recorder records them, a second sync nothing;
 *  - redrive: a dry run changes neither the table nor Redis (only the audit gains dry-run
 *    rows); --execute re-enqueues exactly the filtered rows once; a second --execute adds
 *    nothing; --again redrives under a new id; redriven jobs that now succeed have their
 *    effect once (inbox); purge is a dry run by default and audited;
 *  - a redrive killed (SIGKILL) between adding a job and committing its row, run again,
 *    creates no second job;
 *  - PostgreSQL stopped while poison jobs fail, then started: every failure ends up
 *    recorded (by the recorder's retry or by a sync), none twice. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deadletter/dlq_internal.h"
#include "ferry/deadletter.h"
#include "ferry/inbox.h"
#include "support/ob.h"
#include "support/wt.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

static int fixed; /* 1 once the "bug" behind the poison jobs is fixed */

typedef struct hx {
    PGconn *conn;
    const char *schema;
} hx;

static ferry_outcome effect(PGconn *c, void *ud) {
    const hx *h = ud;
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO %s.effects VALUES (1)", h->schema);
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? FERRY_COMPLETED : FERRY_FAILED;
}

static ferry_outcome handler(ferry_job *job, void *ud) {
    hx *h = ud;
    if (!strcmp(ferry_job_name(job), "poison") && !__atomic_load_n(&fixed, __ATOMIC_SEQ_CST)) {
        ferry_job_set_failure(job, "bad payload: amount missing", NULL);
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(ferry_job_name(job), "flaky") && !__atomic_load_n(&fixed, __ATOMIC_SEQ_CST))
        return FERRY_FAILED;
    if (!h) return FERRY_COMPLETED;
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = h->schema;
    ferry_outcome out = ferry_inbox_run_job(h->conn, &o, "effects", job, effect, h);
    return out;
}

static char *event_data(int i) {
    char *s = malloc(200);
    snprintf(s, 200,
             "{\"eventId\":\"0190b6a2-7c00-7abc-8def-%012d\",\"traceId\":\"t-%d\",\"payload\":{"
             "\"n\":%d}}",
             i, i, i);
    return s;
}

static ferry_dlq_recorder *recorder_start(const char *schema, const char *prefix) {
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = th_env_require("DATABASE_URL");
    ro.schema = schema;
    ro.prefix = prefix;
    ro.retry_min_ms = 50;
    ro.retry_max_ms = 400;
    ferry_dlq_recorder *r = NULL;
    ferry_error e = {0};
    if (ferry_dlq_recorder_start(&ro, &r, &e)) fail_msg("recorder: %s", e.message);
    return r;
}

static long long rows(const char *schema, const char *where) {
    return ob_ll(db, "SELECT count(*) FROM %s.dead_letters WHERE %s", schema, where);
}

/* The table and the queue as text, to compare before and after a dry run. */
static char *snapshot(wt *t, const char *schema) {
    PGresult *r = ob_sql(db,
                         "SELECT coalesce(string_agg(d::text, '|' ORDER BY id), '') FROM "
                         "%s.dead_letters d",
                         schema);
    ferry_job_counts c;
    ferry_error e = {0};
    if (ferry_queue_counts(t->q, &c, &e)) fail_msg("counts: %s", e.message);
    redisReply *k = wt_cmd(t, "KEYS %s*", t->prefix);
    char *s = NULL;
    size_t len = strlen(PQgetvalue(r, 0, 0)) + 200 + 200 * k->elements;
    s = malloc(len);
    int o = snprintf(s, len, "%s#%lld,%lld,%lld,%lld,%lld#", PQgetvalue(r, 0, 0), c.waiting,
                     c.active, c.completed, c.failed, c.delayed);
    for (size_t i = 0; i < k->elements; i++)
        o += snprintf(s + o, len - (size_t)o, "%.150s,", k->element[i]->str);
    freeReplyObject(k);
    PQclear(r);
    return s;
}

static void test_record_once_and_text_data(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    ferry_dlq_options o;
    ferry_dlq_options_init(&o);
    o.schema = s;
    ferry_dlq_failure f = {.queue = "q1",
                           .job_id = "7",
                           .job_name = "bad\xff name",
                           .data = "not json {",
                           .error = "boom",
                           .attempts_made = 3,
                           .job_timestamp_ms = 1700000000000LL};
    int ins = -1;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_record(db, &o, &f, &ins, &e), 0);
    assert_int_equal(ins, 1);
    assert_int_equal(ferry_dlq_record(db, &o, &f, &ins, &e), 0);
    assert_int_equal(ins, 0);
    /* the same id failing again later (retried by hand: more attempts) is a new row */
    f.attempts_made = 4;
    assert_int_equal(ferry_dlq_record(db, &o, &f, &ins, &e), 0);
    assert_int_equal(ins, 1);
    assert_int_equal(rows(s, "queue = 'q1'"), 2);
    assert_int_equal(rows(s, "data IS NULL AND data_text = 'not json {' AND prefix = 'bull' AND "
                             "job_name = 'bad\xef\xbf\xbd name'"),
                     2);
    ferry_dlq_failure nojob = {.queue = "q1"};
    assert_int_equal(ferry_dlq_record(db, &o, &nojob, &ins, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "job id"));
    /* list by filter; a bad filter is refused by name */
    ferry_dlq_filter flt = {.queue = "q1", .error_contains = "BOO"};
    ferry_dlq_list *l = NULL;
    assert_int_equal(ferry_dlq_list_get(db, &o, &flt, &l, &e), 0);
    assert_int_equal(l->n, 2);
    assert_int_equal(l->total, 2);
    assert_false(l->entries[0].data_is_json);
    assert_string_equal(l->entries[0].data, "not json {");
    ferry_dlq_list_free(l);
    flt.id = "nope";
    assert_int_equal(ferry_dlq_list_get(db, &o, &flt, &l, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "id"));
    ferry_dlq_filter late = {.since_ms = 2000, .until_ms = 1000};
    assert_int_equal(ferry_dlq_list_get(db, &o, &late, &l, &e), FERRY_EINVAL);
    /* a row that is not JSON is refused by a redrive, and the run goes on */
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "tester";
    a.execute = 1;
    ferry_redis_options rro;
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    a.redis = &rro;
    ferry_dlq_action_stats st;
    ferry_dlq_filter q1 = {.queue = "q1", .prefix = "bull"};
    a.execute = 0; /* a dry run refuses them too, and audits nothing it would not do */
    assert_int_equal(ferry_dlq_redrive(db, &o, &q1, &a, &st, &e), 0);
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.would, 0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", s), 0);
    a.execute = 1;
    assert_int_equal(ferry_dlq_redrive(db, &o, &q1, &a, &st, &e), 0);
    assert_int_equal(st.matched, 2);
    assert_int_equal(st.refused, 2);
    assert_int_equal(rows(s, "redrive_count > 0"), 0);
    a.actor = "bad\nactor";
    assert_int_equal(ferry_dlq_redrive(db, &o, &q1, &a, &st, &e), FERRY_EINVAL);
}

static void test_poison_among_good_recorded_once(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    PQclear(ob_sql(db, "CREATE TABLE %s.effects (n int)", s));
    __atomic_store_n(&fixed, 0, __ATOMIC_SEQ_CST);
    wt t;
    wt_init(&t);
    char *poison[6];
    for (int i = 0; i < 30; i++) {
        char *d = event_data(i);
        if (i % 5 == 0) {
            /* permanent failures, and flaky ones whose attempts run out */
            poison[i / 5] = wt_add(&t, i % 10 == 0 ? "poison" : "flaky", d, "{\"attempts\":2}");
        } else {
            free(wt_add(&t, "good", d, NULL));
        }
        free(d);
    }
    ferry_dlq_recorder *rec = recorder_start(s, t.prefix);
    ferry_worker_options wo;
    ferry_redis_options ro;
    wt_options(&t, &wo, &ro);
    wo.concurrency = 4;
    wo.final_failure = ferry_dlq_recorder_final_failure;
    wo.final_failure_userdata = rec;
    hx h = {.conn = NULL, .schema = s};
    (void)h;
    ferry_worker *w = wt_start(&wo, handler, NULL);
    WT_WAIT_COUNT(&t, completed, 24);
    WT_WAIT_COUNT(&t, failed_final, 6);
    wt_stop(w);
    assert_int_equal(ferry_dlq_recorder_flush(rec, 10000), 0);
    ferry_dlq_recorder_stats rs;
    ferry_dlq_recorder_get_stats(rec, &rs);
    assert_int_equal(rs.recorded, 6);
    assert_int_equal(rs.missed, 0);
    ferry_dlq_recorder_close(rec, 1000);
    assert_int_equal(rows(s, "true"), 6);
    for (int i = 0; i < 6; i++) {
        char where[300];
        snprintf(where, sizeof where,
                 "job_id = '%s' AND recorded_by = 'worker' AND queue = '" WT_QUEUE
                 "' AND prefix = '%s' AND data->>'eventId' IS NOT NULL",
                 poison[i], t.prefix);
        assert_int_equal(rows(s, where), 1);
        long long atm = wt_hget_ll(&t, poison[i], "atm");
        assert_int_equal(ob_ll(db, "SELECT attempts_made FROM %s.dead_letters WHERE job_id = '%s'",
                               s, poison[i]),
                         atm);
    }
    assert_int_equal(rows(s, "job_name = 'poison' AND error = 'bad payload: amount missing' AND "
                             "attempts_made = 1"),
                     3);
    assert_int_equal(rows(s, "job_name = 'flaky' AND attempts_made = 2 AND stacktrace IS NOT NULL"),
                     3);
    /* a sync finds them all recorded */
    ferry_dlq_options o = {s};
    ferry_dlq_sync_stats ss;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_sync(db, &o, t.q, NULL, NULL, &ss, &e), 0);
    assert_int_equal(ss.scanned, 6);
    assert_int_equal(ss.recorded, 0);
    assert_int_equal(ss.already, 6);
    assert_int_equal(rows(s, "true"), 6);

    /* ---- redrive: dry run, execute, execute again, --again ---- */
    char *before = snapshot(&t, s);
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "ops@example";
    ferry_redis_options rro;
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    a.redis = &rro;
    ferry_dlq_filter poisoned = {.name = "poison"};
    ferry_dlq_action_stats st;
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.matched, 3);
    assert_int_equal(st.would, 3);
    assert_int_equal(st.done, 0);
    char *after = snapshot(&t, s);
    assert_string_equal(before, after);
    free(after);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.dead_letter_redrives WHERE dry_run AND "
                           "redriven_by = 'ops@example' AND filter = 'name=poison' AND "
                           "new_job_id LIKE 'dlq-%%-1'",
                           s),
                     3);
    a.execute = 1;
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.done, 3);
    after = snapshot(&t, s);
    assert_string_not_equal(before, after);
    free(after);
    free(before);
    PGresult *ids = ob_sql(db,
                           "SELECT redrive_job_id FROM %s.dead_letters WHERE job_name = "
                           "'poison' AND redrive_count = 1 ORDER BY 1",
                           s);
    assert_int_equal(PQntuples(ids), 3);
    for (int i = 0; i < 3; i++) {
        const char *nid = PQgetvalue(ids, i, 0);
        ferry_job_info *info = NULL;
        assert_int_equal(ferry_queue_get_job(t.q, nid, &info, &e), 0);
        assert_string_equal(info->state, "waiting");
        assert_string_equal(info->name, "poison");
        assert_non_null(strstr(info->data, "eventId"));
        assert_non_null(strstr(info->opts, "\"attempts\":2"));
        ferry_job_info_free(info);
    }
    PQclear(ids);
    assert_int_equal(rows(s, "job_name <> 'poison' AND redrive_count > 0"), 0);
    ferry_job_counts c;
    assert_int_equal(ferry_queue_counts(t.q, &c, &e), 0);
    assert_int_equal(c.waiting, 3);
    /* a second execute: nothing left to redrive */
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.matched, 0);
    assert_int_equal(st.done, 0);
    assert_int_equal(ferry_queue_counts(t.q, &c, &e), 0);
    assert_int_equal(c.waiting, 3);
    /* --again: a new id each, the same events */
    a.again = 1;
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.done, 3);
    assert_int_equal(rows(s, "job_name = 'poison' AND redrive_count = 2 AND redrive_job_id LIKE "
                             "'dlq-%-2'"),
                     3);
    assert_int_equal(ferry_queue_counts(t.q, &c, &e), 0);
    assert_int_equal(c.waiting, 6);
    /* the bug is fixed: the six redriven jobs (two per event) complete, one effect each */
    __atomic_store_n(&fixed, 1, __ATOMIC_SEQ_CST);
    hx hh = {.conn = ob_pg(), .schema = s};
    wt_options(&t, &wo, &ro);
    w = wt_start(&wo, handler, &hh);
    WT_WAIT_COUNT(&t, completed, 24 + 6);
    wt_stop(w);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.effects", s), 3);
    PQfinish(hh.conn);

    /* --again made resumable: fewer than 3 redrives takes each once, a rerun none */
    poisoned.redriven_fewer_than = 3;
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.done, 3);
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), 0);
    assert_int_equal(st.matched, 0);
    assert_int_equal(rows(s, "job_name = 'poison' AND redrive_count = 3"), 3);
    poisoned.redriven_fewer_than = -1;
    assert_int_equal(ferry_dlq_redrive(db, &o, &poisoned, &a, &st, &e), FERRY_EINVAL);

    /* purge: a dry run deletes nothing; executed, the filtered rows go, audited */
    a.again = 0;
    a.execute = 0;
    ferry_dlq_filter flaky = {.name = "flaky"};
    assert_int_equal(ferry_dlq_purge(db, &o, &flaky, &a, &st, &e), 0);
    assert_int_equal(st.would, 3);
    assert_int_equal(rows(s, "true"), 6);
    a.execute = 1;
    assert_int_equal(ferry_dlq_purge(db, &o, &flaky, &a, &st, &e), 0);
    assert_int_equal(st.done, 3);
    assert_int_equal(rows(s, "true"), 3);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.dead_letter_redrives WHERE action = 'purge' "
                           "AND NOT dry_run",
                           s),
                     3);
    for (int i = 0; i < 6; i++)
        free(poison[i]);
    wt_fini(&t);
}

static void test_sync_without_recorder(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    __atomic_store_n(&fixed, 0, __ATOMIC_SEQ_CST);
    wt t;
    wt_init(&t);
    for (int i = 0; i < 2500; i++)
        free(wt_add(&t, "poison", "{\"n\":1}", NULL));
    ferry_worker_options wo;
    ferry_redis_options ro;
    wt_options(&t, &wo, &ro);
    wo.concurrency = 16;
    ferry_worker *w = wt_start(&wo, handler, NULL);
    WT_WAIT_COUNT(&t, failed_final, 2500);
    wt_stop(w);
    ferry_dlq_options o = {s};
    ferry_dlq_sync_stats ss;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_sync(db, &o, t.q, NULL, NULL, &ss, &e), 0);
    assert_int_equal(ss.scanned, 2500);
    assert_int_equal(ss.recorded, 2500);
    assert_int_equal(rows(s, "recorded_by = 'sync' AND error = 'bad payload: amount missing'"),
                     2500);
    assert_int_equal(ferry_dlq_sync(db, &o, t.q, NULL, NULL, &ss, &e), 0);
    assert_int_equal(ss.recorded, 0);
    assert_int_equal(ss.already, 2500);
    assert_int_equal(rows(s, "true"), 2500);
    wt_fini(&t);
}

static int hook_calls;
static void kill_on_second_add(const char *new_job_id) {
    (void)new_job_id;
    if (++hook_calls == 2) raise(SIGKILL);
}

static void test_redrive_killed_half_way_makes_no_second_job(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    wt t;
    wt_init(&t);
    ferry_dlq_options o = {s};
    ferry_error e = {0};
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof id, "j%d", i);
        ferry_dlq_failure f = {.prefix = t.prefix,
                               .queue = WT_QUEUE,
                               .job_id = id,
                               .job_name = "poison",
                               .data = "{\"n\":1}",
                               .error = "x",
                               .attempts_made = 1,
                               .failed_at_ms = 1700000000000LL + i};
        assert_int_equal(ferry_dlq_record(db, &o, &f, NULL, &e), 0);
    }
    ferry_redis_options rro;
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        PGconn *c = ob_pg();
        ferry__dlq_after_add_hook = kill_on_second_add;
        ferry_dlq_action_options a;
        ferry_dlq_action_options_init(&a);
        a.actor = "crash";
        a.execute = 1;
        a.redis = &rro;
        ferry_dlq_redrive(c, &o, NULL, &a, NULL, NULL);
        _exit(3); /* not reached: killed on the second add */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* one row committed, the second's job added without its row */
    assert_int_equal(rows(s, "redrive_count = 1"), 1);
    ferry_job_counts c;
    assert_int_equal(ferry_queue_counts(t.q, &c, &e), 0);
    assert_int_equal(c.waiting, 2);
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.actor = "rerun";
    a.execute = 1;
    a.redis = &rro;
    ferry_dlq_action_stats st;
    assert_int_equal(ferry_dlq_redrive(db, &o, NULL, &a, &st, &e), 0);
    assert_int_equal(st.matched, 3);
    assert_int_equal(st.done, 3);
    assert_int_equal(rows(s, "redrive_count = 1"), 4);
    assert_int_equal(ferry_queue_counts(t.q, &c, &e), 0);
    assert_int_equal(c.waiting, 4); /* not 5 */
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives WHERE NOT dry_run", s),
                     4);
    wt_fini(&t);
}

/* ---- PostgreSQL stopped while jobs fail ---------------------------------------------- */

static int log_lines;
static void count_log(int level, const char *msg, void *ud) {
    (void)level;
    (void)ud;
    (void)msg;
    __atomic_add_fetch(&log_lines, 1, __ATOMIC_SEQ_CST);
}

static void test_database_down_while_jobs_fail(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    char schema[128];
    snprintf(schema, sizeof schema, "%s", s);
    __atomic_store_n(&fixed, 0, __ATOMIC_SEQ_CST);
    wt t;
    wt_init(&t);
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = th_env_require("DATABASE_URL");
    ro.schema = schema;
    ro.prefix = t.prefix;
    ro.retry_min_ms = 50;
    ro.retry_max_ms = 300;
    ro.capacity = 30; /* smaller than the failures: some are missed, for sync to find */
    ro.log = count_log;
    ferry_dlq_recorder *rec = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_recorder_start(&ro, &rec, &e), 0);
    PQfinish(db);
    db = NULL;
    ob_pg_ctl("stop", "fast");
    for (int i = 0; i < 50; i++)
        free(wt_add(&t, "poison", "{\"n\":2}", NULL));
    ferry_worker_options wo;
    ferry_redis_options rro;
    wt_options(&t, &wo, &rro);
    wo.final_failure = ferry_dlq_recorder_final_failure;
    wo.final_failure_userdata = rec;
    ferry_worker *w = wt_start(&wo, handler, NULL);
    WT_WAIT_COUNT(&t, failed_final, 50);
    wt_stop(w);
    ferry_dlq_recorder_stats rs;
    ferry_dlq_recorder_get_stats(rec, &rs);
    assert_int_equal(rs.recorded, 0);
    assert_true(rs.outages >= 1);
    assert_int_equal(rs.missed, 50 - 30);
    ob_pg_ctl("restart", "fast");
    db = ob_pg();
    assert_int_equal(ferry_dlq_recorder_flush(rec, 30000), 0);
    ferry_dlq_recorder_get_stats(rec, &rs);
    assert_int_equal(rs.recorded, 30);
    assert_int_equal(rs.connected, 1);
    ferry_dlq_recorder_close(rec, 1000);
    assert_true(__atomic_load_n(&log_lines, __ATOMIC_SEQ_CST) >= 2);
    assert_int_equal(rows(schema, "true"), 30);
    ferry_dlq_options o = {schema};
    ferry_dlq_sync_stats ss;
    assert_int_equal(ferry_dlq_sync(db, &o, t.q, NULL, NULL, &ss, &e), 0);
    assert_int_equal(ss.scanned, 50);
    assert_int_equal(ss.recorded, 20);
    assert_int_equal(ss.already, 30);
    assert_int_equal(rows(schema, "true"), 50);
    assert_int_equal(ob_ll(db, "SELECT count(DISTINCT job_id) FROM %s.dead_letters", schema), 50);
    wt_fini(&t);
}

static char last_log[1024];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static void keep_log(int level, const char *msg, void *ud) {
    (void)level;
    (void)ud;
    pthread_mutex_lock(&log_mu);
    if (!strstr(last_log, "ferry migrate")) snprintf(last_log, sizeof last_log, "%s", msg);
    pthread_mutex_unlock(&log_mu);
}
static int log_has_hint(void *arg) {
    (void)arg;
    pthread_mutex_lock(&log_mu);
    int v = strstr(last_log, "run `ferry migrate`") != NULL;
    pthread_mutex_unlock(&log_mu);
    return v;
}

/* A recorder pointed at a schema nobody migrated keeps the failure, says why, and counts it
 * missed at close (the job is still in its failed set for a sync). */
static void test_recorder_unmigrated_schema(void **state) {
    (void)state;
    ferry_dlq_recorder_options ro;
    ferry_dlq_recorder_options_init(&ro);
    ro.database_url = th_env_require("DATABASE_URL");
    ro.schema = "never_migrated";
    ro.retry_min_ms = 50;
    ro.log = keep_log;
    ferry_dlq_recorder *r = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_recorder_start(&ro, &r, &e), 0);
    ferry_dlq_failure f = {.queue = "q", .job_id = "1", .error = "x"};
    assert_int_equal(ferry_dlq_recorder_push(r, &f), 0);
    assert_true(th_wait_until(log_has_hint, NULL, 15000));
    ferry_dlq_recorder_stats st;
    ferry_dlq_recorder_get_stats(r, &st);
    assert_int_equal(st.recorded, 0);
    assert_int_equal(st.pending, 1);
    ferry_dlq_failure nojob = {.queue = "q"};
    assert_int_equal(ferry_dlq_recorder_push(r, &nojob), FERRY_EINVAL);
    ferry_dlq_recorder_close(r, 0);
    ferry_dlq_recorder_options bad = ro;
    bad.retry_min_ms = 500;
    bad.retry_max_ms = 100;
    assert_int_equal(ferry_dlq_recorder_start(&bad, &r, &e), FERRY_EINVAL);
    bad = ro;
    bad.database_url = "postgress://x/y";
    assert_int_equal(ferry_dlq_recorder_start(&bad, &r, &e), FERRY_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_once_and_text_data),
        cmocka_unit_test(test_poison_among_good_recorded_once),
        cmocka_unit_test(test_sync_without_recorder),
        cmocka_unit_test(test_redrive_killed_half_way_makes_no_second_job),
        cmocka_unit_test(test_database_down_while_jobs_fail),
        cmocka_unit_test(test_recorder_unmigrated_schema),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
