/* test_metrics_worker.c - the worker's and the relay's Prometheus series against the
 * fixture's Redis and PostgreSQL: in-process workers (two sharing one registry, one
 * without job names) process known jobs (completed, failed for good, retried, retried
 * later, refused by the check) and the rendering is checked for exact counter values and
 * histogram counts; an in-process relay feeding a worker on the same registry; the real
 * `ferry worker` and `ferry relay` with --metrics-listen 127.0.0.1:0 scraped over HTTP and
 * fed to the real `promtool check metrics` (a missing promtool fails, never skips); a bad
 * --metrics-listen address is a usage error (exit 2). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "ferry/ferry.h"
#include "support/cli.h"
#include "support/ob.h"
#include "support/pm.h"
#include "support/wt.h"

static PGconn *db;
static ferry_conn *rds;

OB_GROUP_FIXTURE(&db, &rds)

/* ---- helpers ------------------------------------------------------------------------ */

static char *render(ferry_metrics *m) {
    char *text = NULL;
    ferry_error e = {0};
    if (ferry_metrics_render(m, &text, NULL, &e)) fail_msg("render: %s", e.message);
    return text;
}

/* The text has this exact sample line ("name{labels} value"). */
static void expect_line(const char *text, const char *line) {
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n') return;
    fail_msg("missing line: %s\nin:\n%s", line, text);
}

/* The value of the sample whose line starts with `series` + ' ', or -1. */
static double sample(const char *text, const char *series) {
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == ' ') return strtod(p + n + 1, NULL);
    return -1;
}

/* GET /metrics on 127.0.0.1:port (HTTP/1.0): the body, malloc'd; fails unless 200. */
static char *scrape(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        fail_msg("connect to port %d: %s", port, strerror(errno));
    static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1))
        fail_msg("write: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0) fail_msg("read: %s", strerror(errno));
        if (r == 0) break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = '\0';
    int status = 0;
    char *sep = strstr(buf, "\r\n\r\n");
    if (!sep || sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status != 200)
        fail_msg("scrape of port %d: %s", port, buf);
    char *body = strdup(sep + 4);
    free(buf);
    return body;
}

/* The port of "metrics: serving http://127.0.0.1:PORT/metrics" in a log file (waits). */
static int logged_port(const char *log_path) {
    th_log_arg w = {log_path, "/metrics\n"};
    if (!th_wait_until(th_log_has, &w, 15000)) {
        char *log = th_slurp(log_path);
        fail_msg("no metrics line in %s:\n%s", log_path, log);
    }
    char *log = th_slurp(log_path);
    const char *p = strstr(log, "metrics: serving http://127.0.0.1:");
    if (!p) fail_msg("unexpected metrics line:\n%s", log);
    int port = atoi(p + strlen("metrics: serving http://127.0.0.1:"));
    free(log);
    if (port <= 0) fail_msg("no port in the metrics line");
    return port;
}

/* ---- in-process workers ---------------------------------------------------------------- */

/* The job's name says what the handler does: ok completes; bad fails for good; flaky
 * fails (transient) on its first attempt; later is postponed once (no attempt spent). */
static ferry_outcome by_name(ferry_job *j, void *ud) {
    (void)ud;
    const char *n = ferry_job_name(j);
    if (!strcmp(n, "bad")) {
        ferry_job_set_failure(j, "bad input", NULL);
        return FERRY_FAILED_PERMANENT;
    }
    if (!strcmp(n, "flaky") && ferry_job_attempts_made(j) == 0) {
        ferry_job_set_failure(j, "glitch", NULL);
        return FERRY_FAILED;
    }
    if (!strcmp(n, "later") && ferry_job_attempts_started(j) == 1) return FERRY_RETRY_LATER;
    return FERRY_COMPLETED;
}

/* Refuses jobs named "reject" before the handler runs. */
static int reject_check(const ferry_job *j, char *reason, size_t cap, void *ud) {
    (void)ud;
    if (strcmp(ferry_job_name(j), "reject")) return 0;
    snprintf(reason, cap, "contract: rejected");
    return 1;
}

typedef struct done_wait {
    ferry_worker *w;
    unsigned long long completed, failed;
} done_wait;

static int worker_done(void *arg) {
    done_wait *d = arg;
    ferry_worker_stats s;
    ferry_worker_get_stats(d->w, &s);
    return s.completed >= d->completed && s.failed >= d->failed;
}

static void wait_done(ferry_worker *w, unsigned long long completed, unsigned long long failed) {
    done_wait d = {w, completed, failed};
    if (!th_wait_until(worker_done, &d, 20000)) {
        ferry_worker_stats s;
        ferry_worker_get_stats(w, &s);
        fail_msg("worker: %llu completed, %llu failed; want %llu and %llu", s.completed, s.failed,
                 completed, failed);
    }
}

static void test_worker_series(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);

    const char *retry2 = "{\"attempts\":2}";
    for (int i = 0; i < 3; i++)
        free(wt_add(&t, "ok", "{}", NULL));
    for (int i = 0; i < 2; i++)
        free(wt_add(&t, "bad", "{}", retry2));
    free(wt_add(&t, "flaky", "{}", retry2));
    free(wt_add(&t, "later", "{}", NULL));
    free(wt_add(&t, "reject", "{}", retry2));

    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    o.concurrency = 2;
    o.metrics = m;
    o.check = reject_check;
    ferry_worker *w = wt_start(&o, by_name, NULL);
    /* completed: 3 ok, flaky (2nd attempt), later (2nd start); failed: 2 bad, reject */
    wait_done(w, 5, 3);

    /* a second worker of the process on another queue shares the registry's families,
     * without job names */
    ferry_queue *q2 = th_queue_open(t.prefix, "wq2", NULL, 0);
    for (int i = 0; i < 2; i++) {
        ferry_job_spec s = {"x", "{}", NULL};
        char *id = NULL;
        if (ferry_queue_add(q2, &s, &id, &e)) fail_msg("add: %s", e.message);
        free(id);
    }
    ferry_worker_options o2;
    ferry_redis_options ro2;
    wt_options(&t, &o2, &ro2);
    o2.metrics = m;
    o2.metrics_no_job_name = 1;
    ferry_worker *w2 = NULL;
    if (ferry_worker_create("wq2", &o2, by_name, NULL, &w2, &e)) fail_msg("%s", e.message);
    if (ferry_worker_start(w2, &e)) fail_msg("%s", e.message);
    wait_done(w2, 2, 0);

    char *text = render(m);
    expect_line(text, "ferry_worker_slots{queue=\"wq\"} 2");
    expect_line(text, "ferry_worker_slots{queue=\"wq2\"} 1");
    free(text);
    wt_stop(w);
    assert_int_equal(ferry_worker_close(w2, 10000), 0);
    ferry_worker_free(w2);

    text = render(m);
    static const char *const lines[] = {
        "ferry_jobs_processed_total{queue=\"wq\",name=\"ok\",outcome=\"completed\"} 3",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"ok\",outcome=\"failed\"} 0",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"bad\",outcome=\"failed\"} 2",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"bad\",outcome=\"retried\"} 0",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"flaky\",outcome=\"retried\"} 1",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"flaky\",outcome=\"completed\"} 1",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"later\",outcome=\"retried_later\"} 1",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"later\",outcome=\"completed\"} 1",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"reject\",outcome=\"failed\"} 1",
        "ferry_jobs_processed_total{queue=\"wq\",name=\"reject\",outcome=\"lock_lost\"} 0",
        "ferry_jobs_processed_total{queue=\"wq2\",name=\"\",outcome=\"completed\"} 2",
        "ferry_jobs_failed_total{queue=\"wq\",name=\"bad\",reason_class=\"permanent\","
        "final=\"true\"} 2",
        "ferry_jobs_failed_total{queue=\"wq\",name=\"flaky\",reason_class=\"transient\","
        "final=\"false\"} 1",
        "ferry_jobs_failed_total{queue=\"wq\",name=\"reject\",reason_class=\"check\","
        "final=\"true\"} 1",
        /* every attempt ran its handler (or check): 3 + 2 + 2 + 2 + 1 */
        "ferry_job_duration_seconds_count{queue=\"wq\",name=\"ok\"} 3",
        "ferry_job_duration_seconds_count{queue=\"wq\",name=\"bad\"} 2",
        "ferry_job_duration_seconds_count{queue=\"wq\",name=\"flaky\"} 2",
        "ferry_job_duration_seconds_count{queue=\"wq\",name=\"later\"} 2",
        "ferry_job_duration_seconds_count{queue=\"wq\",name=\"reject\"} 1",
        "ferry_job_duration_seconds_count{queue=\"wq2\",name=\"\"} 2",
        /* the first start of each of the 8 jobs */
        "ferry_job_wait_seconds_count{queue=\"wq\"} 8",
        "ferry_job_wait_seconds_count{queue=\"wq2\"} 2",
        /* 8 jobs left for good; flaky at its 2nd attempt, the rest at the 1st */
        "ferry_job_attempts_bucket{queue=\"wq\",le=\"1\"} 7",
        "ferry_job_attempts_bucket{queue=\"wq\",le=\"2\"} 8",
        "ferry_job_attempts_count{queue=\"wq\"} 8",
        "ferry_job_attempts_sum{queue=\"wq\"} 9",
        "ferry_worker_slots{queue=\"wq\"} 0",
        "ferry_worker_busy_slots{queue=\"wq\"} 0",
        "ferry_worker_slots{queue=\"wq2\"} 0",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        expect_line(text, lines[i]);
    /* the waits were short, and none is negative */
    assert_true(sample(text, "ferry_job_wait_seconds_bucket{queue=\"wq\",le=\"60\"}") == 8);
    assert_null(strstr(text, "name=\"other\""));
    pm_promtool_check(text, "workers");
    free(text);

    ferry_queue_close(q2);
    ferry_metrics_destroy(m);
    wt_fini(&t);
}

/* A worker made with metrics NULL registers nothing. */
static void test_worker_without_metrics(void **state) {
    (void)state;
    wt t;
    wt_init(&t);
    free(wt_add(&t, "ok", "{}", NULL));
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(&t, &o, &ro);
    ferry_worker *w = wt_start(&o, by_name, NULL);
    wait_done(w, 1, 0);
    wt_stop(w);
    wt_fini(&t);
}

/* ---- an in-process relay feeding a worker, one registry ----------------------------------- */

typedef struct relay_thread {
    ferry_relay *relay;
    int rc;
    ferry_error err;
} relay_thread;

static void *relay_thread_main(void *arg) {
    relay_thread *t = arg;
    t->rc = ferry_relay_run(t->relay, &t->err);
    return NULL;
}

static int relay_published(void *arg) {
    ferry_relay_stats st;
    ferry_relay_get_stats(arg, &st);
    return st.published >= 3;
}

static void test_relay_series(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    ferry_routes *routes = NULL;
    const char *text_routes = "order.placed mq:handle\n";
    assert_int_equal(ferry_routes_parse(text_routes, strlen(text_routes), NULL, &routes, &e), 0);
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = th_env_require("REDIS_URL");
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.database_url = th_env_require("DATABASE_URL");
    o.schema = schema;
    o.redis = &ro;
    o.prefix = prefix;
    o.routes = routes;
    o.poll_interval_ms = 200;
    o.retention_s = -1;
    o.metrics = m;
    ferry_relay *relay = NULL;
    if (ferry_relay_create(&o, &relay, &e)) fail_msg("%s", e.message);
    ferry_routes_free(routes);

    /* before the run: the unlabelled families have their sample at 0 */
    char *text = render(m);
    expect_line(text, "ferry_relay_published_total 0");
    expect_line(text, "ferry_relay_batch_duration_seconds_count 0");
    expect_line(text, "ferry_relay_last_success_timestamp_seconds 0");
    free(text);

    ferry_worker_options wo;
    ferry_redis_options wro;
    ferry_redis_options_init(&wro);
    wro.url = th_env_require("REDIS_URL");
    ferry_worker_options_init(&wo);
    wo.redis = &wro;
    wo.prefix = prefix;
    wo.metrics = m;
    ferry_worker *w = NULL;
    if (ferry_worker_create("mq", &wo, by_name, NULL, &w, &e)) fail_msg("%s", e.message);
    if (ferry_worker_start(w, &e)) fail_msg("%s", e.message);

    relay_thread t = {.relay = relay};
    pthread_t th;
    pthread_create(&th, NULL, relay_thread_main, &t);
    char id[37];
    for (int i = 0; i < 3; i++)
        ob_append(db, schema, "order.placed", "{\"n\":1}", NULL, 1, id);
    assert_true(th_wait_until(relay_published, relay, 15000));
    wait_done(w, 3, 0);
    double now = (double)time(NULL);
    ferry_relay_stop(relay);
    pthread_join(th, NULL);
    if (t.rc) fail_msg("run: %s", t.err.message);
    ferry_relay_stats st;
    ferry_relay_get_stats(relay, &st);
    assert_int_equal(ferry_worker_close(w, 10000), 0);
    ferry_worker_free(w);

    text = render(m);
    expect_line(text, "ferry_relay_published_total 3");
    char want[128];
    snprintf(want, sizeof want, "ferry_relay_batch_duration_seconds_count %llu", st.batches);
    expect_line(text, want);
    expect_line(text, "ferry_relay_commit_to_enqueue_seconds_count 3");
    /* PostgreSQL and the relay share this host's clock: well within a minute */
    assert_true(sample(text, "ferry_relay_commit_to_enqueue_seconds_bucket{le=\"60\"}") == 3);
    double last = sample(text, "ferry_relay_last_success_timestamp_seconds");
    assert_true(last > now - 30 && last < now + 30);
    expect_line(text,
                "ferry_jobs_processed_total{queue=\"mq\",name=\"handle\",outcome=\"completed\"} 3");
    expect_line(text, "ferry_job_wait_seconds_count{queue=\"mq\"} 3");
    pm_promtool_check(text, "relay");
    free(text);
    ferry_relay_free(relay);
    ferry_metrics_destroy(m);
}

/* ---- the CLI ---------------------------------------------------------------------------- */

static void test_cli_worker_scrape(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    const char *q = "cq";
    char id[64];
    for (int i = 0; i < 2; i++)
        cli_add_job(p, q, "echo", "{}", "{}", id, sizeof id);
    cli_add_job(p, q, "permanent", "{}", "{}", id, sizeof id);
    char errp[256];
    pid_t pid = cli_worker_start(
        p, q, CLI_ARGV("--metrics-listen", "127.0.0.1:0", "--concurrency", "2"), errp, sizeof errp);
    int port = logged_port(errp);
    /* all three settled: wait on the metrics themselves */
    char *text = NULL;
    long long end = th_mono_ms() + 20000;
    for (;;) {
        text = scrape(port);
        if (sample(
                text,
                "ferry_jobs_processed_total{queue=\"cq\",name=\"echo\",outcome=\"completed\"}") ==
                2 &&
            sample(
                text,
                "ferry_jobs_processed_total{queue=\"cq\",name=\"permanent\",outcome=\"failed\"}") ==
                1)
            break;
        if (th_mono_ms() > end) fail_msg("jobs not counted:\n%s", text);
        free(text);
        th_sleep_ms(50);
    }
    expect_line(text, "ferry_jobs_failed_total{queue=\"cq\",name=\"permanent\",reason_class="
                      "\"permanent\",final=\"true\"} 1");
    expect_line(text, "ferry_worker_slots{queue=\"cq\"} 2");
    expect_line(text, "ferry_job_duration_seconds_count{queue=\"cq\",name=\"echo\"} 2");
    assert_non_null(strstr(text, "\nferry_build_info{version=\""));
    pm_promtool_check(text, "cli-worker");
    free(text);
    kill(pid, SIGTERM);
    assert_int_equal(cli_wait(pid, 20000), 0);
}

static void test_cli_relay_scrape(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("metrics.routes", "order.placed rq:handle\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes, CLI_ARGV("--metrics-listen", "127.0.0.1:0"), NULL);
    int port = logged_port(rl.log);
    char id[37];
    ob_append(db, schema, "order.placed", "{\"n\":1}", NULL, 1, id);
    char *text = NULL;
    long long end = th_mono_ms() + 20000;
    for (;;) {
        text = scrape(port);
        if (sample(text, "ferry_relay_published_total") == 1) break;
        if (th_mono_ms() > end) OB_FAIL_LOG(&rl, "not published:\n%s", text);
        free(text);
        th_sleep_ms(50);
    }
    expect_line(text, "ferry_relay_commit_to_enqueue_seconds_count 1");
    assert_true(sample(text, "ferry_relay_last_success_timestamp_seconds") > 1e9);
    assert_non_null(strstr(text, "\nferry_build_info{version=\""));
    pm_promtool_check(text, "cli-relay");
    free(text);
    ob_relay_stop(&rl);
}

static void test_cli_bad_address(void **state) {
    (void)state;
    static const char *const bad[] = {"nonsense", "127.0.0.1", "127.0.0.1:99999", "example.com:80",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        CLI(r, "worker", "bq", "--redis", cli_url(), "--metrics-listen", bad[i], "--", "/bin/true");
        CLI_EXPECT(r, 2);
        if (!strstr(r.err, "--metrics-listen")) fail_msg("%s: stderr: %s", bad[i], r.err);
        cli_run_free(&r);
        const char *routes = ob_file("bad.routes", "order.placed rq:handle\n");
        CLI(r, "relay", "--routes", routes, "--database", th_env_require("DATABASE_URL"), "--redis",
            cli_url(), "--metrics-listen", bad[i]);
        CLI_EXPECT(r, 2);
        if (!strstr(r.err, "--metrics-listen")) fail_msg("%s: stderr: %s", bad[i], r.err);
        cli_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_series),    cmocka_unit_test(test_worker_without_metrics),
        cmocka_unit_test(test_relay_series),     cmocka_unit_test(test_cli_worker_scrape),
        cmocka_unit_test(test_cli_relay_scrape), cmocka_unit_test(test_cli_bad_address),
    };
    int failed = cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
    th_tmpdir_remove();
    return failed;
}
