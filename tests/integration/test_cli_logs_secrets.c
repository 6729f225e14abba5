/* test_cli_logs_secrets.c - no payload, job data, return value or password in the logs of
 * `ferry worker` and `ferry relay`, in both --log-format text and json, against the
 * fixture's Redis (its ACL user, whose password is in the URL) and PostgreSQL (trust
 * authentication: a password in the URL is accepted and ignored):
 *  - a relay with passwords in both URLs publishes a row, sets one aside (too large), reports
 *    an unknown topic (--log-events on): each row's payload holds a marker;
 *  - a relay whose database does not exist fails to start (exit 3);
 *  - a worker with the password in its Redis URL and dead letters recorded through a
 *    database URL with a password runs jobs whose data holds a marker and whose command
 *    prints a marked return value: completed, transient, permanent (a final failure);
 *  - a worker with a wrong password (exit 1) and one whose Redis is not there
 *    (--connect-timeout: every retry logged, exit 1);
 * and neither marker nor password (as written or percent-decoded) is anywhere in their
 * stdout or stderr, while the lines show that the runs did happen. */
#include "support/ob.h"

static PGconn *db;
static ferry_conn *rds;
OB_GROUP_FIXTURE(&db, &rds)

#define PAYLOAD_MARK "PAYLOAD-c0ffee-77"
#define RETVAL_MARK "RETVAL-c0ffee-88"
#define PG_PW "PgS3cr3t-logs-41"
#define WRONG_PW "Wr0ngPw-logs-93"

static char prefix[64];
static char db_url[512];    /* DATABASE_URL with PG_PW as the password */
static char bad_db[512];    /* the same for a database that does not exist */
static char wrong_url[512]; /* the ACL user with WRONG_PW */

/* DATABASE_URL ("postgresql://user[:pw]@host:port/db?...") with password pw and, when
 * dbname is not NULL, that database. */
static void url_with_password(char *out, size_t cap, const char *pw, const char *dbname) {
    const char *base = th_env_require("DATABASE_URL");
    const char *p = strstr(base, "://");
    if (!p) fail_msg("DATABASE_URL is not a URL");
    p += 3;
    const char *at = strchr(p, '@');
    if (!at) fail_msg("DATABASE_URL has no user");
    size_t ulen = strcspn(p, ":@");
    const char *host = at + 1, *slash = strchr(host, '/');
    size_t hlen = slash ? (size_t)(slash - host) : strlen(host);
    snprintf(out, cap, "postgresql://%.*s:%s@%.*s/%s", (int)ulen, p, pw, (int)hlen, host,
             dbname ? dbname : (slash ? slash + 1 : ""));
}

/* Fail when any secret or marker is in text (what = which run, for the message). */
static void expect_clean(const char *what, const char *text) {
    const char *const secrets[] = {PAYLOAD_MARK,
                                   RETVAL_MARK,
                                   PG_PW,
                                   WRONG_PW,
                                   th_env_require("REDIS_ACL_PASSWORD"), /* secret@pw */
                                   "secret%40pw"};
    for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
        if (strstr(text, secrets[i]))
            fail_msg("%s: '%s' is in the output:\n%s", what, secrets[i], text);
}

static const char *out_path(const char *name) {
    static char paths[4][256];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", th_tmpdir(), name);
    return p;
}

/* stdout + stderr of a finished run, checked clean; returns stderr (caller frees). */
static char *collect(const char *what, const char *out, const char *err) {
    char *o = th_slurp(out), *e = th_slurp(err);
    expect_clean(what, o);
    expect_clean(what, e);
    free(o);
    return e;
}

/* ---- relay ------------------------------------------------------------------------------ */

static void relay_run(const char *format) {
    const char *schema = ob_schema(db);
    const char *routes = ob_file("sec.routes", "sec.placed secq:text\n");
    char a[37], big[37], stray[37];
    ob_append(db, schema, "sec.placed", "{\"card\":\"" PAYLOAD_MARK "\"}", "trace-sec-1", 1, a);
    char payload[3000];
    snprintf(payload, sizeof payload, "{\"card\":\"" PAYLOAD_MARK "\",\"pad\":\"%02000d\"}", 0);
    ob_append(db, schema, "sec.placed", payload, NULL, 1, big);
    ob_append(db, schema, "sec.nowhere", "{\"card\":\"" PAYLOAD_MARK "\"}", NULL, 1, stray);
    const char *out = out_path("relay.out"), *err = out_path("relay.err");
    pid_t pid =
        cli_start(CLI_ARGV("relay", "--routes", routes, "--schema", schema, "--database", db_url,
                           "--redis", th_env_require("REDIS_ACL_URL"), "--prefix", prefix,
                           "--log-format", format, "--log-events", "--max-envelope", "1024"),
                  NULL, NULL, out, err);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL OR "
             "quarantined_at IS NOT NULL",
             schema);
    long long last = 0;
    int done = ob_wait_count(db, sql, 2, 1, 30000, &last);
    th_log_arg w = {err, a}; /* its relay.event line: the batch is logged */
    int logged = done && th_wait_until(th_log_has, &w, 20000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    char *log = collect(format, out, err);
    if (!done || !logged || code != 0)
        fail_msg("relay (%s): %lld rows handled, exit %d:\n%s", format, last, code, log);
    /* what the lines had to say is there */
    if (!strstr(log, big) || !strstr(log, "sec.nowhere") || !strstr(log, "trace-sec-1"))
        fail_msg("relay (%s): a line is missing:\n%s", format, log);
    free(log);
}

static void test_relay_logs_clean(void **state) {
    (void)state;
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    relay_run("text");
    relay_run("json");
    /* start failure: the database does not exist */
    const char *routes = ob_file("sec2.routes", "sec.placed secq:text\n");
    for (int json = 0; json < 2; json++) {
        const char *out = out_path("relay.out"), *err = out_path("relay.err");
        pid_t pid = cli_start(CLI_ARGV("relay", "--routes", routes, "--database", bad_db, "--redis",
                                       th_env_require("REDIS_ACL_URL"), "--log-format",
                                       json ? "json" : "text"),
                              NULL, NULL, out, err);
        int code = cli_wait(pid, 30000);
        char *log = collect("relay start failure", out, err);
        if (code != 3 || !strstr(log, "could not start")) fail_msg("exit %d:\n%s", code, log);
        free(log);
    }
}

/* ---- worker ----------------------------------------------------------------------------- */

/* The job command: reads its data; by job name completes with a marked return value, fails
 * transiently or permanently with a plain reason. */
static const char *job_script(void) {
    static char path[200];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/sec-job.sh", th_tmpdir());
        th_write_file(path,
                      "#!/bin/sh\n"
                      "cat > /dev/null\n"
                      "case \"$FERRY_JOB_NAME\" in\n"
                      "  ok) echo '{\"receipt\":\"" RETVAL_MARK "\"}' ;;\n"
                      "  transient) echo 'gateway down' >&2; exit 75 ;;\n"
                      "  *) echo 'refused' >&2; exit 65 ;;\n"
                      "esac\n",
                      0755);
    }
    return path;
}

static void worker_run(const char *format) {
    const char *q = "secw";
    const char *data = "{\"traceId\":\"trace-sec-2\",\"card\":\"" PAYLOAD_MARK "\"}";
    char ok[64], tr[64], perm[64];
    cli_add_job(prefix, q, "ok", data, "{}", ok, sizeof ok);
    cli_add_job(prefix, q, "transient", data, "{\"attempts\":2}", tr, sizeof tr);
    cli_add_job(prefix, q, "perm", data, "{}", perm, sizeof perm);
    const char *schema = ob_schema(db); /* where the final failure is recorded */
    const char *out = out_path("worker.out"), *err = out_path("worker.err");
    pid_t pid = cli_start(CLI_ARGV("worker", q, "--redis", th_env_require("REDIS_ACL_URL"),
                                   "--prefix", prefix, "--log-format", format, "--max-jobs", "4",
                                   "--database", db_url, "--schema", schema, "--", job_script()),
                          NULL, NULL, out, err);
    int code = cli_wait(pid, 60000);
    char *log = collect(format, out, err);
    if (code != 0) fail_msg("worker (%s) exit %d:\n%s", format, code, log);
    if (!strstr(log, "trace-sec-2") || !strstr(log, "gateway down") || !strstr(log, "refused") ||
        !strstr(log, "dead letters"))
        fail_msg("worker (%s): a line is missing:\n%s", format, log);
    /* the final failure reached the database (so the recorder's path ran) */
    long long last = 0;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.dead_letters", schema);
    if (!ob_wait_count(db, sql, 2, 1, 10000, &last))
        fail_msg("worker (%s): %lld dead letters, want 2:\n%s", format, last, log);
    free(log);
}

static void worker_fails(const char *format) {
    /* a wrong password: exit 1 at once */
    const char *out = out_path("worker.out"), *err = out_path("worker.err");
    pid_t pid = cli_start(CLI_ARGV("worker", "secw", "--redis", wrong_url, "--log-format", format,
                                   "--no-dead-letters", "--", job_script()),
                          NULL, NULL, out, err);
    int code = cli_wait(pid, 30000);
    char *log = collect("wrong password", out, err);
    if (code != 1) fail_msg("wrong password (%s): exit %d:\n%s", format, code, log);
    free(log);
    /* nobody listening: every try logged, then exit 1 */
    char gone[256];
    snprintf(gone, sizeof gone, "redis://ferry:%s@127.0.0.1:1/0",
             "secret%40pw"); /* port 1: refused */
    pid = cli_start(CLI_ARGV("worker", "secw", "--redis", gone, "--log-format", format,
                             "--connect-timeout", "400", "--no-dead-letters", "--", job_script()),
                    NULL, NULL, out, err);
    code = cli_wait(pid, 30000);
    log = collect("no server", out, err);
    if (code != 1 || !strstr(log, "127.0.0.1:1"))
        fail_msg("no server (%s): exit %d:\n%s", format, code, log);
    free(log);
}

static void test_worker_logs_clean(void **state) {
    (void)state;
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    worker_run("text");
    worker_run("json");
    worker_fails("text");
    worker_fails("json");
}

static int setup(void **state) {
    ob_group_setup(state);
    url_with_password(db_url, sizeof db_url, PG_PW, NULL);
    url_with_password(bad_db, sizeof bad_db, PG_PW, "ferry_no_such_db_logs");
    const char *acl = th_env_require("REDIS_ACL_URL"); /* redis://ferry:secret%40pw@host:port */
    const char *at = strrchr(acl, '@');
    if (!at) fail_msg("REDIS_ACL_URL has no password");
    snprintf(wrong_url, sizeof wrong_url, "redis://ferry:%s%s", WRONG_PW, at);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relay_logs_clean),
        cmocka_unit_test(test_worker_logs_clean),
    };
    return cmocka_run_group_tests(tests, setup, ob_group_teardown);
}
