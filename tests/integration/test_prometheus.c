/* test_prometheus.c - a real Prometheus server scrapes ferry, and PromQL through its HTTP
 * API (/api/v1/query) returns what ferry did: a private `prometheus` (Debian's package;
 * loopback, a free port, a temporary data directory, scrape_interval 1s) scrapes a running
 * `ferry worker --metrics-listen 127.0.0.1:0` that processes N jobs, and an in-process
 * registry holding ferry serve's system-wide gauges (src/admin/gauges.c) on its own
 * listener, and a running `ferry serve` (its /metrics refreshes those gauges at every
 * scrape, from Redis and PostgreSQL). Checked: up == 1 for the three targets,
 * sum(ferry_jobs_processed_total) == N, ferry_worker_slots == the concurrency, histogram_quantile
 * over the duration histogram is finite, ferry_queue_jobs / ferry_queue_paused equal the queue's
 * own counts (in-process and from serve, following a pause, a resume and a delayed add), and
 * serve's outbox and dead-letter gauges follow the database. Prometheus, serve and the worker are
 * started and stopped here (killed by the group teardown if a check failed first); a missing
 * prometheus binary fails the test, it is never skipped. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "admin/admin_internal.h"
#include "ferry/ferry.h"
#include "support/cli.h"
#include "support/ob.h"
#include "support/qt.h"

#define NJOBS 5
#define CONCURRENCY 3
#define WAIT_MS 60000 /* for Prometheus to start, scrape and see a value */

static pid_t prom_pid = -1, worker_pid = -1, serve_pid = -1;
static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

/* Send sig and reap the child (SIGKILL after 30 s); never fails (the teardown uses it). */
static void stop(pid_t *pid, int sig) {
    if (*pid <= 0) return;
    kill(*pid, sig);
    long long end = th_mono_ms() + 30000;
    int st;
    while (waitpid(*pid, &st, WNOHANG) != *pid) {
        if (th_mono_ms() > end) {
            kill(*pid, SIGKILL);
            waitpid(*pid, &st, 0);
            break;
        }
        th_sleep_ms(20);
    }
    *pid = -1;
}

static int setup(void **state) {
    qt_conn = th_conn();
    return ob_group_setup(state);
}

static int teardown(void **state) {
    stop(&prom_pid, SIGKILL);
    stop(&worker_pid, SIGKILL);
    stop(&serve_pid, SIGKILL);
    ferry__conn_close(qt_conn);
    return ob_group_teardown(state);
}

/* A free loopback TCP port (bound and released: Prometheus binds it right after). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        fail_msg("free port: %s", strerror(errno));
    close(fd);
    return ntohs(a.sin_port);
}

/* GET path on 127.0.0.1:port (HTTP/1.0): the body (malloc'd) and *status; NULL when the
 * connection is refused (not listening yet). */
static char *http_get(int port, const char *path, int *status) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return NULL;
    }
    char req[4096];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t)n) != n) fail_msg("write: %s", strerror(errno));
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
    *status = 0;
    sscanf(buf, "HTTP/1.%*d %d", status);
    char *sep = strstr(buf, "\r\n\r\n");
    char *body = strdup(sep ? sep + 4 : "");
    free(buf);
    return body;
}

static void url_encode(const char *s, char *out, size_t cap) {
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (; *s && k + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.') {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = '\0';
}

/* The value of an instant query that selects one series; NAN when the result is empty (the
 * series is not scraped yet). Fails on an error answer or more than one series. */
static double query(int port, const char *promql) {
    char enc[2048], path[2200];
    url_encode(promql, enc, sizeof enc);
    snprintf(path, sizeof path, "/api/v1/query?query=%s", enc);
    int status = 0;
    char *body = http_get(port, path, &status);
    if (!body) fail_msg("prometheus on port %d refused the connection", port);
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    if (status != 200 || !j || strcmp(json_string_value(json_object_get(j, "status")), "success"))
        fail_msg("query %s: status %d: %s", promql, status, body);
    json_t *res = json_object_get(json_object_get(j, "data"), "result");
    double v = NAN;
    if (json_array_size(res) > 1)
        fail_msg("query %s: %zu series, want one: %s", promql, json_array_size(res), body);
    if (json_array_size(res) > 0) {
        const char *s =
            json_string_value(json_array_get(json_object_get(json_array_get(res, 0), "value"), 1));
        if (!s) fail_msg("query %s: unexpected answer %s", promql, body);
        v = strtod(s, NULL);
    }
    json_decref(j);
    free(body);
    return v;
}

/* Poll the query until it returns `want` (scrapes are asynchronous: every 1 s). */
static void expect_query(int port, const char *promql, double want) {
    long long end = th_mono_ms() + WAIT_MS;
    double got = NAN;
    while ((got = query(port, promql)) != want) {
        if (th_mono_ms() > end) fail_msg("%s = %g, want %g", promql, got, want);
        th_sleep_ms(200);
    }
}

/* The port of "metrics: serving http://127.0.0.1:PORT/metrics" in the worker's log. */
static int logged_port(const char *log_path) {
    th_log_arg w = {log_path, "/metrics\n"};
    if (!th_wait_until(th_log_has, &w, 15000)) fail_msg("no metrics line in %s", log_path);
    char *log = th_slurp(log_path);
    const char *p = strstr(log, "metrics: serving http://127.0.0.1:");
    if (!p) fail_msg("unexpected metrics line:\n%s", log);
    int port = atoi(p + strlen("metrics: serving http://127.0.0.1:"));
    free(log);
    return port;
}

/* The port of ferry serve's start-up line "listening on http://HOST:PORT, actions ...". */
static int serve_port(const char *log_path) {
    th_log_arg w = {log_path, ", actions "};
    if (!th_wait_until(th_log_has, &w, 20000))
        fail_msg("ferry serve did not start:\n%s", th_slurp(log_path));
    char *log = th_slurp(log_path);
    const char *p = strstr(log, "listening on http://");
    const char *end = p ? strstr(p, ", actions") : NULL;
    if (!p || !end) fail_msg("unexpected start-up line:\n%s", log);
    while (end > p && *end != ':')
        end--;
    int port = atoi(end + 1);
    free(log);
    if (port <= 0) fail_msg("no port in ferry serve's start-up line");
    return port;
}

static const char *prometheus_path(void) {
    static char path[4096];
    FILE *p = popen("command -v prometheus", "r");
    if (!p) fail_msg("popen: %s", strerror(errno));
    if (!fgets(path, sizeof path, p)) path[0] = '\0';
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    if (!path[0])
        fail_msg("prometheus not found on PATH: install Debian's prometheus package "
                 "(scripts/install-deps.sh does); this test is never skipped");
    return path;
}

static int prom_start(int worker_port, int gauges_port, int serve_port) {
    const char *bin = prometheus_path();
    char cfg[512], data[512], listen[64], cfgflag[600], dataflag[600], log[512];
    snprintf(cfg, sizeof cfg, "%s/prometheus.yml", th_tmpdir());
    snprintf(data, sizeof data, "%s/prometheus-data", th_tmpdir());
    snprintf(log, sizeof log, "%s/prometheus.log", th_tmpdir());
    char text[1024];
    snprintf(text, sizeof text,
             "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n"
             "  - job_name: worker\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
             "  - job_name: gauges\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
             "  - job_name: serve\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n",
             worker_port, gauges_port, serve_port);
    th_write_file(cfg, text, 0600);
    int port = free_port();
    snprintf(listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", port);
    snprintf(cfgflag, sizeof cfgflag, "--config.file=%s", cfg);
    snprintf(dataflag, sizeof dataflag, "--storage.tsdb.path=%s", data);
    const char *argv[] = {bin, cfgflag, dataflag, listen, "--log.level=warn", NULL};
    prom_pid = th_spawn(argv, NULL, NULL, log, log, 0);
    /* ready: /-/ready answers 200 */
    long long end = th_mono_ms() + WAIT_MS;
    for (;;) {
        int status = 0;
        char *body = http_get(port, "/-/ready", &status);
        free(body);
        if (body && status == 200) break;
        int st;
        if (waitpid(prom_pid, &st, WNOHANG) == prom_pid) {
            prom_pid = -1;
            fail_msg("prometheus exited (status %d):\n%s", st, th_slurp(log));
        }
        if (th_mono_ms() > end) fail_msg("prometheus not ready:\n%s", th_slurp(log));
        th_sleep_ms(100);
    }
    return port;
}

static void test_prometheus_scrapes(void **state) {
    (void)state;
    char p[64];
    snprintf(p, sizeof p, "%s", th_prefix());
    const char *qn = "pq";
    ferry_queue *q = qt_open(p, qn, NULL);
    for (int i = 0; i < NJOBS; i++)
        free(qt_add(q, "echo", "{}", NULL));

    /* the system-wide gauges on their own listener (what ferry serve's /metrics holds) */
    ferry_metrics *m = NULL;
    ferry__admin_gauges *g = NULL;
    ferry_metrics_listener *l = NULL;
    ferry_error e = {0};
    ferry_redis_options ro = th_redis_options(0);
    ferry__admin_config cfg = {.redis = &ro, .prefix = p, .metrics = m};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    assert_int_equal(ferry__admin_gauges_create(m, &g, &e), 0);
    cfg.metrics = m;
    assert_int_equal(ferry_metrics_listen(m, "127.0.0.1:0", &l, &e), 0);

    char conc[16], errp[256];
    snprintf(conc, sizeof conc, "%d", CONCURRENCY);
    worker_pid =
        cli_worker_start(p, qn, CLI_ARGV("--metrics-listen", "127.0.0.1:0", "--concurrency", conc),
                         errp, sizeof errp);
    int wport = logged_port(errp);

    /* ferry serve on the same prefix, with a database: 2 unpublished outbox rows and one
     * dead letter */
    const char *schema = ob_schema(db);
    char id[37];
    for (int i = 0; i < 2; i++)
        ob_append(db, schema, "t", "{}", NULL, 1, id);
    ferry_dlq_options dlo = {.schema = schema};
    ferry_dlq_failure df = {.prefix = p, .queue = qn, .job_id = "x1", .error = "boom"};
    if (ferry_dlq_record(db, &dlo, &df, NULL, &e)) fail_msg("record: %s", e.message);
    char slog[512];
    snprintf(slog, sizeof slog, "%s/serve.log", th_tmpdir());
    const char *sargv[] = {"serve",    "--listen",   "127.0.0.1:0",
                           "--redis",  cli_url(),    "--prefix",
                           p,          "--database", th_env_require("DATABASE_URL"),
                           "--schema", schema,       NULL};
    serve_pid = cli_start(sargv, NULL, NULL, slog, slog);
    int sport = serve_port(slog);

    int port = prom_start(wport, ferry_metrics_listener_port(l), sport);

    expect_query(port, "up{job=\"worker\"}", 1);
    expect_query(port, "up{job=\"gauges\"}", 1);
    char promql[512];
    snprintf(promql, sizeof promql, "sum(ferry_jobs_processed_total{queue=\"%s\"})", qn);
    expect_query(port, promql, NJOBS);
    snprintf(promql, sizeof promql,
             "sum(ferry_jobs_processed_total{queue=\"%s\",outcome=\"completed\"})", qn);
    expect_query(port, promql, NJOBS);
    snprintf(promql, sizeof promql, "ferry_worker_slots{queue=\"%s\"}", qn);
    expect_query(port, promql, CONCURRENCY);
    snprintf(promql, sizeof promql, "sum(ferry_job_duration_seconds_count{queue=\"%s\"})", qn);
    expect_query(port, promql, NJOBS);
    snprintf(
        promql, sizeof promql,
        "histogram_quantile(0.5, sum by (le) (ferry_job_duration_seconds_bucket{queue=\"%s\"}))",
        qn);
    double q50 = query(port, promql);
    if (!isfinite(q50) || q50 < 0) fail_msg("%s = %g, want a finite value", promql, q50);

    /* the gauges, refreshed once every job is done, as the queue itself counts them */
    ferry_job_counts c;
    assert_int_equal(ferry_queue_counts(q, &c, &e), 0);
    assert_int_equal(c.waiting + c.active + c.delayed + c.prioritized, 0);
    if (ferry__admin_gauges_refresh(g, &cfg, NULL, &e)) fail_msg("refresh: %s", e.message);
    snprintf(promql, sizeof promql,
             "ferry_queue_jobs{job=\"gauges\",queue=\"%s\",state=\"completed\"}", qn);
    expect_query(port, promql, (double)c.completed);
    snprintf(promql, sizeof promql, "ferry_queue_jobs{job=\"gauges\",queue=\"%s\",state=\"wait\"}",
             qn);
    expect_query(port, promql, 0);
    snprintf(promql, sizeof promql, "ferry_queue_paused{job=\"gauges\",queue=\"%s\"}", qn);
    expect_query(port, promql, 0);
    /* a change is seen at the next scrape after a refresh */
    assert_int_equal(ferry_queue_pause(q, &e), 0);
    if (ferry__admin_gauges_refresh(g, &cfg, NULL, &e)) fail_msg("refresh: %s", e.message);
    expect_query(port, promql, 1);
    expect_query(port, "ferry_serve_source_up{job=\"gauges\",source=\"redis\"}", 1);
    expect_query(port, "sum(ferry_metrics_folded_series_total)", 0);

    /* ferry serve's /metrics: refreshed at every scrape */
    expect_query(port, "up{job=\"serve\"}", 1);
    snprintf(promql, sizeof promql,
             "ferry_queue_jobs{job=\"serve\",queue=\"%s\",state=\"completed\"}", qn);
    expect_query(port, promql, (double)c.completed);
    snprintf(promql, sizeof promql, "ferry_queue_paused{job=\"serve\",queue=\"%s\"}", qn);
    expect_query(port, promql, 1);
    assert_int_equal(ferry_queue_resume(q, &e), 0);
    expect_query(port, promql, 0);
    free(qt_add(q, "slow", "{}", "{\"delay\":600000}"));
    snprintf(promql, sizeof promql,
             "ferry_queue_jobs{job=\"serve\",queue=\"%s\",state=\"delayed\"}", qn);
    expect_query(port, promql, 1);
    snprintf(promql, sizeof promql,
             "ferry_queue_oldest_ready_age_seconds{job=\"serve\",queue=\"%s\"}", qn);
    expect_query(port, promql, 0); /* a delayed job is not a ready one */
    expect_query(port, "ferry_outbox_unpublished{job=\"serve\"}", 2);
    expect_query(port, "ferry_dead_letters{job=\"serve\"}", 1);
    expect_query(port, "ferry_serve_source_up{job=\"serve\",source=\"outbox\"}", 1);
    expect_query(port, "ferry_serve_source_up{job=\"serve\",source=\"dead_letters\"}", 1);
    /* a row published: seen at the next scrape */
    PQclear(
        ob_sql(db, "UPDATE %s.outbox_events SET published_at = now() WHERE id = '%s'", schema, id));
    expect_query(port, "ferry_outbox_unpublished{job=\"serve\"}", 1);

    stop(&prom_pid, SIGTERM);
    kill(serve_pid, SIGTERM);
    if (cli_wait(serve_pid, 20000) != 0) fail_msg("ferry serve exit:\n%s", th_slurp(slog));
    serve_pid = -1;
    kill(worker_pid, SIGTERM);
    assert_int_equal(cli_wait(worker_pid, 20000), 0);
    worker_pid = -1;
    ferry_metrics_listener_stop(l);
    ferry__admin_gauges_destroy(g);
    ferry_metrics_destroy(m);
    ferry_queue_close(q);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prometheus_scrapes),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/prometheus-data'", th_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s/prometheus-data\n", th_tmpdir());
    th_tmpdir_remove();
    return rc;
}
