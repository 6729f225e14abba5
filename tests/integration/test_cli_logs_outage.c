/* test_cli_logs_outage.c - the JSON lines of `ferry worker` and `ferry relay` while their
 * Redis goes away and comes back, against a private redis-server this test starts, kills
 * (SIGKILL) and restarts on a free port, and the fixture's PostgreSQL:
 *  - worker: worker.redis_lost (warn, with the error's code), worker.error lines (warn, with
 *    code) for the failed reconnects, worker.redis_restored (info, down_ms > 0), then jobs
 *    again; every line one JSON object;
 *  - relay: relay.batch_failed (warn: rows, code, retry_in_ms, reason) for the batch Redis
 *    did not take, then the row published once Redis is back (relay.batch, relay.event). */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>

#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
OB_GROUP_FIXTURE(&db, &rds)

/* ---- a private redis-server ------------------------------------------------------------- */

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

static void srv_start(int port, const char *url) {
    char portv[16];
    snprintf(portv, sizeof portv, "%d", port);
    const char *argv[] = {"redis-server", "--port", portv,   "--bind",    "127.0.0.1", "--save", "",
                          "--appendonly", "no",     "--dir", th_tmpdir(), NULL};
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

/* ---- logs ------------------------------------------------------------------------------- */

typedef struct log_want {
    const char *path, *needle;
} log_want;

static int log_has(void *arg) {
    log_want *w = arg;
    return th_file_contains(w->path, w->needle);
}

static int completed_twice(void *arg) {
    log_want *w = arg;
    char *s = th_slurp(w->path);
    const char *first = strstr(s, w->needle);
    int yes = first && strstr(first + 1, w->needle);
    free(s);
    return yes;
}

static void wait_log(const char *path, const char *needle, int ms) {
    log_want w = {path, needle};
    if (!th_wait_until(log_has, &w, ms)) {
        char *s = th_slurp(path);
        fail_msg("no '%s' in %s within %d ms:\n%s", needle, path, ms, s);
    }
}

/* Every line an object (but the job commands' "[job ...]" lines); returns them all. */
static json_t *json_log(const char *log) {
    json_t *all = json_array();
    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len && strncmp(p, "[job ", 5)) {
            json_error_t je;
            json_t *o = json_loadb(p, len, 0, &je);
            if (!json_is_object(o) || !json_string_value(json_object_get(o, "event")))
                fail_msg("not a JSON event line (%s): %.*s", je.text, (int)len, p);
            json_array_append_new(all, o);
        }
        p += len + (nl ? 1 : 0);
    }
    return all;
}

static json_t *find_event(json_t *all, const char *event, const char *log) {
    size_t i;
    json_t *o;
    json_array_foreach(all, i, o) {
        if (!strcmp(json_string_value(json_object_get(o, "event")), event)) return o;
    }
    fail_msg("no %s line in:\n%s", event, log);
    return NULL;
}

static const char *str(json_t *o, const char *key) {
    const char *v = json_string_value(json_object_get(o, key));
    if (!v) fail_msg("member %s missing or not a string", key);
    return v;
}

/* ---- tests ------------------------------------------------------------------------------ */

static void add_job(const char *url, const char *p, const char *q) {
    cli_run r;
    CLI(r, "queue", "add", q, "text", "{}", "--redis", url, "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
}

static void test_worker_outage_lines(void **state) {
    (void)state;
    int port = free_port();
    char url[64], p[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    snprintf(p, sizeof p, "%s", th_prefix());
    srv_start(port, url);
    char errp[200], outp[200];
    snprintf(errp, sizeof errp, "%s/wk.err", th_tmpdir());
    snprintf(outp, sizeof outp, "%s/wk.out", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("worker", "lo", "--redis", url, "--prefix", p, "--log-format",
                                   "json", "--no-dead-letters", "--", cli_job_script()),
                          NULL, NULL, outp, errp);
    add_job(url, p, "lo");
    wait_log(errp, "\"outcome\":\"completed\"", 15000);
    srv_stop();
    wait_log(errp, "\"event\":\"worker.redis_lost\"", 15000);
    wait_log(errp, "\"event\":\"worker.error\"", 15000); /* a failed reconnect */
    srv_start(port, url);
    wait_log(errp, "\"event\":\"worker.redis_restored\"", 15000);
    add_job(url, p, "lo"); /* (the new server is empty: its job id is 1 again) */
    log_want two = {errp, "\"outcome\":\"completed\""};
    if (!th_wait_until(completed_twice, &two, 15000)) fail_msg("no second job line");
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d:\n%s", code, log);
    json_t *all = json_log(log);
    json_t *lost = find_event(all, "worker.redis_lost", log);
    assert_string_equal(str(lost, "level"), "warn");
    assert_true(!strncmp(str(lost, "code"), "FERRY_E", 7));
    json_t *err = find_event(all, "worker.error", log);
    assert_string_equal(str(err, "level"), "warn");
    assert_true(!strncmp(str(err, "code"), "FERRY_E", 7));
    json_t *back = find_event(all, "worker.redis_restored", log);
    assert_string_equal(str(back, "level"), "info");
    assert_true(json_integer_value(json_object_get(back, "down_ms")) > 0);
    json_decref(all);
    free(log);
    srv_stop();
}

static void test_relay_batch_failed_line(void **state) {
    (void)state;
    int port = free_port();
    char url[64], p[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    snprintf(p, sizeof p, "%s", th_prefix());
    srv_start(port, url);
    const char *schema = ob_schema(db);
    const char *routes = ob_file("lo.routes", "lo.placed loq:text\n");
    char errp[200], outp[200];
    snprintf(errp, sizeof errp, "%s/relay.err", th_tmpdir());
    snprintf(outp, sizeof outp, "%s/relay.out", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("relay", "--routes", routes, "--schema", schema, "--database",
                                   th_env_require("DATABASE_URL"), "--redis", url, "--prefix", p,
                                   "--log-format", "json", "--log-events", "--max-backoff", "500"),
                          NULL, NULL, outp, errp);
    wait_log(errp, "\"event\":\"relay.log\",\"msg\":\"started", 15000);
    srv_stop();
    char id[37];
    ob_append(db, schema, "lo.placed", "{}", "trace-outage-1", 1, id);
    wait_log(errp, "\"event\":\"relay.batch_failed\"", 20000);
    srv_start(port, url);
    wait_log(errp, id, 20000); /* its relay.event line: published once Redis is back */
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("relay exit %d:\n%s", code, log);
    json_t *all = json_log(log);
    json_t *f = find_event(all, "relay.batch_failed", log);
    assert_string_equal(str(f, "level"), "warn");
    assert_int_equal(json_integer_value(json_object_get(f, "rows")), 1);
    assert_true(!strncmp(str(f, "code"), "FERRY_E", 7));
    assert_true(json_integer_value(json_object_get(f, "retry_in_ms")) > 0);
    assert_true(strlen(str(f, "reason")) > 0);
    json_t *ev = find_event(all, "relay.event", log);
    assert_string_equal(str(ev, "id"), id);
    assert_string_equal(str(ev, "trace_id"), "trace-outage-1");
    assert_int_equal(
        ob_ll(db, "SELECT attempts FROM %s.outbox_events WHERE id = '%s'", schema, id) >= 1, 1);
    json_decref(all);
    free(log);
    srv_stop();
}

static int teardown(void **state) {
    (void)state;
    srv_stop();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_worker_outage_lines, teardown),
        cmocka_unit_test_teardown(test_relay_batch_failed_line, teardown),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
