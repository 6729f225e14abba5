/* test_cli_worker_logs.c - what `ferry worker` writes about itself, and its start-up while
 * Redis is not there yet, against private redis-server processes this test starts and
 * stops on free ports (the fixture's server is left alone):
 *  - every line the worker writes itself starts with a UTC timestamp with milliseconds
 *    (text outcome lines too), JSON outcome lines lead with a "time" member;
 *  - a worker started before its Redis logs each try, then runs once the server is up;
 *    after an outage it logs one "lost" and one "restored" line (two lanes);
 *  - --connect-timeout ends it with exit 1, its last try cut to the time left; a wrong
 *    password exits 1 at once;
 *  - a maxmemory-policy that may evict keys is warned about at start, noeviction is not;
 *  - a queue name with a newline is escaped in the start and stop lines. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/cli.h"
#include "support/th.h"

/* ---- a private redis-server ----------------------------------------------------------- */

static pid_t srv_pid;

static int free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0)
        fail_msg("no free port: %s", strerror(errno));
    close(s);
    return ntohs(a.sin_port);
}

static int ping_ok(void *arg) {
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = arg;
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(&o, NULL, &c, &e) != 0) return 0;
    ferry__conn_close(c);
    return 1;
}

/* redis-server on `port` (no persistence), with extra "--name value" pairs; waits until it
 * answers on `url` (which may carry the password it is given). */
static void srv_start(int port, const char *url, const char *const *extra) {
    char portv[16];
    snprintf(portv, sizeof portv, "%d", port);
    const char *argv[32] = {"redis-server", "--port", portv,      "--bind",
                            "127.0.0.1",    "--save", "",         "--appendonly",
                            "no",           "--dir",  th_tmpdir()};
    int k = 11;
    for (int i = 0; extra && extra[i]; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(&srv_pid, "redis-server", &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) fail_msg("cannot start redis-server: %s", strerror(rc));
    if (!th_wait_until(ping_ok, (void *)url, 15000)) fail_msg("redis-server did not come up");
}

static void srv_stop(void) {
    if (srv_pid <= 0) return;
    kill(srv_pid, SIGKILL);
    waitpid(srv_pid, NULL, 0);
    srv_pid = 0;
}

/* ---- the worker and its log ------------------------------------------------------------ */

static pid_t wk_pid;
static char wk_err[200];

static pid_t wk_start(const char *url, const char *queue, const char *const *extra) {
    static int n;
    char outp[200];
    snprintf(wk_err, sizeof wk_err, "%s/logs%d.err", th_tmpdir(), n);
    snprintf(outp, sizeof outp, "%s/logs%d.out", th_tmpdir(), n++);
    const char *argv[40] = {"worker", queue, "--redis", url, "--prefix", "logs"};
    int k = 6;
    for (int i = 0; extra && extra[i]; i++)
        argv[k++] = extra[i];
    argv[k++] = "--";
    argv[k++] = cli_job_script();
    argv[k] = NULL;
    wk_pid = cli_start(argv, NULL, NULL, outp, wk_err);
    return wk_pid;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

typedef struct log_want {
    const char *needle;
    int n;
} log_want;

static int log_has(void *arg) {
    log_want *w = arg;
    char *s = th_slurp(wk_err);
    int ok = count_of(s, w->needle) >= w->n;
    free(s);
    return ok;
}

static void wait_log(const char *needle, int n, int ms) {
    log_want w = {needle, n};
    if (!th_wait_until(log_has, &w, ms)) {
        char *s = th_slurp(wk_err);
        fail_msg("no %d x '%s' in the worker's log within %d ms:\n%s", n, needle, ms, s);
    }
}

/* SIGTERM the worker, expect exit 0; returns its log (caller frees). */
static char *wk_stop(void) {
    kill(wk_pid, SIGTERM);
    int code = cli_wait(wk_pid, 30000);
    wk_pid = 0;
    char *log = th_slurp(wk_err);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    return log;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" at s, within a minute of now: 1, else 0. */
static int timestamp_ok(const char *s) {
    int y, mo, d, h, mi, sec, ms;
    char z;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &sec, &ms, &z) != 8 ||
        z != 'Z' || s[23] != 'Z')
        return 0;
    struct tm tm = {.tm_year = y - 1900,
                    .tm_mon = mo - 1,
                    .tm_mday = d,
                    .tm_hour = h,
                    .tm_min = mi,
                    .tm_sec = sec};
    long long t = (long long)timegm(&tm), now = (long long)time(NULL);
    return t > now - 600 && t <= now + 1;
}

/* Every line of the log: "<timestamp> ferry worker: ..." (or, with json, an outcome object
 * whose first member is "time"), but for the job commands' own stderr ("[job ID] ...").
 * Returns the number of lines. */
static int expect_all_timestamped(const char *log, int json_outcomes) {
    int lines = 0;
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        lines++;
        if (!strncmp(line, "[job ", 5)) {
            /* the job command's own stderr, passed through as it wrote it */
        } else if (json_outcomes && line[0] == '{') {
            json_error_t je;
            json_t *o = json_loads(line, 0, &je);
            const char *first = o ? json_object_iter_key(json_object_iter(o)) : NULL;
            const char *t = o ? json_string_value(json_object_get(o, "time")) : NULL;
            if (!first || strcmp(first, "time") || !t || !timestamp_ok(t))
                fail_msg("JSON line without a leading time member: %s\nlog:\n%s", line, log);
            json_decref(o);
        } else if (!timestamp_ok(line) || strncmp(line + 24, " ferry worker: ", 15) != 0) {
            fail_msg("line without a timestamp: %s\nlog:\n%s", line, log);
        }
        p = nl ? nl + 1 : p + len;
    }
    return lines;
}

static int teardown(void **state) {
    (void)state;
    if (wk_pid > 0) {
        kill(wk_pid, SIGKILL);
        waitpid(wk_pid, NULL, 0);
        wk_pid = 0;
    }
    srv_stop();
    return 0;
}

static void add_to(const char *url, const char *q, const char *name) {
    cli_run r;
    CLI(r, "queue", "add", q, name, "{}", "--redis", url, "--prefix", "logs");
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
}

/* ---- tests ----------------------------------------------------------------------------- */

/* Started before its Redis: each try is logged, with its error; once the server is up the
 * worker starts and runs a job; Redis going away and coming back gives one "lost" and one
 * "restored" line for the two lanes and their four connections. Every line is timestamped. */
static void test_waits_for_redis_then_logs_outage(void **state) {
    (void)state;
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    wk_start(url, "wait", CLI_ARGV("--concurrency", "2", "--lanes", "2"));
    wait_log("connect attempt 2 failed", 1, 15000);
    char *log = th_slurp(wk_err);
    assert_non_null(strstr(log, "Connection refused"));
    free(log);
    srv_start(port, url, NULL);
    wait_log(" started", 1, 15000);
    wait_log("connected at attempt", 1, 1000);
    add_to(url, "wait", "echo");
    wait_log("outcome=completed", 1, 15000);

    srv_stop();
    wait_log("Redis connection lost", 1, 15000);
    struct timespec ts = {1, 500000000L}; /* several failed reconnect attempts */
    nanosleep(&ts, NULL);
    srv_start(port, url, NULL);
    wait_log("Redis connection restored", 1, 15000);
    add_to(url, "wait", "echo");
    wait_log("outcome=completed", 2, 15000);
    ts.tv_sec = 2; /* every lane's connections in use again (drain delay, stalled checks) */
    ts.tv_nsec = 0;
    nanosleep(&ts, NULL);
    log = wk_stop();
    expect_all_timestamped(log, 0);
    if (count_of(log, "Redis connection lost") != 1 ||
        count_of(log, "Redis connection restored") != 1)
        fail_msg("expected one lost and one restored line; log:\n%s", log);
    assert_non_null(strstr(log, "queue=wait stopped"));
    free(log);
}

/* JSON outcome lines lead with "time"; the worker's other lines are timestamped text. */
static void test_json_outcome_has_time(void **state) {
    (void)state;
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    srv_start(port, url, NULL);
    add_to(url, "json", "echo");
    add_to(url, "json", "transient");
    wk_start(url, "json", CLI_ARGV("--log-format", "json"));
    wait_log("\"outcome\":\"completed\"", 1, 15000);
    wait_log("\"outcome\":\"failed\"", 1, 15000);
    char *log = wk_stop();
    expect_all_timestamped(log, 1);
    free(log);
}

/* --connect-timeout: exit 1, saying so, after about that long. */
static void test_connect_timeout(void **state) {
    (void)state;
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", free_port());
    long long t0 = th_mono_ms();
    wk_start(url, "q", CLI_ARGV("--connect-timeout", "800"));
    int code = cli_wait(wk_pid, 20000);
    long long took = th_mono_ms() - t0;
    wk_pid = 0;
    char *log = th_slurp(wk_err);
    if (code != 1 || !strstr(log, "cannot connect within --connect-timeout 800 ms"))
        fail_msg("exit %d after %lld ms; log:\n%s", code, took, log);
    assert_true(took >= 800);
    expect_all_timestamped(log, 0);
    free(log);
}

/* A server that accepts and never answers: each try waits its whole command timeout, but
 * the last one only for what is left of --connect-timeout. Without that cut the second
 * try would start at about 2.1 s and end at about 4.1 s; the bound below has 1 s to spare
 * for a slow machine. */
static void test_connect_timeout_cuts_last_try(void **state) {
    (void)state;
    int port, lfd = th_listen_local(AF_INET, 16, &port); /* never accepted: the kernel does it */
    assert_true(lfd >= 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    long long t0 = th_mono_ms();
    wk_start(url, "q", CLI_ARGV("--connect-timeout", "2500", "--command-timeout", "2000"));
    int code = cli_wait(wk_pid, 20000);
    long long took = th_mono_ms() - t0;
    wk_pid = 0;
    close(lfd);
    char *log = th_slurp(wk_err);
    if (code != 1 || !strstr(log, "cannot connect within --connect-timeout 2500 ms") ||
        took < 2500 || took >= 3500)
        fail_msg("exit %d after %lld ms; log:\n%s", code, took, log);
    free(log);
}

/* Usage errors and warnings before the start are lines of the worker's log too: each has its
 * timestamp (a bad option, a credential file others can read, a bad --pass-env name). */
static void test_usage_errors_timestamped(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/url-readable", th_tmpdir());
    th_write_file(path, "redis://127.0.0.1:1\n", 0644);
    const char *const cases[][9] = {
        {"worker", "q", "--concurrency", "0", "--", "/bin/true", NULL},
        {"worker", "q", "--redis-url-file", path, "--connect-timeout", "1", "--", "/bin/true"},
        {"worker", "q", "--pass-env", "HOME", "--", "/bin/true", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_run r;
        cli_exec_env(&r, NULL, NULL, cases[i]);
        if (r.code == 0 || !r.err[0]) fail_msg("case %zu: exit %d, stderr %s", i, r.code, r.err);
        expect_all_timestamped(r.err, 0);
        cli_run_free(&r);
    }
}

/* A wrong password is not retried: exit 1 at once with the server's refusal. */
static void test_auth_failure_exits_at_once(void **state) {
    (void)state;
    int port = free_port();
    char good[96], bad[96];
    snprintf(good, sizeof good, "redis://:s3cret@127.0.0.1:%d", port);
    snprintf(bad, sizeof bad, "redis://:wrong-one@127.0.0.1:%d", port);
    srv_start(port, good, CLI_ARGV("--requirepass", "s3cret"));
    wk_start(bad, "q", NULL);
    int code = cli_wait(wk_pid, 10000);
    wk_pid = 0;
    char *log = th_slurp(wk_err);
    if (code != 1 || !strstr(log, "WRONGPASS") || strstr(log, "connect attempt") ||
        strstr(log, "wrong-one"))
        fail_msg("exit %d; log:\n%s", code, log);
    expect_all_timestamped(log, 0);
    free(log);
}

/* A maxmemory-policy that may evict job keys is warned about at start; noeviction is not. */
static void test_eviction_policy_warning(void **state) {
    (void)state;
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    srv_start(port, url, CLI_ARGV("--maxmemory-policy", "allkeys-lru"));
    wk_start(url, "q", NULL);
    wait_log(" started", 1, 15000);
    char *log = wk_stop();
    if (!strstr(log, "warning: worker q: Redis maxmemory-policy is allkeys-lru"))
        fail_msg("no eviction warning; log:\n%s", log);
    expect_all_timestamped(log, 0);
    free(log);

    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = url;
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(&o, NULL, &c, &e) != 0) fail_msg("%s", e.message);
    redisReply *rep = th_cmd(c, "CONFIG SET maxmemory-policy noeviction");
    freeReplyObject(rep);
    ferry__conn_close(c);
    wk_start(url, "q", NULL);
    wait_log(" started", 1, 15000);
    log = wk_stop();
    if (strstr(log, "maxmemory-policy")) fail_msg("warning under noeviction; log:\n%s", log);
    free(log);
}

/* A queue name holding a newline (a Node producer can make one) cannot forge a line. */
static void test_queue_name_escaped(void **state) {
    (void)state;
    int port = free_port();
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    srv_start(port, url, NULL);
    wk_start(url, "q\nfake line", NULL);
    wait_log(" started", 1, 15000);
    char *log = wk_stop();
    int lines = expect_all_timestamped(log, 0);
    if (!strstr(log, "queue=q\\nfake line redis=") || !strstr(log, "queue=q\\nfake line stopped"))
        fail_msg("queue name not escaped; log:\n%s", log);
    assert_int_equal(lines, cli_lines(log));
    free(log);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_waits_for_redis_then_logs_outage, teardown),
        cmocka_unit_test_teardown(test_json_outcome_has_time, teardown),
        cmocka_unit_test_teardown(test_connect_timeout, teardown),
        cmocka_unit_test_teardown(test_connect_timeout_cuts_last_try, teardown),
        cmocka_unit_test_teardown(test_auth_failure_exits_at_once, teardown),
        cmocka_unit_test_teardown(test_eviction_policy_warning, teardown),
        cmocka_unit_test_teardown(test_queue_name_escaped, teardown),
        cmocka_unit_test_teardown(test_usage_errors_timestamped, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
