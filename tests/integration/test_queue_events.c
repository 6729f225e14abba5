/* test_queue_events.c - a queue's events stream against a real Redis: ferry_queue_events_read
 * (newest N, after an id, blocking with a bound, bad arguments) over the events ferry's own
 * operations write (adds, a `ferry worker` completing and failing jobs), and `ferry queue
 * events` on top (text, --json, --from, --count, --follow until SIGTERM, exit 2 for usage
 * errors). tests/interop/queue_events.test.js compares it with Node's QueueEvents. Then
 * ferry_queue_find_jobs and `ferry job find` (the bounded scan) over known jobs. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/qt.h"

/* Events as "event:k=v:k=v|..." (the shape of qt_events, so both can be compared). */
static const char *ev_join(const ferry_queue_event *ev, size_t n) {
    static char buf[65536];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", i ? "|" : "", ev[i].event);
        for (size_t j = 0; j < ev[i].nfields; j++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, ":%s=%s", ev[i].names[j],
                                    ev[i].values[j]);
    }
    return buf;
}

static void test_events_read(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "ev1", NULL);
    ferry_error e = {0};
    ferry_queue_event *ev = NULL;
    size_t n = 9;
    char last[FERRY_QUEUE_EVENT_ID_MAX];

    /* no stream yet: none, and a loop would start from the oldest */
    assert_int_equal(ferry_queue_events_read(q, NULL, 100, 0, &ev, &n, last, &e), 0);
    assert_null(ev);
    assert_int_equal(n, 0);
    assert_string_equal(last, "0");

    qt_add_expect(q, "a", "{\"x\":1}", NULL, "1");
    qt_add_expect(q, "b", NULL, "{\"delay\":60000}", "2");
    qt_add_expect(q, "c", NULL, "{\"priority\":3}", "3");

    assert_int_equal(ferry_queue_events_read(q, NULL, 100, 0, &ev, &n, last, &e), 0);
    assert_int_equal(n, 6);
    assert_string_equal(ev_join(ev, n), qt_events(q));
    assert_string_equal(ev[0].event, "added");
    assert_string_equal(ev[0].names[0], "jobId");
    assert_string_equal(ev[0].values[0], "1");
    assert_string_equal(ev[0].names[1], "name");
    assert_string_equal(ev[0].values[1], "a");
    assert_string_equal(ev[3].event, "delayed");
    assert_string_equal(ev[3].names[1], "delay");
    assert_string_equal(last, ev[5].id);
    char second[FERRY_QUEUE_EVENT_ID_MAX];
    snprintf(second, sizeof second, "%s", ev[1].id);
    ferry_queue_events_free(ev, n);

    /* the newest 2, oldest first */
    assert_int_equal(ferry_queue_events_read(q, NULL, 2, 0, &ev, &n, NULL, &e), 0);
    assert_string_equal(ev_join(ev, n), "added:jobId=3:name=c|waiting:jobId=3");
    ferry_queue_events_free(ev, n);
    /* after an id (exclusive), at most count; from "0" the oldest */
    assert_int_equal(ferry_queue_events_read(q, second, 2, 0, &ev, &n, last, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ev[0].event, "added");
    assert_string_equal(ev[0].values[0], "2");
    assert_string_equal(ev[1].event, "delayed");
    assert_string_equal(last, ev[1].id);
    ferry_queue_events_free(ev, n);
    assert_int_equal(ferry_queue_events_read(q, "0", 1, 0, &ev, &n, last, &e), 0);
    assert_string_equal(ev_join(ev, n), "added:jobId=1:name=a");
    ferry_queue_events_free(ev, n);
    /* passing last_id back as from_id (the same buffer) walks on */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ferry_queue_events_read(q, last, 1, 0, &ev, &n, last, &e), 0);
        assert_int_equal(n, 1);
        ferry_queue_events_free(ev, n);
    }
    char end[FERRY_QUEUE_EVENT_ID_MAX];
    snprintf(end, sizeof end, "%s", last);
    assert_int_equal(ferry_queue_events_read(q, last, 10, 0, &ev, &n, last, &e), 0);
    assert_int_equal(n, 0);
    assert_string_equal(last, end);

    /* blocking: nothing new comes within the bound */
    long long t0 = th_mono_ms();
    assert_int_equal(ferry_queue_events_read(q, "$", 10, 300, &ev, &n, last, &e), 0);
    long long took = th_mono_ms() - t0;
    assert_int_equal(n, 0);
    assert_string_equal(last, "$");
    assert_true(took >= 250 && took < 5000);

    /* bad arguments, each named */
    assert_int_equal(ferry_queue_events_read(q, "12-x", 10, 0, &ev, &n, last, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "bad stream id '12-x'"));
    assert_int_equal(ferry_queue_events_read(q, "-1", 10, 0, &ev, &n, last, &e), FERRY_EINVAL);
    /* each part is a 64-bit number: one past 2^64 - 1 is refused before Redis sees it */
    assert_int_equal(ferry_queue_events_read(q, "18446744073709551616-0", 10, 0, &ev, &n, last, &e),
                     FERRY_EINVAL);
    assert_int_equal(ferry_queue_events_read(q, "1-99999999999999999999", 10, 0, &ev, &n, last, &e),
                     FERRY_EINVAL);
    assert_int_equal(ferry_queue_events_read(q, "1-", 10, 0, &ev, &n, last, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_events_read(q, "18446744073709551615-18446744073709551615", 10, 0,
                                             &ev, &n, last, &e),
                     0);
    ferry_queue_events_free(ev, n);
    assert_int_equal(ferry_queue_events_read(q, "", 10, 0, &ev, &n, last, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_events_read(q, NULL, 0, 0, &ev, &n, last, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "count 0 out of range"));
    assert_int_equal(
        ferry_queue_events_read(q, NULL, FERRY_QUEUE_EVENTS_MAX + 1, 0, &ev, &n, last, &e),
        FERRY_EINVAL);
    assert_int_equal(
        ferry_queue_events_read(q, "0", 1, FERRY_QUEUE_EVENTS_BLOCK_MAX + 1, &ev, &n, last, &e),
        FERRY_EINVAL);
    assert_non_null(strstr(e.message, "block 60001 ms out of range"));
    assert_int_equal(ferry_queue_events_read(q, "0", 1, -1, &ev, &n, last, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_events_read(q, "0", 1, 0, NULL, &n, last, &e), FERRY_EINVAL);
    ferry_queue_events_free(NULL, 0);

    /* an entry without an event field, and a foreign "id" field, are given as stored */
    freeReplyObject(qt_cmd("XADD %s * jobId 77 id x", qt_key(q, "events")));
    assert_int_equal(ferry_queue_events_read(q, NULL, 1, 0, &ev, &n, NULL, &e), 0);
    assert_string_equal(ev_join(ev, n), ":jobId=77:id=x");
    ferry_queue_events_free(ev, n);
    /* a key of another type is Redis' error, named */
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "events")));
    freeReplyObject(qt_cmd("SET %s x", qt_key(q, "events")));
    assert_int_equal(ferry_queue_events_read(q, NULL, 1, 0, &ev, &n, NULL, &e), FERRY_EREDIS);
    assert_non_null(strstr(e.message, "XREVRANGE"));
    freeReplyObject(qt_cmd("DEL %s", qt_key(q, "events")));
    ferry_queue_close(q);
}

/* The event of `name` for job `id` (the first one), or NULL. */
static const ferry_queue_event *find_event(const ferry_queue_event *ev, size_t n, const char *name,
                                           const char *id) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ev[i].event, name) && ev[i].nfields && !strcmp(ev[i].names[0], "jobId") &&
            !strcmp(ev[i].values[0], id))
            return &ev[i];
    return NULL;
}

static const char *field(const ferry_queue_event *ev, const char *name) {
    for (size_t j = 0; j < ev->nfields; j++)
        if (!strcmp(ev->names[j], name)) return ev->values[j];
    return NULL;
}

static void test_events_of_a_worker(void **state) {
    (void)state;
    const char *p = th_prefix(), *qn = "evw";
    char ok[64], bad[64];
    cli_add_job(p, qn, "echo", "{\"n\":1}", "{}", ok, sizeof ok);
    cli_add_job(p, qn, "permanent", "{\"n\":2}", "{}", bad, sizeof bad);
    char errp[256];
    pid_t pid = cli_worker_start(p, qn, NULL, errp, sizeof errp);
    cli_finished_arg fa = {p, qn, 2};
    if (!th_wait_until(cli_all_finished, &fa, 30000)) fail_msg("jobs did not finish");
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait(pid, 20000), 0);

    ferry_queue *q = qt_open(p, qn, NULL);
    ferry_error e = {0};
    ferry_queue_event *ev = NULL;
    size_t n = 0;
    assert_int_equal(ferry_queue_events_read(q, "0", 1000, 0, &ev, &n, NULL, &e), 0);
    assert_string_equal(ev_join(ev, n), qt_events(q));
    assert_non_null(find_event(ev, n, "added", ok));
    assert_non_null(find_event(ev, n, "added", bad));
    const ferry_queue_event *a = find_event(ev, n, "active", ok);
    assert_non_null(a);
    assert_string_equal(field(a, "prev"), "waiting");
    const ferry_queue_event *c = find_event(ev, n, "completed", ok);
    assert_non_null(c);
    assert_string_equal(field(c, "prev"), "active");
    json_t *rv = json_loads(field(c, "returnvalue"), JSON_DECODE_ANY, NULL);
    assert_non_null(rv); /* JSON text, as QueueEvents parses it */
    assert_string_equal(json_string_value(json_object_get(rv, "name")), "echo");
    json_decref(rv);
    const ferry_queue_event *f = find_event(ev, n, "failed", bad);
    assert_non_null(f);
    assert_string_equal(field(f, "failedReason"), "bad input");
    assert_string_equal(field(f, "prev"), "active");
    assert_non_null(find_event(ev, n, "retries-exhausted", bad));
    assert_null(find_event(ev, n, "failed", ok));
    /* the completion comes after its active event */
    assert_true(strcmp(a->id, c->id) < 0 || strlen(a->id) < strlen(c->id));
    ferry_queue_events_free(ev, n);
    ferry_queue_close(q);
}

static int file_has(void *arg) {
    const char *const *a = arg; /* {path, needle} */
    char *s = th_slurp(a[0]);
    int found = s && strstr(s, a[1]) != NULL;
    free(s);
    return found;
}

static void test_cli_events(void **state) {
    (void)state;
    const char *p = th_prefix(), *qn = "evcli", *url = cli_url();
    char id[64];
    cli_add_job(p, qn, "a", "{}", "{}", id, sizeof id);
    assert_string_equal(id, "1");
    cli_add_job(p, qn, "b", "{}", "{\"delay\":5000}", id, sizeof id);
    cli_run r;

    CLI(r, "queue", "events", qn, "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 4);
    assert_non_null(strstr(r.out, " added jobId=1 name=a\n"));
    assert_non_null(strstr(r.out, " waiting jobId=1\n"));
    assert_non_null(strstr(r.out, " added jobId=2 name=b\n"));
    assert_non_null(strstr(r.out, " delayed jobId=2 delay="));
    assert_true(strstr(r.out, "jobId=1 name=a") < strstr(r.out, "jobId=2 name=b"));
    cli_run_free(&r);

    CLI(r, "queue", "events", qn, "--json", "--count", "1", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 1);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "event")), "delayed");
    assert_string_equal(json_string_value(json_object_get(j, "jobId")), "2");
    assert_non_null(json_string_value(json_object_get(j, "delay")));
    assert_non_null(strchr(json_string_value(json_object_get(j, "id")), '-'));
    json_decref(j);
    cli_run_free(&r);

    CLI(r, "queue", "events", qn, "--json", "--from", "0", "--count", "2", "--redis", url,
        "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 2);
    assert_non_null(strstr(r.out, "\"event\":\"added\",\"jobId\":\"1\",\"name\":\"a\"}\n"));
    assert_non_null(strstr(r.out, "\"event\":\"waiting\",\"jobId\":\"1\"}\n"));
    cli_run_free(&r);

    /* a queue without events prints nothing */
    CLI(r, "queue", "events", "evnone", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);

    /* usage errors: exit 2, the problem named */
    CLI(r, "queue", "events", qn, "--from", "abc", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "bad stream id 'abc'"));
    cli_run_free(&r);
    CLI(r, "queue", "events", qn, "--count", "0", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--count"));
    cli_run_free(&r);
    CLI(r, "queue", "events", qn, "--count", "x", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "events", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "events", qn, "extra", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "queue", "events", qn, "--bogus", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);

    /* --follow: the events there, then one added after it started; SIGTERM = exit 0 */
    char out[160], err[160];
    snprintf(out, sizeof out, "%s/follow.out", th_tmpdir());
    snprintf(err, sizeof err, "%s/follow.err", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("queue", "events", qn, "--follow", "--json", "--count", "1",
                                   "--redis", url, "--prefix", p),
                          NULL, NULL, out, err);
    const char *first[] = {out, "\"event\":\"delayed\""};
    if (!th_wait_until(file_has, (void *)first, 20000)) fail_msg("follow printed nothing");
    cli_add_job(p, qn, "late", "{}", "{}", id, sizeof id);
    assert_string_equal(id, "3");
    const char *later[] = {out, "\"event\":\"waiting\",\"jobId\":\"3\""};
    if (!th_wait_until(file_has, (void *)later, 20000)) {
        char *got = th_slurp(out);
        fail_msg("follow did not show the new job: %s", got);
    }
    long long t0 = th_mono_ms();
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait(pid, 10000), 0);
    assert_true(th_mono_ms() - t0 < 5000); /* one bounded block at most */
    char *got = th_slurp(out);
    assert_int_equal(cli_lines(got), 3);
    assert_non_null(strstr(got, "\"event\":\"added\",\"jobId\":\"3\",\"name\":\"late\"}\n"));
    free(got);
    char *errs = th_slurp(err);
    assert_string_equal(errs, "");
    free(errs);

    /* --follow with SIGINT, from "$" (only new ones): nothing, exit 0 */
    pid = cli_start(
        CLI_ARGV("queue", "events", qn, "--follow", "--from", "$", "--redis", url, "--prefix", p),
        NULL, NULL, out, err);
    usleep(300 * 1000);
    kill(pid, SIGINT);
    assert_int_equal(cli_wait(pid, 10000), 0);
    got = th_slurp(out);
    assert_string_equal(got, "");
    free(got);
}

/* ---- ferry_queue_find_jobs / ferry job find ------------------------------------------- */

/* 2500 jobs in wait (ids w0..w2499, name "n<i%5>", data {"k":i}), 30 failed (f0..f29, name
 * "needle"), one id in wait whose hash is gone. */
static void put_find_data(ferry_queue *q) {
    for (int i = 0; i < 2500; i++) {
        char id[32];
        snprintf(id, sizeof id, "w%d", i);
        freeReplyObject(qt_cmd("HSET %s name n%d data {\"k\":%d} timestamp 1700000000000",
                               qt_key(q, id), i % 5, i));
        freeReplyObject(qt_cmd("LPUSH %s %s", qt_key(q, "wait"), id));
    }
    freeReplyObject(qt_cmd("LPUSH %s gone", qt_key(q, "wait")));
    for (int i = 0; i < 30; i++) {
        char id[32];
        snprintf(id, sizeof id, "f%d", i);
        freeReplyObject(qt_cmd("HSET %s name needle data {\"k\":\"x%d\"}", qt_key(q, id), i));
        freeReplyObject(qt_cmd("ZADD %s %d %s", qt_key(q, "failed"), 1000 + i, id));
    }
}

typedef struct progress_log {
    int calls;
    long long last_scanned, last_matched;
    char states[512];
} progress_log;

static void on_progress(void *ctx, const char *state, long long scanned, long long matched) {
    progress_log *p = ctx;
    p->calls++;
    p->last_scanned = scanned;
    p->last_matched = matched;
    size_t len = strlen(p->states);
    snprintf(p->states + len, sizeof p->states - len, "%s%s", len ? "," : "", state);
}

static void test_find_jobs(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "find1", NULL);
    put_find_data(q);
    ferry_error e = {0};
    ferry_queue_found_job *jobs = NULL;
    size_t n = 0;
    int complete = -1;

    /* by name over every state: only the failed ones */
    progress_log pl = {0};
    ferry_queue_find_options o = {.name = "needle", .progress = on_progress, .progress_ctx = &pl};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 30);
    assert_int_equal(complete, 1);
    assert_string_equal(jobs[0].id, "f29"); /* newest first, as job list */
    assert_string_equal(jobs[0].name, "needle");
    assert_string_equal(jobs[0].state, "failed");
    assert_int_equal(pl.last_scanned, 2531); /* the gone id too: it was looked at */
    assert_int_equal(pl.last_matched, 30);
    assert_string_equal(pl.states, "wait,wait,wait,prioritized,delayed,active,waiting-children,"
                                   "paused,failed,completed");
    ferry_queue_found_jobs_free(jobs, n);

    /* by data text, in one state */
    o = (ferry_queue_find_options){.state = "waiting", .data_contains = "\"k\":123"};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 11); /* 123, 1230..1239 */
    assert_int_equal(complete, 1);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(jobs[i].state, "wait");
        assert_non_null(strstr(jobs[i].id, "w123"));
    }
    ferry_queue_found_jobs_free(jobs, n);
    /* both conditions */
    o = (ferry_queue_find_options){.name = "n3", .data_contains = "\"k\":123"};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 3); /* 123, 1233, 1238 */
    ferry_queue_found_jobs_free(jobs, n);

    /* the scan bound: stops, says it did not see everything */
    pl = (progress_log){0};
    o = (ferry_queue_find_options){
        .name = "needle", .scan_max = 1500, .progress = on_progress, .progress_ctx = &pl};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 0);
    assert_null(jobs);
    assert_int_equal(complete, 0);
    assert_int_equal(pl.calls, 2);
    assert_int_equal(pl.last_scanned, 1500);
    /* the match limit */
    o = (ferry_queue_find_options){.state = "failed", .limit = 4};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 4);
    assert_int_equal(complete, 0);
    ferry_queue_found_jobs_free(jobs, n);
    /* everything (a zeroed struct, or NULL) */
    assert_int_equal(ferry_queue_find_jobs(q, NULL, &jobs, &n, &complete, &e), 0);
    assert_int_equal(n, 2530);
    assert_int_equal(complete, 1);
    ferry_queue_found_jobs_free(jobs, n);

    /* refusals, named */
    o = (ferry_queue_find_options){.state = "nope"};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "unknown state 'nope'"));
    o = (ferry_queue_find_options){.limit = -1};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), FERRY_EINVAL);
    o = (ferry_queue_find_options){.scan_max = FERRY_QUEUE_FIND_SCAN_MAX + 1};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "scan max"));
    char big[FERRY_QUEUE_FIND_DATA_TEXT_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    o = (ferry_queue_find_options){.data_contains = big};
    assert_int_equal(ferry_queue_find_jobs(q, &o, &jobs, &n, &complete, &e), FERRY_EINVAL);
    assert_int_equal(ferry_queue_find_jobs(q, NULL, NULL, &n, &complete, &e), FERRY_EINVAL);
    ferry_queue_found_jobs_free(NULL, 0);
    ferry_queue_close(q);
}

static void test_cli_find(void **state) {
    (void)state;
    const char *p = th_prefix(), *url = cli_url();
    ferry_queue *q = qt_open(p, "find2", NULL);
    put_find_data(q);
    ferry_queue_close(q);
    cli_run r;

    CLI(r, "job", "find", "find2", "--name", "needle", "--state", "failed", "--redis", url,
        "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 30);
    assert_true(strncmp(r.out, "f29  needle  failed\n", 20) == 0);
    assert_string_equal(r.err, "ferry job find: scanned 30 jobs (now in failed), 30 matches\n");
    cli_run_free(&r);

    CLI(r, "job", "find", "find2", "--data-contains", "\"k\":2499", "--json", "--redis", url,
        "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "{\"id\":\"w2499\",\"name\":\"n4\",\"state\":\"wait\"}\n");
    assert_int_equal(cli_lines(r.err), 10); /* a progress line per page */
    cli_run_free(&r);

    CLI(r, "job", "find", "find2", "--name", "needle", "--scan-max", "1200", "--redis", url,
        "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "ferry job find: scanned 1000 jobs (now in wait), 0 matches\n"
                               "ferry job find: scanned 1200 jobs (now in wait), 0 matches\n"
                               "ferry job find: stopped after scanning 1200 jobs (--scan-max); "
                               "the rest were not looked at\n");
    cli_run_free(&r);

    CLI(r, "job", "find", "find2", "--state", "failed", "--limit", "2", "--redis", url, "--prefix",
        p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "f29  needle  failed\nf28  needle  failed\n");
    assert_non_null(strstr(r.err, "stopped at --limit 2 matches"));
    cli_run_free(&r);

    CLI(r, "job", "find", "find2", "--state", "later", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "unknown state 'later'"));
    cli_run_free(&r);
    CLI(r, "job", "find", "find2", "--scan-max", "0", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--scan-max"));
    cli_run_free(&r);
    CLI(r, "job", "find", "find2", "--data-contains", "", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--data-contains: empty"));
    cli_run_free(&r);
    CLI(r, "job", "find", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_read), cmocka_unit_test(test_events_of_a_worker),
        cmocka_unit_test(test_cli_events),  cmocka_unit_test(test_find_jobs),
        cmocka_unit_test(test_cli_find),
    };
    int failed = cmocka_run_group_tests(tests, qt_setup, qt_teardown);
    th_tmpdir_remove();
    return th_exit(failed);
}
