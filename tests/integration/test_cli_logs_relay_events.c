/* test_cli_logs_relay_events.c - ferry_relay_options.event, the typed relay events under
 * `ferry relay`'s log lines, through the library in this process against the fixture's
 * PostgreSQL and Redis:
 *  - a committed batch gives one PUBLISHED event with its counts and, per published row, the
 *    event id, topic, trace id (NULL for a row without one) and the number of jobs added;
 *  - a row too large is a QUARANTINED event with its id, topic, trace id and reason, an
 *    unrouted topic an UNKNOWN_TOPIC event with its row count; each with its line in
 *    ev->message;
 *  - with `event` set those lines do not also reach `log` (each is seen once), while the
 *    lines without an event ("started", "stopped") still do;
 *  - without `event` the same lines reach `log` as before. */
#include <pthread.h>
#include <stdint.h>

#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
OB_GROUP_FIXTURE(&db, &rds)

#define TRACEPARENT "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

/* What the callbacks saw (under mu): the log lines, and the events copied out. */
typedef struct seen {
    pthread_mutex_t mu;
    char log[16384];
    size_t len;
    char rows[8192]; /* "<kind> <id> <topic> <trace|-> <jobs>\n" per row of each event */
    size_t rlen;
    size_t published, jobs, quarantined, batches;
    long long unknown_rows;
    char reason[512];
    char bad[512]; /* the first event that broke a rule (checked on the test's thread) */
} seen;

/* Note a broken rule (callbacks run on the relay's thread: no cmocka assertion there). */
#define EXPECT(s, cond)                                                                            \
    do {                                                                                           \
        if (!(cond) && !(s)->bad[0])                                                               \
            snprintf((s)->bad, sizeof(s)->bad, "kind %d: %s", (int)ev->kind, #cond);               \
    } while (0)

static void on_log(int level, const char *message, void *ud) {
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    int n = snprintf(s->log + s->len, sizeof s->log - s->len, "%d %s\n", level, message);
    if (n > 0 && s->len + (size_t)n < sizeof s->log) s->len += (size_t)n;
    pthread_mutex_unlock(&s->mu);
}

static void on_event(const ferry_relay_event *ev, void *ud) {
    seen *s = ud;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < ev->nrows; i++) {
        const ferry_relay_event_row *r = &ev->rows[i];
        int n = snprintf(s->rows + s->rlen, sizeof s->rows - s->rlen, "%d %s %s %s %zu\n",
                         (int)ev->kind, r->id, r->topic, r->trace_id ? r->trace_id : "-", r->jobs);
        if (n > 0 && s->rlen + (size_t)n < sizeof s->rows) s->rlen += (size_t)n;
    }
    switch (ev->kind) {
    case FERRY_RELAY_EVENT_PUBLISHED:
        EXPECT(s, ev->message == NULL);
        EXPECT(s, ev->nrows == ev->published);
        s->published += ev->published;
        s->jobs += ev->jobs;
        s->quarantined += ev->quarantined;
        s->batches++;
        break;
    case FERRY_RELAY_EVENT_QUARANTINED:
        EXPECT(s, ev->level == FERRY_LOG_ERROR);
        EXPECT(s, ev->message && strstr(ev->message, "set aside (quarantined_at)"));
        snprintf(s->reason, sizeof s->reason, "%s", ev->reason);
        break;
    case FERRY_RELAY_EVENT_UNKNOWN_TOPIC:
        EXPECT(s, ev->level == FERRY_LOG_WARN);
        EXPECT(s, ev->topic && !strcmp(ev->topic, "ev.unrouted"));
        EXPECT(s, ev->message && strstr(ev->message, "which no route names"));
        s->unknown_rows += ev->count;
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&s->mu);
}

static void *run_thread(void *arg) {
    static ferry_error e;
    return (void *)(intptr_t)ferry_relay_run(arg, &e);
}

typedef struct until {
    seen *s;
    size_t published;
    const char *needle; /* in the log, or NULL */
} until;

static int reached(void *arg) {
    until *u = arg;
    pthread_mutex_lock(&u->s->mu);
    int ok = u->s->published >= u->published &&
             (!u->needle || strstr(u->s->log, u->needle) || strstr(u->s->rows, u->needle));
    pthread_mutex_unlock(&u->s->mu);
    return ok;
}

/* Run a relay over schema until `u` holds (fail after 20 s), then stop it. */
static void run_relay(const char *schema, int with_events, seen *s, until *u) {
    const char *routes = ob_file("ev.routes", "ev.placed evq1:a evq2:b\n");
    ferry_redis_options ropts = th_redis_options(0);
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.database_url = th_env_require("DATABASE_URL");
    o.schema = schema;
    o.routes_file = routes;
    o.redis = &ropts;
    o.prefix = th_prefix();
    o.retention_s = -1;
    o.max_envelope_bytes = 1024;
    o.log = on_log;
    o.event = with_events ? on_event : NULL;
    o.log_userdata = s;
    ferry_relay *relay = NULL;
    ferry_error e = {0};
    if (ferry_relay_create(&o, &relay, &e)) fail_msg("create: %s", e.message);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_thread, relay), 0);
    int ok = th_wait_until(reached, u, 20000);
    ferry_relay_stop(relay);
    void *rc = NULL;
    pthread_join(t, &rc);
    ferry_relay_free(relay);
    if (!ok) fail_msg("relay did not get there; log:\n%s\nrows:\n%s", s->log, s->rows);
    assert_int_equal((int)(intptr_t)rc, 0);
}

/* Rows: two routed (one with a traceparent, one without a trace id), one too large, one of
 * an unrouted topic. */
static void add_rows(const char *schema, char a[37], char b[37], char big[37]) {
    char stray[37], pad[3000];
    ob_append(db, schema, "ev.placed", "{\"n\":1}", TRACEPARENT, 1, a);
    ob_append(db, schema, "ev.placed", "{\"n\":2}", NULL, 1, b);
    snprintf(pad, sizeof pad, "{\"pad\":\"%02000d\"}", 0);
    ob_append(db, schema, "ev.placed", pad, "big-trace", 1, big);
    ob_append(db, schema, "ev.unrouted", "{}", NULL, 1, stray);
}

static void test_events_with_rows_and_trace_ids(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char a[37], b[37], big[37];
    add_rows(schema, a, b, big);
    static seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    until u = {&s, 2, big}; /* the set-aside row appears only in its QUARANTINED event */
    run_relay(schema, 1, &s, &u);
    if (s.bad[0]) fail_msg("%s", s.bad);
    char want[256];
    snprintf(want, sizeof want, "%d %s ev.placed %s 2\n", FERRY_RELAY_EVENT_PUBLISHED, a,
             TRACEPARENT);
    if (!strstr(s.rows, want)) fail_msg("no row '%s' in:\n%s", want, s.rows);
    snprintf(want, sizeof want, "%d %s ev.placed - 2\n", FERRY_RELAY_EVENT_PUBLISHED, b);
    if (!strstr(s.rows, want)) fail_msg("no row '%s' in:\n%s", want, s.rows);
    snprintf(want, sizeof want, "%d %s ev.placed big-trace 0\n", FERRY_RELAY_EVENT_QUARANTINED,
             big);
    if (!strstr(s.rows, want)) fail_msg("no row '%s' in:\n%s", want, s.rows);
    assert_int_equal(s.published, 2);
    assert_int_equal(s.jobs, 4);
    assert_int_equal(s.quarantined, 1);
    assert_int_equal(s.unknown_rows, 1);
    assert_non_null(strstr(s.reason, "over the relay's limit of 1024"));
    /* each event seen once: not also as a log line; the other lines still are */
    if (strstr(s.log, "set aside") || strstr(s.log, "which no route names"))
        fail_msg("an event's line also reached log:\n%s", s.log);
    if (!strstr(s.log, "relay: started") || !strstr(s.log, "relay: stopped"))
        fail_msg("the lines without events are missing:\n%s", s.log);
}

static void test_without_event_lines_go_to_log(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char a[37], b[37], big[37];
    add_rows(schema, a, b, big);
    static seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
    char needle[128];
    snprintf(needle, sizeof needle, "relay: event %s set aside (quarantined_at)", big);
    until u = {&s, 0, needle};
    run_relay(schema, 0, &s, &u);
    if (s.bad[0]) fail_msg("%s", s.bad);
    char want[160];
    snprintf(want, sizeof want, "%d %s", FERRY_LOG_ERROR, needle);
    if (!strstr(s.log, want)) fail_msg("no '%s' in:\n%s", want, s.log);
    snprintf(want, sizeof want, "%d relay: 1 unpublished row(s) with topic 'ev.unrouted'",
             FERRY_LOG_WARN);
    if (!strstr(s.log, want)) fail_msg("no '%s' in:\n%s", want, s.log);
    assert_int_equal(s.rlen, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_with_rows_and_trace_ids),
        cmocka_unit_test(test_without_event_lines_go_to_log),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
