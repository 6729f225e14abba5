/* test_cli_logs_json.c - `--log-format json` of `ferry worker` and `ferry relay`, against the
 * fixture's Redis and PostgreSQL and the real binary:
 *  - every line either writes (but the job commands' own "[job ID]" stderr) is one JSON
 *    object whose first member is "time", with "level", "event" and "msg"; a queue name
 *    with a quote, a backslash and UTF-8 comes back intact from the JSON;
 *  - the worker's events: worker.start, one worker.job line per outcome (completed, permanent,
 *    failed, with their levels), worker.max_jobs, worker.stop;
 *  - the relay's events: relay.start, relay.batch with its counts, relay.event per published
 *    event with its trace members (--log-events), relay.quarantined (with the row's trace
 *    id), relay.unknown_topic, relay.signal, relay.exit;
 *  - end to end: an event appended with a W3C traceparent shows the same trace_id and
 *    span_id in the relay's relay.event line and in the worker's job line for its job;
 *  - text stays text (the batch and event lines), and a bad --log-format is a usage error. */
#include <jansson.h>

#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
OB_GROUP_FIXTURE(&db, &rds)

/* This test's key prefix (th_prefix gives a new one per call): set by each test. */
static char prefix[64];

static void new_prefix(void) {
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
}

#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#define TRACE_HEX "4bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN_HEX "00f067aa0ba902b7"

/* ---- reading JSON logs ------------------------------------------------------------------ */

/* Every line of `log` as a JSON array of objects; fails on a line that is not an object
 * led by "time", with string "level" (debug/info/warn/error), "event" and "msg". Lines a
 * job command wrote itself ("[job ...") are skipped. */
static json_t *json_log(const char *log) {
    json_t *all = json_array();
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len && strncmp(p, "[job ", 5)) {
            json_error_t je;
            json_t *o = json_loadb(p, len, 0, &je);
            if (!o || !json_is_object(o))
                fail_msg("not a JSON object (%s): %.*s\nlog:\n%s", je.text, (int)len, p, log);
            const char *first = json_object_iter_key(json_object_iter(o));
            const char *lvl = json_string_value(json_object_get(o, "level"));
            if (!first || strcmp(first, "time") || !json_string_value(json_object_get(o, "time")))
                fail_msg("no leading time member: %.*s", (int)len, p);
            if (!lvl || (strcmp(lvl, "debug") && strcmp(lvl, "info") && strcmp(lvl, "warn") &&
                         strcmp(lvl, "error")))
                fail_msg("bad level: %.*s", (int)len, p);
            if (!json_string_value(json_object_get(o, "event")) ||
                !json_string_value(json_object_get(o, "msg")))
                fail_msg("no event or msg: %.*s", (int)len, p);
            json_array_append_new(all, o);
        }
        p += len + (nl ? 1 : 0);
    }
    return all;
}

/* The first line of `event` whose string member key equals val (key NULL: any). */
static json_t *find_event(json_t *all, const char *event, const char *key, const char *val) {
    size_t i;
    json_t *o;
    json_array_foreach(all, i, o) {
        if (strcmp(json_string_value(json_object_get(o, "event")), event)) continue;
        if (!key) return o;
        const char *v = json_string_value(json_object_get(o, key));
        if (v && !strcmp(v, val)) return o;
    }
    return NULL;
}

static json_t *must_find(json_t *all, const char *event, const char *key, const char *val,
                         const char *log) {
    json_t *o = find_event(all, event, key, val);
    if (!o) fail_msg("no %s line with %s=%s in:\n%s", event, key ? key : "-", val ? val : "-", log);
    return o;
}

static const char *str(json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    if (!v) fail_msg("member %s missing or not a string", key);
    return v;
}

static long long num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("member %s missing or not an integer", key);
    return json_integer_value(v);
}

/* Run the worker on q until it has run max_jobs jobs; returns its stderr (caller frees). */
static char *run_worker(const char *q, const char *max_jobs, const char *format) {
    char errp[160];
    pid_t pid = cli_worker_start(
        prefix, q, CLI_ARGV("--log-format", format, "--max-jobs", max_jobs, "--no-dead-letters"),
        errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    return log;
}

/* ---- worker ----------------------------------------------------------------------------- */

static void test_worker_every_line_json(void **state) {
    (void)state;
    new_prefix();
    /* a quote, a backslash and a non-ASCII character in the name (control characters are
     * refused in queue names) */
    const char *p = prefix, *q = "lj\"q\\x\xc3\xa9";
    char ok[64], perm[64], fail[64], later[64], upper[64];
    cli_add_job(p, q, "text", "{\"traceId\":\"opaque-trace-7\"}", "{}", ok, sizeof ok);
    cli_add_job(p, q, "permanent", "{}", "{\"attempts\":3}", perm, sizeof perm);
    cli_add_job(p, q, "transient", "{}", "{\"attempts\":1}", fail, sizeof fail);
    /* a later traceparent version may carry more after its flags; upper-case hex is not a
     * traceparent (the id is shown whole, as an opaque one) */
    cli_add_job(p, q, "text", "{\"traceId\":\"01-" TRACE_HEX "-" SPAN_HEX "-00-more\"}", "{}",
                later, sizeof later);
    cli_add_job(p, q, "text",
                "{\"traceId\":\"00-4BF92F3577B34DA6A3CE929D0E0E4736-" SPAN_HEX "-01\"}", "{}",
                upper, sizeof upper);
    char *log = run_worker(q, "5", "json");
    json_t *all = json_log(log);

    json_t *t = must_find(all, "worker.job", "id", later, log);
    assert_string_equal(str(t, "trace_id"), TRACE_HEX);
    assert_string_equal(str(t, "span_id"), SPAN_HEX);
    assert_string_equal(str(t, "trace_flags"), "00");
    t = must_find(all, "worker.job", "id", upper, log);
    assert_string_equal(str(t, "trace_id"), str(t, "trace"));
    assert_null(json_object_get(t, "span_id"));

    json_t *start = must_find(all, "worker.start", "queue", q, log);
    assert_string_equal(str(start, "level"), "info");
    assert_string_equal(str(start, "prefix"), p);
    assert_int_equal(num(start, "concurrency"), 1);

    json_t *j = must_find(all, "worker.job", "id", ok, log);
    assert_string_equal(str(j, "queue"), q);
    assert_string_equal(str(j, "job"), "text");
    assert_string_equal(str(j, "outcome"), "completed");
    assert_string_equal(str(j, "level"), "info");
    assert_string_equal(str(j, "trace"), "opaque-trace-7");
    assert_string_equal(str(j, "trace_id"), "opaque-trace-7"); /* not a traceparent: as is */
    assert_null(json_object_get(j, "span_id"));
    assert_string_equal(str(j, "status"), "exit:0");
    assert_int_equal(num(j, "attempt"), 1);
    assert_true(json_is_null(json_object_get(j, "reason")));

    j = must_find(all, "worker.job", "id", perm, log);
    assert_string_equal(str(j, "outcome"), "permanent");
    assert_string_equal(str(j, "level"), "error");
    assert_string_equal(str(j, "reason"), "bad input");
    char fallback[128];
    snprintf(fallback, sizeof fallback, "job-%s-%s", q, perm); /* no traceId in the data */
    assert_string_equal(str(j, "trace_id"), fallback);

    j = must_find(all, "worker.job", "id", fail, log);
    assert_string_equal(str(j, "outcome"), "failed");
    assert_string_equal(str(j, "level"), "error");
    assert_string_equal(str(j, "reason"), "still down");

    assert_int_equal(num(must_find(all, "worker.max_jobs", NULL, NULL, log), "runs"), 5);
    json_t *stop = must_find(all, "worker.stop", "queue", q, log);
    assert_int_equal(num(stop, "handed_back"), 0);
    json_decref(all);
    free(log);
}

/* ---- relay ------------------------------------------------------------------------------ */

static int has_batch_line(void *path) {
    return th_file_contains(path, "\"event\":\"relay.batch\"") ||
           th_file_contains(path, "ferry relay: batch: ");
}

/* Run a relay on schema with the routes and extra args until `published` rows of schema
 * are published and `quarantined` set aside; returns its log (caller frees). */
static char *run_relay(const char *schema, const char *routes, const char *const *args,
                       long long published, long long quarantined) {
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes, args, NULL);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema);
    long long last = 0;
    if (!ob_wait_count(db, sql, published, 1, 30000, &last))
        OB_FAIL_LOG(&rl, "published %lld of %lld rows", last, published);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE quarantined_at IS NOT NULL", schema);
    if (!ob_wait_count(db, sql, quarantined, 1, 30000, &last))
        OB_FAIL_LOG(&rl, "quarantined %lld of %lld rows", last, quarantined);
    /* the line of the batch comes after its COMMIT: wait for it too (either format) */
    if (published && !th_wait_until(has_batch_line, rl.log, 20000))
        OB_FAIL_LOG(&rl, "no batch line");
    ob_relay_stop(&rl);
    return th_slurp(rl.log);
}

static void test_relay_every_line_json(void **state) {
    (void)state;
    new_prefix();
    const char *schema = ob_schema(db);
    const char *routes = ob_file("lj.routes", "lj.placed ljpay:capture ljmail:confirm\n");
    char a[37], b[37], big[37], stray[37];
    ob_append(db, schema, "lj.placed", "{\"n\":1}", TRACEPARENT, 1, a);
    ob_append(db, schema, "lj.placed", "{\"n\":2}", "opaque-trace-9", 1, b);
    char payload[3000];
    snprintf(payload, sizeof payload, "{\"pad\":\"%02000d\"}", 0); /* over --max-envelope */
    ob_append(db, schema, "lj.placed", payload, "big-trace-3", 1, big);
    ob_append(db, schema, "lj.unrouted", "{}", NULL, 1, stray);
    /* a topic an application wrote with SQL: a newline, a quote, an ESC */
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload) VALUES "
                   "(gen_random_uuid(), E'lj.bad\\nline\"q\\x1b[2J', gen_random_uuid(), '{}')",
                   schema));
    char *log =
        run_relay(schema, routes,
                  CLI_ARGV("--log-format", "json", "--log-events", "--max-envelope", "1024"), 2, 1);
    json_t *all = json_log(log);

    json_t *start = must_find(all, "relay.start", NULL, NULL, log);
    assert_string_equal(str(start, "schema"), schema);
    assert_string_equal(str(start, "prefix"), prefix);

    long long published = 0, jobs = 0, set_aside = 0;
    size_t i;
    json_t *o;
    json_array_foreach(all, i, o) {
        if (strcmp(str(o, "event"), "relay.batch")) continue;
        published += num(o, "published");
        jobs += num(o, "jobs");
        set_aside += num(o, "quarantined");
        assert_true(num(o, "duration_ms") >= 0);
    }
    assert_int_equal(published, 2);
    assert_int_equal(jobs, 4); /* two targets each */
    assert_int_equal(set_aside, 1);

    json_t *ev = must_find(all, "relay.event", "id", a, log);
    assert_string_equal(str(ev, "topic"), "lj.placed");
    assert_string_equal(str(ev, "trace"), TRACEPARENT);
    assert_string_equal(str(ev, "trace_id"), TRACE_HEX);
    assert_string_equal(str(ev, "span_id"), SPAN_HEX);
    assert_string_equal(str(ev, "trace_flags"), "01");
    assert_int_equal(num(ev, "jobs"), 2);
    ev = must_find(all, "relay.event", "id", b, log);
    assert_string_equal(str(ev, "trace_id"), "opaque-trace-9");
    assert_null(json_object_get(ev, "span_id"));
    assert_null(find_event(all, "relay.event", "id", big)); /* set aside: not published */

    json_t *qr = must_find(all, "relay.quarantined", "id", big, log);
    assert_string_equal(str(qr, "level"), "error");
    assert_string_equal(str(qr, "trace_id"), "big-trace-3");
    assert_string_equal(str(qr, "topic"), "lj.placed");
    assert_non_null(strstr(str(qr, "reason"), "over the relay's limit of 1024"));

    json_t *un = must_find(all, "relay.unknown_topic", "topic", "lj.unrouted", log);
    assert_string_equal(str(un, "level"), "warn");
    assert_int_equal(num(un, "rows"), 1);
    un = must_find(all, "relay.unknown_topic", "topic", "lj.bad\nline\"q\x1b[2J", log);
    assert_int_equal(num(un, "rows"), 1);
    /* the msg shows it escaped as the text line does, on one line */
    assert_non_null(strstr(str(un, "msg"), "lj.bad\\nline\"q\\x1b[2J"));

    json_t *sig = must_find(all, "relay.signal", NULL, NULL, log);
    assert_string_equal(str(sig, "signal"), "SIGTERM");
    json_t *ex = must_find(all, "relay.exit", NULL, NULL, log);
    assert_int_equal(num(ex, "published"), 2);
    assert_int_equal(num(ex, "quarantined"), 1);
    /* the library's free text lines are events too */
    must_find(all, "relay.log", "msg", "stopped", log);
    json_decref(all);
    free(log);
}

/* ---- end to end ------------------------------------------------------------------------- */

static void test_trace_from_outbox_to_job_line(void **state) {
    (void)state;
    new_prefix();
    const char *schema = ob_schema(db);
    const char *routes = ob_file("e2e.routes", "lj.e2e lje2e:text\n");
    char id[37];
    ob_append(db, schema, "lj.e2e", "{\"order\":7}", TRACEPARENT, 1, id);
    char *rlog = run_relay(schema, routes, CLI_ARGV("--log-format", "json", "--log-events"), 1, 0);
    json_t *rall = json_log(rlog);
    json_t *ev = must_find(rall, "relay.event", "id", id, rlog);

    char *wlog = run_worker("lje2e", "1", "json");
    json_t *wall = json_log(wlog);
    json_t *job = must_find(wall, "worker.job", "id", id, wlog); /* jobId = event id */
    assert_string_equal(str(job, "outcome"), "completed");
    assert_string_equal(str(job, "trace_id"), TRACE_HEX);
    assert_string_equal(str(job, "trace_id"), str(ev, "trace_id"));
    assert_string_equal(str(job, "span_id"), str(ev, "span_id"));
    assert_string_equal(str(job, "trace"), str(ev, "trace"));
    json_decref(rall);
    json_decref(wall);
    free(rlog);
    free(wlog);
}

/* ---- text and usage --------------------------------------------------------------------- */

static void test_text_lines_and_bad_format(void **state) {
    (void)state;
    new_prefix();
    const char *schema = ob_schema(db);
    const char *routes = ob_file("txt.routes", "lj.txt ljtxt:text\n");
    char id[37];
    ob_append(db, schema, "lj.txt", "{}", "opaque-text-1", 1, id);
    char *log = run_relay(schema, routes, CLI_ARGV("--log-events"), 1, 0);
    if (!strstr(log, "ferry relay: batch: 1 row(s) published, 1 job(s) added, 0 set aside ("))
        fail_msg("no text batch line:\n%s", log);
    char want[200];
    snprintf(want, sizeof want,
             "ferry relay: event %s published: topic=lj.txt trace=opaque-text-1 jobs=1", id);
    if (!strstr(log, want)) fail_msg("no text event line (%s):\n%s", want, log);
    if (strchr(log, '{')) fail_msg("a JSON line in text mode:\n%s", log);
    free(log);

    cli_run r;
    CLI(r, "relay", "--routes", routes, "--log-format", "xml", "--database",
        th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, "--log-format: expected text or json, got 'xml'")) fail_msg("%s", r.err);
    cli_run_free(&r);
    CLI(r, "worker", "q", "--log-format", "xml", "--redis", cli_url(), "--", "/bin/true");
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, "--log-format: expected text, json or none, got 'xml'"))
        fail_msg("%s", r.err);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_every_line_json),
        cmocka_unit_test(test_relay_every_line_json),
        cmocka_unit_test(test_trace_from_outbox_to_job_line),
        cmocka_unit_test(test_text_lines_and_bad_format),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
