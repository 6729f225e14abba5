/* test_metrics_exposition.c - the metrics text as Prometheus itself reads it: a registry with
 * every kind (labels, escaped values, the overflow series, computed gauges, histograms,
 * build info) rendered and checked by the real `promtool check metrics` (Debian's
 * prometheus; missing promtool fails the test, it is never skipped), and the /metrics
 * listener over loopback HTTP: status, Content-Type, body, 404, 405, addresses. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferry/ferry.h"
#include "support/pm.h"
#include "support/th.h"

static double seven(void *userdata) {
    (void)userdata;
    return 7;
}

/* One of every kind, with values that exercise the writer. Caller destroys. */
static ferry_metrics *full_registry(void) {
    ferry_metrics_options o;
    ferry_metrics_options_init(&o);
    o.max_series = 2;
    ferry_metrics *m;
    ferry_error err = {0};
    if (ferry_metrics_create(&o, &m, &err)) fail_msg("create: %s", err.message);
    if (ferry_metrics_build_info(m, &err)) fail_msg("build info: %s", err.message);

    ferry_metrics_spec s;
    const char *jl[] = {"queue", "name", "outcome"};
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_COUNTER;
    s.name = "ferry_jobs_processed_total";
    s.help = "Jobs that left active, by queue, name and outcome (with a \\ backslash)";
    s.label_names = jl;
    s.label_count = 3;
    ferry_metrics_family *jobs;
    if (ferry_metrics_register(m, &s, &jobs, &err)) fail_msg("%s", err.message);
    const char *v[][3] = {{"mail", "send", "completed"},
                          {"q\"uoted\\back\nslash", "caf\xc3\xa9", "failed"},
                          {"third", "folded", "completed"},
                          {"fourth", "folded", "failed"}};
    for (size_t i = 0; i < 4; i++) {
        ferry_metrics_counter *c;
        if (ferry_metrics_counter_with(jobs, v[i], &c, &err)) fail_msg("%s", err.message);
        ferry_metrics_counter_add(c, i + 1);
    }

    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = "ferry_worker_busy_slots";
    s.help = "Handler slots running a job";
    ferry_metrics_family *busy;
    if (ferry_metrics_register(m, &s, &busy, &err)) fail_msg("%s", err.message);
    ferry_metrics_gauge *g;
    if (ferry_metrics_gauge_with(busy, NULL, &g, &err)) fail_msg("%s", err.message);
    ferry_metrics_gauge_set(g, 3);

    const char *ql[] = {"queue"};
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = "ferry_queue_oldest_ready_age_seconds";
    s.help = "Age of the oldest job ready to run";
    s.label_names = ql;
    s.label_count = 1;
    ferry_metrics_family *age;
    if (ferry_metrics_register(m, &s, &age, &err)) fail_msg("%s", err.message);
    const char *mail[] = {"mail"}, *idle[] = {"idle"};
    if (ferry_metrics_gauge_callback(age, mail, seven, NULL, &err)) fail_msg("%s", err.message);
    if (ferry_metrics_gauge_with(age, idle, &g, &err)) fail_msg("%s", err.message);
    ferry_metrics_gauge_set(g, NAN); /* no job: Prometheus reads NaN */

    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_job_duration_seconds";
    s.help = "Handler run time";
    s.label_names = ql;
    s.label_count = 1;
    ferry_metrics_family *dur;
    if (ferry_metrics_register(m, &s, &dur, &err)) fail_msg("%s", err.message);
    ferry_metrics_histogram *h;
    if (ferry_metrics_histogram_with(dur, mail, &h, &err)) fail_msg("%s", err.message);
    for (int i = 0; i < 50; i++)
        ferry_metrics_histogram_observe(h, i * 0.37);

    double attempts[] = {1, 2, 3, 5, 10, 25};
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_HISTOGRAM;
    s.name = "ferry_job_attempts";
    s.help = "Attempts a job took";
    s.buckets = attempts;
    s.bucket_count = 6;
    ferry_metrics_family *att;
    if (ferry_metrics_register(m, &s, &att, &err)) fail_msg("%s", err.message);
    if (ferry_metrics_histogram_with(att, NULL, &h, &err)) fail_msg("%s", err.message);
    ferry_metrics_histogram_observe(h, 1);
    ferry_metrics_histogram_observe(h, 4);

    /* a labelled family nothing was looked up in yet: HELP and TYPE alone */
    const char *rl[] = {"mode", "result"};
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_COUNTER;
    s.name = "ferry_redrives_total";
    s.help = "Dead letters redriven";
    s.label_names = rl;
    s.label_count = 2;
    if (ferry_metrics_register(m, &s, NULL, &err)) fail_msg("%s", err.message);
    return m;
}

static void test_promtool(void **state) {
    (void)state;
    ferry_metrics *m = full_registry();
    char *text;
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_render(m, &text, NULL, &err), 0);
    /* the writer's escapes and the overflow series are in what promtool reads */
    assert_non_null(strstr(text, "queue=\"q\\\"uoted\\\\back\\nslash\""));
    assert_non_null(strstr(text, "ferry_jobs_processed_total{queue=\"other\",name=\"other\","
                                 "outcome=\"other\"} 7\n"));
    assert_non_null(
        strstr(text, "ferry_metrics_folded_series_total{family=\"ferry_jobs_processed_total\"} "
                     "2\n"));
    assert_non_null(strstr(text, "ferry_queue_oldest_ready_age_seconds{queue=\"idle\"} NaN\n"));
    pm_promtool_check(text, "full");
    free(text);
    ferry_metrics_destroy(m);

    /* promtool does complain (so a silent pass above means something) */
    const char *argv[] = {pm_promtool_path(), "check", "metrics", NULL};
    char in[4096], out[4096];
    snprintf(in, sizeof in, "%s/bad.txt", th_tmpdir());
    snprintf(out, sizeof out, "%s/bad.promtool", th_tmpdir());
    th_write_file(in, "# HELP x_ms a\n# TYPE x_ms counter\nx_ms 1\n", 0600);
    pid_t pid = th_spawn(argv, NULL, in, out, out, 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    char *said = th_slurp(out);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !said[0])
        fail_msg("promtool accepted a counter without _total: the check above proves nothing");
    free(said);
}

/* ---- the listener --------------------------------------------------------------------- */

typedef struct http_reply {
    int status;
    char *head; /* status line and headers */
    char *body;
} http_reply;

/* One HTTP/1.0 request to 127.0.0.1:port (or ::1), the whole reply read. */
static http_reply http(int family, int port, const char *method, const char *path) {
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int rc;
    if (family == AF_INET6) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
        a.sin6_addr = in6addr_loopback;
        rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    } else {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    }
    if (rc) fail_msg("connect to port %d: %s", port, strerror(errno));
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: localhost\r\n\r\n", method, path);
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
    http_reply out = {0};
    char *sep = strstr(buf, "\r\n\r\n");
    if (!sep || sscanf(buf, "HTTP/1.%*d %d", &out.status) != 1)
        fail_msg("not an HTTP reply: %s", buf);
    *sep = '\0';
    out.head = buf;
    out.body = sep + 4;
    return out;
}

static void test_listener(void **state) {
    (void)state;
    ferry_metrics *m = full_registry();
    ferry_metrics_listener *l = NULL;
    ferry_error err = {0};
    if (ferry_metrics_listen(m, "127.0.0.1:0", &l, &err)) fail_msg("listen: %s", err.message);
    int port = ferry_metrics_listener_port(l);
    assert_true(port > 0);

    http_reply r = http(AF_INET, port, "GET", "/metrics");
    assert_int_equal(r.status, 200);
    if (!strstr(r.head, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"))
        fail_msg("head:\n%s", r.head);
    char *text;
    assert_int_equal(ferry_metrics_render(m, &text, NULL, &err), 0);
    assert_string_equal(r.body, text);
    pm_promtool_check(r.body, "scraped");
    free(text);
    free(r.head);

    r = http(AF_INET, port, "HEAD", "/metrics");
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body, "");
    free(r.head);
    r = http(AF_INET, port, "GET", "/");
    assert_int_equal(r.status, 404);
    free(r.head);
    r = http(AF_INET, port, "GET", "/metrics/x");
    assert_int_equal(r.status, 404);
    free(r.head);
    r = http(AF_INET, port, "POST", "/metrics");
    assert_int_equal(r.status, 405);
    if (!strstr(r.head, "\r\nAllow: GET, HEAD")) fail_msg("head:\n%s", r.head);
    free(r.head);

    /* the port is taken: the reason comes back */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    ferry_metrics_listener *l2 = (ferry_metrics_listener *)&err;
    assert_int_equal(ferry_metrics_listen(m, addr, &l2, &err), FERRY_EIO);
    assert_null(l2);
    assert_non_null(strstr(err.message, "Address already in use"));
    ferry_metrics_listener_stop(l);
    /* stopped: the socket is closed, the port can be bound again */
    assert_int_equal(ferry_metrics_listen(m, addr, &l, &err), 0);
    ferry_metrics_listener_stop(l);
    ferry_metrics_listener_stop(NULL);
    assert_int_equal(ferry_metrics_listener_port(NULL), 0);
    ferry_metrics_destroy(m);
}

static void test_listener_ipv6(void **state) {
    (void)state;
    int p;
    int probe = th_listen_local(AF_INET6, 1, &p);
    if (probe < 0) {
        th_skip("no ::1 on this host");
        return;
    }
    close(probe);
    ferry_metrics *m = full_registry();
    ferry_metrics_listener *l;
    ferry_error err = {0};
    if (ferry_metrics_listen(m, "[::1]:0", &l, &err)) fail_msg("listen: %s", err.message);
    http_reply r = http(AF_INET6, ferry_metrics_listener_port(l), "GET", "/metrics");
    assert_int_equal(r.status, 200);
    free(r.head);
    ferry_metrics_listener_stop(l);
    ferry_metrics_destroy(m);
}

static void test_listen_addresses(void **state) {
    (void)state;
    ferry_metrics *m;
    ferry_error err = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &err), 0);
    const char *bad[] = {"",
                         "127.0.0.1",
                         "127.0.0.1:",
                         "127.0.0.1:65536",
                         "127.0.0.1:123456",
                         "127.0.0.1:-1",
                         "127.0.0.1:80x",
                         "example.com:9464",
                         "[::1:9464",
                         "[zz]:9464",
                         "::1:9464",
                         "256.0.0.1:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ferry_metrics_listener *l = NULL;
        int rc = ferry_metrics_listen(m, bad[i], &l, &err);
        if (rc != FERRY_EINVAL)
            fail_msg("listen \"%s\" gave %s, want FERRY_EINVAL", bad[i], ferry_err_name(rc));
        assert_null(l);
    }
    ferry_metrics_listener *l;
    assert_int_equal(ferry_metrics_listen(m, "localhost:0", &l, &err), 0);
    http_reply r = http(AF_INET, ferry_metrics_listener_port(l), "GET", "/metrics");
    assert_int_equal(r.status, 200);
    free(r.head);
    ferry_metrics_listener_stop(l);
    assert_int_equal(ferry_metrics_listen(NULL, "127.0.0.1:0", &l, &err), FERRY_EINVAL);
    assert_int_equal(ferry_metrics_listen(m, "127.0.0.1:0", NULL, &err), FERRY_EINVAL);
    ferry_metrics_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promtool),
        cmocka_unit_test(test_listener),
        cmocka_unit_test(test_listener_ipv6),
        cmocka_unit_test(test_listen_addresses),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
