/* test_gauges.c - ferry serve's system-wide gauges (src/admin/gauges.c) through the
 * internal library, against the fixture's Redis and PostgreSQL: two queues with jobs in
 * every BullMQ state, one paused, known ready and active ages; the outbox backlog and its
 * oldest age; dead letters never redriven and the oldest one's age (a redriven row not
 * counted). Every value is checked in the rendering, which the real `promtool check
 * metrics` must accept. Then a queue is obliterated (its series leave the rendering), a
 * source fails (an unmigrated schema: the errors counter and up gauge say so, the last
 * values stay), a configured database without a connection counts as failing, and a
 * refresh with no database configured leaves the PostgreSQL gauges alone. */
#include "admin/admin_internal.h"
#include "ferry/ferry.h"
#include "support/ob.h"
#include "support/pm.h"
#include "support/qt.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

#define SLACK 5.0 /* seconds the clock may move during the test */

/* The value of the sample whose line is `series` + ' ' + value; fails when missing. */
static double sample(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    fail_msg("no sample %s in:\n%s", series, text);
    return -1;
}

static int has_series(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return 1;
    return 0;
}

static void expect(const char *text, const char *series, double want) {
    double got = sample(text, series);
    if (got != want) fail_msg("%s = %g, want %g in:\n%s", series, got, want, text);
}

static void expect_age(const char *text, const char *series, double want) {
    double got = sample(text, series);
    if (got < want - 0.001 || got > want + SLACK)
        fail_msg("%s = %g, want about %g in:\n%s", series, got, want, text);
}

static char *render(ferry_metrics *m) {
    char *t = NULL;
    ferry_error e = {0};
    if (ferry_metrics_render(m, &t, NULL, &e)) fail_msg("render: %s", e.message);
    return t;
}

static const char *q_series(const char *fam, const char *queue, const char *state) {
    static char buf[512];
    if (state)
        snprintf(buf, sizeof buf, "%s{queue=\"%s\",state=\"%s\"}", fam, queue, state);
    else
        snprintf(buf, sizeof buf, "%s{queue=\"%s\"}", fam, queue);
    return buf;
}

static const char *opts_ago(double ago_s, const char *more) {
    static char buf[512];
    long long ts = (long long)ferry__now_ms() - (long long)(ago_s * 1000);
    snprintf(buf, sizeof buf, "{\"timestamp\":%lld%s%s}", ts, more[0] ? "," : "", more);
    return buf;
}

static void refresh_ok(ferry__admin_gauges *g, const ferry__admin_config *cfg, PGconn *c) {
    ferry_error e = {0};
    if (ferry__admin_gauges_refresh(g, cfg, c, &e)) fail_msg("refresh: %s", e.message);
}

static void test_gauges(void **state) {
    (void)state;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *schema = ob_schema(db);
    ferry_redis_options ro = th_redis_options(0);

    /* queue "mail": 2 wait (oldest ready 100 s), 1 prioritized, 1 delayed (not due), 1
     * active (started 30 s ago), 1 waiting-children, 3 completed, 2 failed */
    ferry_queue *mail = qt_open(prefix, "mail", NULL);
    free(qt_add(mail, "j", NULL, opts_ago(100, "")));
    free(qt_add(mail, "j", NULL, opts_ago(1, "")));
    free(qt_add(mail, "j", NULL, opts_ago(1, "\"lifo\":true")));
    free(qt_add(mail, "j", NULL, opts_ago(2, "\"priority\":3")));
    free(qt_add(mail, "j", NULL, opts_ago(0, "\"delay\":600000")));
    freeReplyObject(qt_cmd("RPOPLPUSH %s %s", qt_key(mail, "wait"), qt_key(mail, "active")));
    freeReplyObject(qt_cmd("HSET %s processedOn %lld ats 1", qt_key(mail, "3"),
                           (long long)ferry__now_ms() - 30000));
    freeReplyObject(qt_cmd("ZADD %s 1 c1 2 c2 3 c3", qt_key(mail, "completed")));
    freeReplyObject(qt_cmd("ZADD %s 1 f1 2 f2", qt_key(mail, "failed")));
    freeReplyObject(qt_cmd("ZADD %s 1 wc1", qt_key(mail, "waiting-children")));
    /* queue "ship": paused, 1 job waiting 50 s, and a legacy paused list of 2 */
    ferry_queue *ship = qt_open(prefix, "ship", NULL);
    ferry_error e = {0};
    assert_int_equal(ferry_queue_pause(ship, &e), 0);
    free(qt_add(ship, "j", NULL, opts_ago(50, "")));
    freeReplyObject(qt_cmd("LPUSH %s lp1 lp2", qt_key(ship, "paused")));

    /* outbox: 3 unpublished, the oldest 300 s; 1 published (not counted) */
    char id[37];
    for (int i = 0; i < 4; i++)
        ob_append(db, schema, "t", "{}", NULL, 1, id);
    PQclear(ob_sql(db,
                   "UPDATE %s.outbox_events SET created_at = now() - interval '300 seconds' "
                   "WHERE id = '%s'",
                   schema, id));
    PQclear(ob_sql(db,
                   "UPDATE %s.outbox_events SET published_at = now() WHERE id = (SELECT id FROM "
                   "%s.outbox_events WHERE id <> '%s' ORDER BY created_at LIMIT 1)",
                   schema, schema, id));
    /* dead letters: 2 never redriven (the oldest failed 200 s ago), 1 redriven (older) */
    ferry_dlq_options dlo = {.schema = schema};
    long long now = (long long)ferry__now_ms();
    const char *ids[] = {"d1", "d2", "d3"};
    const long long ago[] = {200000, 20000, 900000};
    for (int i = 0; i < 3; i++) {
        ferry_dlq_failure f = {.prefix = prefix,
                               .queue = "mail",
                               .job_id = ids[i],
                               .error = "boom",
                               .attempts_made = 1,
                               .failed_at_ms = now - ago[i]};
        if (ferry_dlq_record(db, &dlo, &f, NULL, &e)) fail_msg("record: %s", e.message);
    }
    PQclear(ob_sql(db, "UPDATE %s.dead_letters SET redrive_count = 1 WHERE job_id = 'd3'", schema));

    /* a queue whose name is not a label value (not UTF-8): left out, not an error */
    char badmeta[128];
    snprintf(badmeta, sizeof badmeta, "%s:bad\xff:meta", prefix);
    freeReplyObject(qt_cmd("HSET %s opts.maxLenEvents 10000", badmeta));

    ferry_metrics *m = NULL;
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    ferry__admin_gauges *g = NULL;
    assert_int_equal(ferry__admin_gauges_create(m, &g, &e), 0);
    ferry__admin_config cfg = {
        .redis = &ro, .prefix = prefix, .has_database = 1, .schema = schema, .metrics = m};
    refresh_ok(g, &cfg, db);
    char *t = render(m);
    expect(t, q_series("ferry_queue_jobs", "mail", "wait"), 2);
    expect(t, q_series("ferry_queue_jobs", "mail", "active"), 1);
    expect(t, q_series("ferry_queue_jobs", "mail", "delayed"), 1);
    expect(t, q_series("ferry_queue_jobs", "mail", "prioritized"), 1);
    expect(t, q_series("ferry_queue_jobs", "mail", "paused"), 0);
    expect(t, q_series("ferry_queue_jobs", "mail", "waiting-children"), 1);
    expect(t, q_series("ferry_queue_jobs", "mail", "completed"), 3);
    expect(t, q_series("ferry_queue_jobs", "mail", "failed"), 2);
    expect_age(t, q_series("ferry_queue_oldest_ready_age_seconds", "mail", NULL), 100);
    expect_age(t, q_series("ferry_queue_oldest_active_age_seconds", "mail", NULL), 30);
    expect(t, q_series("ferry_queue_paused", "mail", NULL), 0);
    expect(t, q_series("ferry_queue_jobs", "ship", "wait"), 1);
    expect(t, q_series("ferry_queue_jobs", "ship", "paused"), 2);
    expect(t, q_series("ferry_queue_paused", "ship", NULL), 1);
    expect_age(t, q_series("ferry_queue_oldest_ready_age_seconds", "ship", NULL), 50);
    expect(t, q_series("ferry_queue_oldest_active_age_seconds", "ship", NULL), 0);
    expect(t, "ferry_outbox_unpublished", 3);
    expect_age(t, "ferry_outbox_oldest_unpublished_age_seconds", 300);
    expect(t, "ferry_dead_letters", 2);
    expect_age(t, "ferry_dead_letters_oldest_age_seconds", 200);
    expect(t, "ferry_serve_scrape_errors_total{source=\"redis\"}", 0);
    expect(t, "ferry_serve_scrape_errors_total{source=\"outbox\"}", 0);
    expect(t, "ferry_serve_scrape_errors_total{source=\"dead_letters\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"redis\"}", 1);
    expect(t, "ferry_serve_source_up{source=\"outbox\"}", 1);
    expect(t, "ferry_serve_source_up{source=\"dead_letters\"}", 1);
    expect(t, "ferry_serve_queues", 3); /* mail, ship and the one left out */
    expect(t, "ferry_serve_queue_list_complete", 1);
    assert_null(strstr(t, "queue=\"bad"));
    pm_promtool_check(t, "gauges");
    free(t);

    /* the queue "ship" is deleted: its series leave; mail's stay */
    long long deleted = 0;
    assert_int_equal(ferry_queue_obliterate(ship, 1, &deleted, &e), 0);
    ferry_queue_close(ship);
    refresh_ok(g, &cfg, db);
    t = render(m);
    assert_false(has_series(t, q_series("ferry_queue_jobs", "ship", "wait")));
    assert_false(has_series(t, q_series("ferry_queue_paused", "ship", NULL)));
    assert_false(has_series(t, q_series("ferry_queue_oldest_ready_age_seconds", "ship", NULL)));
    expect(t, q_series("ferry_queue_jobs", "mail", "completed"), 3);
    pm_promtool_check(t, "gauges_after_obliterate");
    free(t);
    /* and comes back when it exists again */
    ship = qt_open(prefix, "ship", NULL);
    free(qt_add(ship, "j", NULL, NULL));
    refresh_ok(g, &cfg, db);
    t = render(m);
    expect(t, q_series("ferry_queue_jobs", "ship", "wait"), 1);
    expect(t, q_series("ferry_queue_paused", "ship", NULL), 0);
    free(t);

    /* PostgreSQL sources failing: an unmigrated schema. Counted, up 0, last values kept;
     * the Redis source still refreshed (a job added to mail shows). */
    free(qt_add(mail, "j", NULL, NULL));
    ferry__admin_config bad = cfg;
    bad.schema = "no_such_schema_gauges";
    assert_int_not_equal(ferry__admin_gauges_refresh(g, &bad, db, &e), 0);
    t = render(m);
    expect(t, "ferry_serve_scrape_errors_total{source=\"outbox\"}", 1);
    expect(t, "ferry_serve_scrape_errors_total{source=\"dead_letters\"}", 1);
    expect(t, "ferry_serve_scrape_errors_total{source=\"redis\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"outbox\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"dead_letters\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"redis\"}", 1);
    expect(t, "ferry_outbox_unpublished", 3);
    expect(t, "ferry_dead_letters", 2);
    expect(t, q_series("ferry_queue_jobs", "mail", "wait"), 3);
    free(t);

    /* Redis failing: an unreachable server. Counted, queue gauges keep their values. */
    ferry_redis_options dead = ro;
    dead.url = "redis://127.0.0.1:1";
    ferry__admin_config nor = cfg;
    nor.redis = &dead;
    assert_int_not_equal(ferry__admin_gauges_refresh(g, &nor, db, &e), 0);
    t = render(m);
    expect(t, "ferry_serve_scrape_errors_total{source=\"redis\"}", 1);
    expect(t, "ferry_serve_source_up{source=\"redis\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"outbox\"}", 1);
    expect(t, q_series("ferry_queue_jobs", "mail", "wait"), 3);
    free(t);

    /* a database configured but no connection to it (the server could not get one):
     * counted as failures of both PostgreSQL sources, last values kept */
    PQclear(ob_sql(db, "UPDATE %s.outbox_events SET published_at = now()", schema));
    assert_int_equal(ferry__admin_gauges_refresh(g, &cfg, NULL, &e), FERRY_EIO);
    t = render(m);
    expect(t, "ferry_outbox_unpublished", 3);
    expect(t, "ferry_serve_scrape_errors_total{source=\"outbox\"}", 2);
    expect(t, "ferry_serve_scrape_errors_total{source=\"dead_letters\"}", 2);
    expect(t, "ferry_serve_source_up{source=\"outbox\"}", 0);
    expect(t, "ferry_serve_source_up{source=\"redis\"}", 1);
    free(t);

    /* no database configured: PostgreSQL gauges untouched, their up series gone */
    ferry__admin_config nodb = cfg;
    nodb.has_database = 0;
    nodb.schema = NULL;
    refresh_ok(g, &nodb, NULL);
    t = render(m);
    expect(t, "ferry_outbox_unpublished", 3);
    assert_false(has_series(t, "ferry_serve_source_up{source=\"outbox\"}"));
    assert_false(has_series(t, "ferry_serve_source_up{source=\"dead_letters\"}"));
    expect(t, "ferry_serve_source_up{source=\"redis\"}", 1);
    pm_promtool_check(t, "gauges_no_database");
    free(t);
    /* and back with a connection */
    refresh_ok(g, &cfg, db);
    t = render(m);
    expect(t, "ferry_outbox_unpublished", 0);
    expect(t, "ferry_outbox_oldest_unpublished_age_seconds", 0);
    expect(t, "ferry_serve_source_up{source=\"outbox\"}", 1);
    expect(t, "ferry_serve_source_up{source=\"dead_letters\"}", 1);
    free(t);

    ferry__admin_gauges_destroy(g);
    ferry__admin_gauges_destroy(NULL);
    ferry_metrics_destroy(m);
    ferry_queue_close(mail);
    ferry_queue_close(ship);
}

int main(void) {
    qt_conn = th_conn();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gauges),
    };
    int rc = cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
    ferry__conn_close(qt_conn);
    return rc;
}
