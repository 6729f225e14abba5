/* test_outbox_relay_log.c - what `ferry relay` and the relay library say, against real
 * PostgreSQL and Redis:
 *  - every line the relay writes starts with a UTC timestamp: the start line, the library's
 *    lines, the signal notice, the exit summary, start failures (database unreachable, a
 *    routes file that cannot be read);
 *  - under a Redis maxmemory-policy other than noeviction the relay warns at start, through
 *    the log callback (a C program running ferry_relay sees it), and not under noeviction;
 *  - `ferry relay --help` shows no test-only variable;
 *  - user-supplied names (a routes path, a schema) with control characters are printed
 *    escaped, on one line. */
#include <pthread.h>

#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
static char saved_policy[64];

OB_GROUP_FIXTURE(&db, &rds)

static void policy_set(const char *policy) {
    if (!saved_policy[0]) {
        redisReply *r = th_cmd(rds, "CONFIG GET maxmemory-policy");
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 2);
        snprintf(saved_policy, sizeof saved_policy, "%s", r->element[1]->str);
        freeReplyObject(r);
    }
    freeReplyObject(th_cmd(rds, "CONFIG SET maxmemory-policy %s", policy));
}

/* Each test's teardown: the server's policy as it was. */
static int policy_restore(void **state) {
    (void)state;
    if (saved_policy[0])
        freeReplyObject(th_cmd(rds, "CONFIG SET maxmemory-policy %s", saved_policy));
    saved_policy[0] = '\0';
    return 0;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ ferry relay: " at the start of every line of text. */
static void expect_timestamped(const char *what, const char *text) {
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ferry relay: ";
    int lines = 0;
    for (const char *line = text; *line;) {
        for (size_t i = 0; i < sizeof shape - 1; i++) {
            char c = line[i];
            int ok = shape[i] == 'd' ? c >= '0' && c <= '9' : c == shape[i];
            if (!ok) fail_msg("%s: a line without a timestamp:\n%s", what, text);
        }
        lines++;
        const char *nl = strchr(line, '\n');
        if (!nl) fail_msg("%s: a line without its newline:\n%s", what, text);
        line = nl + 1;
    }
    if (!lines) fail_msg("%s: no output", what);
}

static void run_relay_once(const char *schema, const char *routes, char **log) {
    ob_relay rl;
    ob_relay_start(&rl, schema, th_prefix(), routes,
                   (const char *const[]){"--retention-days", "0", NULL}, NULL);
    if (!ob_relay_wait_log(&rl, "info: started", 20000))
        OB_FAIL_LOG(&rl, "the relay did not start");
    ob_relay_stop(&rl);
    *log = th_slurp(rl.log);
}

static void test_relay_lines_timestamped_and_eviction_warned(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    const char *routes = ob_file("log.routes", "order.placed q:j\n");
    char *log = NULL;

    policy_set("allkeys-lru");
    run_relay_once(schema, routes, &log);
    expect_timestamped("relay under allkeys-lru", log);
    const char *want = "ferry relay: warning: Redis maxmemory-policy is allkeys-lru: when Redis "
                       "is full it may evict job keys";
    if (!strstr(log, want)) fail_msg("no eviction warning:\n%s", log);
    const char *lines[] = {"ferry relay: database ferry@127.0.0.1:", "ferry relay: info: started",
                           "ferry relay: SIGTERM received", "ferry relay: info: stopped",
                           "ferry relay: exiting: "};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (!strstr(log, lines[i])) fail_msg("no '%s' line:\n%s", lines[i], log);
    free(log);

    policy_set("noeviction");
    run_relay_once(schema, routes, &log);
    expect_timestamped("relay under noeviction", log);
    if (strstr(log, "maxmemory")) fail_msg("a warning under noeviction:\n%s", log);
    free(log);

    /* start failures: no database there (exit 3), a routes file that is not there (exit 2) */
    cli_run r;
    CLI(r, "relay", "--routes", routes, "--schema", schema, "--database",
        "postgresql://127.0.0.1:1/none", "--redis", th_env_require("REDIS_URL"));
    CLI_EXPECT(r, 3);
    expect_timestamped("relay without a database", r.err);
    if (!strstr(r.err, "ferry relay: could not start: database:"))
        fail_msg("no start failure line:\n%s", r.err);
    cli_run_free(&r);
    CLI(r, "relay", "--routes", "/nonexistent/ferry.routes", "--database",
        th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 2);
    expect_timestamped("relay without its routes file", r.err);
    cli_run_free(&r);
}

/* ---- the library: the warning reaches the log callback --------------------------------- */

typedef struct captured {
    pthread_mutex_t mu;
    char text[16384];
    size_t len;
} captured;

static void capture(int level, const char *message, void *ud) {
    captured *c = ud;
    pthread_mutex_lock(&c->mu);
    int n = snprintf(c->text + c->len, sizeof c->text - c->len, "%d %s\n", level, message);
    if (n > 0 && c->len + (size_t)n < sizeof c->text) c->len += (size_t)n;
    pthread_mutex_unlock(&c->mu);
}

typedef struct capture_wait {
    captured *c;
    const char *needle;
} capture_wait;

static int captured_has(void *arg) {
    capture_wait *w = arg;
    pthread_mutex_lock(&w->c->mu);
    int yes = strstr(w->c->text, w->needle) != NULL;
    pthread_mutex_unlock(&w->c->mu);
    return yes;
}

static void *run_thread(void *arg) {
    static ferry_error e;
    return (void *)(intptr_t)ferry_relay_run(arg, &e);
}

static void test_library_eviction_warning_through_callback(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    const char *routes = ob_file("lib.routes", "order.placed q:j\n");
    policy_set("volatile-lru");
    captured cap = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ferry_redis_options ropts = th_redis_options(0);
    ferry_relay_options o;
    ferry_relay_options_init(&o);
    o.database_url = th_env_require("DATABASE_URL");
    o.schema = schema;
    o.routes_file = routes;
    o.redis = &ropts;
    o.prefix = th_prefix();
    o.retention_s = -1;
    o.log = capture;
    o.log_userdata = &cap;
    ferry_relay *relay = NULL;
    ferry_error e = {0};
    if (ferry_relay_create(&o, &relay, &e)) fail_msg("create: %s", e.message);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_thread, relay), 0);
    capture_wait w = {&cap, "relay: started"};
    int started = th_wait_until(captured_has, &w, 20000);
    ferry_relay_stop(relay);
    void *rc = NULL;
    pthread_join(t, &rc);
    ferry_relay_free(relay);
    if (!started) fail_msg("the relay did not start:\n%s", cap.text);
    assert_int_equal((int)(intptr_t)rc, 0);
    char want[128];
    snprintf(want, sizeof want, "%d relay: Redis maxmemory-policy is volatile-lru", FERRY_LOG_WARN);
    if (!strstr(cap.text, want)) fail_msg("no warning through the callback:\n%s", cap.text);
}

/* ---- help and names -------------------------------------------------------------------- */

static void test_relay_help_has_no_test_variables(void **state) {
    (void)state;
    cli_run r;
    CLI(r, "relay", "--help");
    CLI_EXPECT(r, 0);
    if (strstr(r.out, "FERRY_FAULT") || strstr(r.out, "Test only") || strstr(r.out, "test only"))
        fail_msg("relay --help shows a test-only variable:\n%s", r.out);
    if (!strstr(r.out, "--database-url-file")) fail_msg("relay --help:\n%s", r.out);
    cli_run_free(&r);
}

static void test_names_with_control_characters_escaped(void **state) {
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/no\nsuch\x1b[2J.routes", th_tmpdir());
    const char *shown = "no\\nsuch\\x1b[2J.routes";
    cli_run r;
    CLI(r, "relay", "--routes", path, "--database", th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 2);
    if (cli_lines(r.err) != 1 || !strstr(r.err, shown)) fail_msg("relay: %s", r.err);
    cli_run_free(&r);
    CLI(r, "outbox", "status", "--routes", path, "--database", th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 2);
    if (cli_lines(r.err) != 1 || !strstr(r.err, shown)) fail_msg("outbox status: %s", r.err);
    cli_run_free(&r);
    /* a schema that does not exist, named with a newline and an ESC */
    CLI(r, "outbox", "status", "--schema", "nope\nx\x1b[2J", "--database",
        th_env_require("DATABASE_URL"));
    if (r.code == 0 || cli_lines(r.err) != 1 || !strstr(r.err, "nope\\nx\\x1b[2J"))
        fail_msg("outbox status --schema: exit %d: %s", r.code, r.err);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_relay_lines_timestamped_and_eviction_warned, policy_restore),
        cmocka_unit_test_teardown(test_library_eviction_warning_through_callback, policy_restore),
        cmocka_unit_test(test_relay_help_has_no_test_variables),
        cmocka_unit_test(test_names_with_control_characters_escaped),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
