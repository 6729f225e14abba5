/* test_redis_acl.c - the ACL lines of docs/redis-connection.md ("Redis ACL") work as
 * documented. The lines are read from the doc itself (so doc and test cannot drift apart),
 * given this test's own user names, password and key prefix, and set on the fixture's Redis;
 * then the real binaries run each role through those users: a producer adds and reads jobs, a
 * scheduler upserts a job scheduler, a worker processes the job and the scheduler's
 * iterations (lock renewal and stalled checks included), the relay publishes an outbox row,
 * an admin pauses, resumes and obliterates. ACL LOG must then hold no refusal for the minimal
 * lines other than the optional commands the doc names. A user missing one piece gets a clear
 * error, promptly: NOPERM naming the command (exit 1, or the worker's error line), never a hang.
 * Every user is deleted at the end, also after a failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ob.h"

#define ROLES 5
static const char *const role_names[ROLES] = {"producer", "worker", "scheduler", "relay", "admin"};
enum { PRODUCER, WORKER, SCHEDULER, RELAY, ADMIN };

#define RULES_MAX 96
typedef struct {
    char *rules[RULES_MAX]; /* the doc's tokens after the user name (owned) */
    int n;
} acl_line;

static acl_line lines[ROLES];
static acl_line extras[ROLES]; /* the doc's optional additions (may be empty) */
static char prefix[64];
static char password[64];
static PGconn *db;
static ferry_conn *rds;
static char created[16][64]; /* users to delete at the end */
static int ncreated;

static void user_name(char *out, size_t cap, const char *tag) {
    snprintf(out, cap, "ft%ld-%s", (long)getpid(), tag);
}

/* Split the doc's `ACL SETUSER ferry-<role> ...` lines (first line of a role = its minimal
 * line, a later one = its optional additions). */
static void read_doc(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/redis-connection.md", getenv("FERRY_SOURCE_DIR"));
    char *text = th_slurp(path);
    if (!text) fail_msg("cannot read %s", path);
    const char *sec = strstr(text, "\n## Redis ACL\n");
    if (!sec) fail_msg("%s has no \"## Redis ACL\" section", path);
    for (char *l = strtok(text + (sec - text), "\n"); l; l = strtok(NULL, "\n")) {
        if (strncmp(l, "ACL SETUSER ferry-", 18)) continue;
        char *save = NULL, *tok;
        strtok_r(l, " ", &save);    /* ACL */
        strtok_r(NULL, " ", &save); /* SETUSER */
        const char *user = strtok_r(NULL, " ", &save);
        int r = -1;
        for (int i = 0; i < ROLES; i++)
            if (!strcmp(user + 6, role_names[i])) r = i;
        if (r < 0) fail_msg("docs: ACL line for an unknown role: %s", user);
        acl_line *a = lines[r].n ? &extras[r] : &lines[r];
        while ((tok = strtok_r(NULL, " ", &save))) {
            if (a->n == RULES_MAX) fail_msg("docs: too many rules for %s", user);
            a->rules[a->n++] = strdup(tok);
        }
    }
    free(text);
    for (int i = 0; i < ROLES; i++)
        if (!lines[i].n)
            fail_msg("docs/redis-connection.md: no ACL line for ferry-%s", role_names[i]);
}

/* ACL SETUSER <tag user> reset, then the role's documented rules with this test's password
 * and prefix, minus the rule `without` (NULL: none), plus the extras when asked. */
static void set_user(const char *tag, int role, const char *without, int with_extras) {
    char user[64], pw_rule[80], key_rule[80];
    user_name(user, sizeof user, tag);
    snprintf(pw_rule, sizeof pw_rule, ">%s", password);
    snprintf(key_rule, sizeof key_rule, "~%s:*", prefix);
    const char *argv[3 + 2 * RULES_MAX + 1];
    int argc = 0, dropped = 0;
    argv[argc++] = "ACL";
    argv[argc++] = "SETUSER";
    argv[argc++] = user;
    argv[argc++] = "reset";
    for (int pass = 0; pass < (with_extras ? 2 : 1); pass++) {
        const acl_line *a = pass ? &extras[role] : &lines[role];
        for (int i = 0; i < a->n; i++) {
            const char *t = a->rules[i];
            if (without && !strcmp(t, without)) {
                dropped = 1;
                continue;
            }
            if (!strcmp(t, ">PASSWORD"))
                t = pw_rule;
            else if (!strcmp(t, "~bull:*"))
                t = key_rule;
            else if (t[0] == '~')
                fail_msg("docs: ferry-%s has a key pattern other than ~bull:*: %s",
                         role_names[role], t);
            argv[argc++] = t;
        }
    }
    if (without && !dropped) fail_msg("docs: ferry-%s has no rule %s", role_names[role], without);
    redisReply *r = NULL;
    ferry_error e = {0};
    if (ferry__conn_command_argv(rds, argc, argv, NULL, &r, &e))
        fail_msg("ACL SETUSER: %s", e.message);
    if (r->type != REDIS_REPLY_STATUS) fail_msg("ACL SETUSER %s: %s", user, r->str ? r->str : "?");
    freeReplyObject(r);
    int known = 0;
    for (int i = 0; i < ncreated; i++)
        known |= !strcmp(created[i], user);
    if (!known && ncreated < 16) snprintf(created[ncreated++], sizeof created[0], "%s", user);
}

/* redis://<user>:<password>@127.0.0.1:<port> (static storage per slot) */
static const char *user_url(const char *tag) {
    static char urls[4][256];
    static int slot;
    char user[64];
    user_name(user, sizeof user, tag);
    char *u = urls[slot++ % 4];
    snprintf(u, sizeof urls[0], "redis://%s:%s@127.0.0.1:%s", user, password,
             th_env_require("REDIS_PORT"));
    return u;
}

/* The commands ACL LOG recorded as refused for the user, space-separated (static). */
static const char *refusals(const char *tag) {
    static char out[1024];
    char user[64];
    user_name(user, sizeof user, tag);
    out[0] = 0;
    redisReply *r = th_cmd(rds, "ACL LOG 128");
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        const char *who = NULL, *object = NULL, *reason = NULL;
        for (size_t k = 0; k + 1 < e->elements; k += 2) {
            const char *f = e->element[k]->str, *v = e->element[k + 1]->str;
            if (!f || !v) continue;
            if (!strcmp(f, "username")) who = v;
            if (!strcmp(f, "object")) object = v;
            if (!strcmp(f, "reason")) reason = v;
        }
        if (!who || strcmp(who, user) || !object) continue;
        size_t n = strlen(out);
        snprintf(out + n, sizeof out - n, "%s%s%s", n ? " " : "",
                 reason && !strcmp(reason, "key") ? "key:" : "", object);
    }
    freeReplyObject(r);
    return out;
}

/* Fail unless every refusal is one of the doc's optional commands (its `+cmd` extras). */
static void expect_only_optional_refusals(const char *tag, int role) {
    char list[1024];
    snprintf(list, sizeof list, "%s", refusals(tag));
    char *save = NULL;
    for (char *o = strtok_r(list, " ", &save); o; o = strtok_r(NULL, " ", &save)) {
        int optional = 0;
        for (int i = 0; i < extras[role].n; i++)
            optional |= extras[role].rules[i][0] == '+' && !strcmp(extras[role].rules[i] + 1, o);
        if (!optional)
            fail_msg("ferry-%s as documented was refused '%s' (ACL LOG), not an optional command",
                     role_names[role], o);
    }
}

static void reset_log(void) {
    freeReplyObject(th_cmd(rds, "ACL LOG RESET"));
}

/* Wait for pid up to timeout_ms; on timeout kill it and fail with its stderr (err_path). */
static int wait_or_dump(pid_t pid, int timeout_ms, const char *err_path) {
    long long deadline = th_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (th_mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            char *e = th_slurp(err_path);
            fail_msg("ferry (pid %d) still running after %d ms; stderr:\n%s", (int)pid, timeout_ms,
                     e);
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void ok_run(cli_run *r) {
    CLI_EXPECT(*r, 0);
    cli_run_free(r);
}

/* ---- the roles, as documented ------------------------------------------------------------ */

static void test_producer(void **state) {
    (void)state;
    reset_log();
    set_user("producer", PRODUCER, NULL, 0);
    const char *u = user_url("producer");
    cli_run r;
    CLI(r, "queue", "add", "aclq", "send", "{\"n\":1}", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "add", "aclq", "send", "{\"n\":2}", "--opts",
        "{\"jobId\":\"acl-2\",\"priority\":3,\"attempts\":2,\"backoff\":{\"type\":\"fixed\","
        "\"delay\":10}}",
        "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "add", "aclq", "later", "{}", "--opts", "{\"delay\":600000}", "--redis", u,
        "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "counts", "aclq", "--json", "--redis", u, "--prefix", prefix);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "\"delayed\":1"));
    cli_run_free(&r);
    CLI(r, "job", "show", "aclq", "acl-2", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    /* the key pattern holds: another prefix is refused (a key refusal, named in ACL LOG) */
    CLI(r, "queue", "add", "aclq", "send", "{}", "--redis", u, "--prefix", "elsewhere");
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "NOPERM"));
    cli_run_free(&r);
    assert_non_null(strstr(refusals("producer"), "key:"));
    reset_log();
    CLI(r, "queue", "counts", "aclq", "--redis", u, "--prefix", prefix); /* a clean log again */
    ok_run(&r);
    expect_only_optional_refusals("producer", PRODUCER);
}

static long long zcard(const char *queue, const char *set) {
    redisReply *r = th_cmd(rds, "ZCARD %s:%s:%s", prefix, queue, set);
    long long n = r->integer;
    freeReplyObject(r);
    return n;
}

static void test_scheduler_and_worker(void **state) {
    (void)state;
    reset_log();
    set_user("scheduler", SCHEDULER, NULL, 0);
    set_user("producer", PRODUCER, NULL, 0);
    set_user("worker", WORKER, NULL, 0);
    cli_run r;
    CLI(r, "scheduler", "upsert", "aclw", "tick", "--every", "300", "--data", "{\"tick\":1}",
        "--redis", user_url("scheduler"), "--prefix", prefix);
    ok_run(&r);
    CLI(r, "scheduler", "list", "aclw", "--json", "--redis", user_url("scheduler"), "--prefix",
        prefix);
    ok_run(&r);
    CLI(r, "queue", "add", "aclw", "slow", "{\"n\":1}", "--redis", user_url("producer"), "--prefix",
        prefix);
    ok_run(&r);
    /* the job outlives its 1 s lock (renewals) while stalled checks run every second; the
     * scheduler's iterations are processed too, each creating the next */
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/worker.out", th_tmpdir());
    snprintf(err, sizeof err, "%s/worker.err", th_tmpdir());
    pid_t pid =
        cli_start(CLI_ARGV("worker", "aclw", "--redis", user_url("worker"), "--prefix", prefix,
                           "--lock-duration", "1000", "--stalled-interval", "1000", "--max-jobs",
                           "4", "--", "/bin/sh", "-c", "cat >/dev/null; sleep 1.5; echo 1"),
                  NULL, NULL, out, err);
    int code = wait_or_dump(pid, 30000, err);
    char *e = th_slurp(err);
    if (code != 0) fail_msg("worker exit %d: %s", code, e);
    assert_null(strstr(e, "NOPERM"));
    assert_null(strstr(e, "error"));
    free(e);
    assert_true(zcard("aclw", "completed") >= 4);
    expect_only_optional_refusals("worker", WORKER);
    expect_only_optional_refusals("scheduler", SCHEDULER);
    expect_only_optional_refusals("producer", PRODUCER);
    /* with the optional additions nothing at all is refused */
    reset_log();
    set_user("worker", WORKER, NULL, 1);
    CLI(r, "queue", "add", "aclw", "one", "{}", "--redis", user_url("producer"), "--prefix",
        prefix);
    ok_run(&r);
    CLI(r, "worker", "aclw", "--redis", user_url("worker"), "--prefix", prefix, "--max-jobs", "1",
        "--", "/bin/cat");
    ok_run(&r);
    assert_string_equal(refusals("worker"), "");
    CLI(r, "scheduler", "remove", "aclw", "tick", "--redis", user_url("scheduler"), "--prefix",
        prefix);
    ok_run(&r);
}

static int job_exists(void *id) {
    redisReply *r = th_cmd(rds, "EXISTS %s:aclr:%s", prefix, (const char *)id);
    int n = (int)r->integer;
    freeReplyObject(r);
    return n == 1;
}

static void test_relay(void **state) {
    (void)state;
    reset_log();
    set_user("relay", RELAY, NULL, 0);
    const char *schema = ob_schema(db);
    const char *routes = ob_file("acl.routes", "acl.placed aclr:placed\n");
    char id[37];
    ob_append(db, schema, "acl.placed", "{\"order\":7}", NULL, 1, id);
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/relay.out", th_tmpdir());
    snprintf(err, sizeof err, "%s/relay.err", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("relay", "--routes", routes, "--schema", schema, "--database",
                                   th_env_require("DATABASE_URL"), "--redis", user_url("relay"),
                                   "--prefix", prefix, "--poll-interval", "50"),
                          NULL, NULL, out, err);
    int published = th_wait_until(job_exists, id, 15000);
    kill(pid, SIGTERM);
    int code = wait_or_dump(pid, 30000, err);
    char *e = th_slurp(err);
    if (!published) fail_msg("the relay did not publish through ferry-relay: %s", e);
    if (code != 0) fail_msg("relay exit %d: %s", code, e);
    assert_null(strstr(e, "NOPERM"));
    free(e);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NOT NULL", schema),
        1);
    expect_only_optional_refusals("relay", RELAY);
}

static void test_admin(void **state) {
    (void)state;
    reset_log();
    set_user("admin", ADMIN, NULL, 0);
    set_user("producer", PRODUCER, NULL, 0);
    /* user_url's strings rotate through a few slots: keep copies */
    char u[256], producer[256];
    snprintf(u, sizeof u, "%s", user_url("admin"));
    snprintf(producer, sizeof producer, "%s", user_url("producer"));
    cli_run r;
    CLI(r, "queue", "add", "acla", "x", "{}", "--redis", producer, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "add", "acla", "x", "{}", "--redis", producer, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "pause", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "resume", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "concurrency", "acla", "2", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "global-rate-limit", "acla", "--max", "5", "--duration", "1000", "--redis", u,
        "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "rate-limit", "acla", "1000", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "rate-limit", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "job", "remove", "acla", "1", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    /* the queue administration commands over many jobs */
    CLI(r, "queue", "add", "acla", "x", "{}", "--opts", "{\"delay\":600000}", "--job-id", "later",
        "--redis", producer, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "add", "acla", "x", "{}", "--opts", "{\"delay\":600000}", "--redis", producer,
        "--prefix", prefix);
    ok_run(&r);
    CLI(r, "job", "promote", "acla", "later", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "promote", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "job", "list", "acla", "--state", "wait", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "job", "logs", "acla", "later", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "retry", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "retry", "acla", "--state", "completed", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "clean", "acla", "--state", "wait", "--grace", "0", "--limit", "1", "--redis",
        u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "drain", "acla", "--delayed", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "list", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "workers", "acla", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "events", "acla", "--count", "5", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "events", "acla", "--from", "0", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "job", "find", "acla", "--data-contains", "x", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    CLI(r, "queue", "obliterate", "acla", "--yes", "--redis", u, "--prefix", prefix);
    ok_run(&r);
    redisReply *k = th_cmd(rds, "EXISTS %s:acla:meta %s:acla:2", prefix, prefix);
    assert_int_equal(k->integer, 0);
    freeReplyObject(k);
    expect_only_optional_refusals("admin", ADMIN);
}

/* ---- a missing piece: a clear error, promptly ---------------------------------------------- */

static void test_missing_command_named(void **state) {
    (void)state;
    cli_run r;
    /* sent by ferry itself: NOPERM names it, exit 1 */
    set_user("short", PRODUCER, "+evalsha", 0);
    CLI(r, "queue", "add", "aclm", "x", "{}", "--redis", user_url("short"), "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_true(r.ms < 20000);
    if (!strstr(r.err, "NOPERM") || !strstr(r.err, "evalsha")) fail_msg("unclear error: %s", r.err);
    cli_run_free(&r);
    /* called inside a script: refused (Redis does not name it; ACL LOG does), exit 1 */
    reset_log();
    set_user("short", PRODUCER, "+xadd", 0);
    CLI(r, "queue", "add", "aclm", "x", "{}", "--redis", user_url("short"), "--prefix", prefix);
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "can't run this command"));
    cli_run_free(&r);
    assert_non_null(strstr(refusals("short"), "xadd"));
    /* refused at connection time: the worker does not start */
    set_user("noname", WORKER, "+client|setname", 0);
    CLI(r, "worker", "aclm", "--redis", user_url("noname"), "--prefix", prefix, "--", "/bin/cat");
    CLI_EXPECT(r, 1);
    if (!strstr(r.err, "NOPERM") || !strstr(r.err, "client|setname"))
        fail_msg("unclear error: %s", r.err);
    cli_run_free(&r);
}

static int file_has_noperm(void *path) {
    char *s = th_slurp(path);
    int found = s && strstr(s, "NOPERM") && strstr(s, "bzpopmin");
    free(s);
    return found;
}

/* a worker refused a command it needs while running reports it (and keeps retrying) */
static void test_worker_reports_refusal(void **state) {
    (void)state;
    set_user("noblock", WORKER, "+bzpopmin", 0);
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/noblock.out", th_tmpdir());
    snprintf(err, sizeof err, "%s/noblock.err", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("worker", "aclb", "--redis", user_url("noblock"), "--prefix",
                                   prefix, "--", "/bin/cat"),
                          NULL, NULL, out, err);
    int seen = th_wait_until(file_has_noperm, err, 15000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    if (!seen) {
        char *e = th_slurp(err);
        fail_msg("no NOPERM ... bzpopmin line within 15 s: %s", e);
    }
    assert_int_equal(code, 0);
}

static int setup(void **state) {
    (void)state;
    ob_open(&db, &rds);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    snprintf(password, sizeof password, "pw-%ld-acl", (long)getpid());
    read_doc();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < ncreated; i++)
        freeReplyObject(th_cmd(rds, "ACL DELUSER %s", created[i]));
    reset_log();
    for (int i = 0; i < ROLES; i++) {
        for (int k = 0; k < lines[i].n; k++)
            free(lines[i].rules[k]);
        for (int k = 0; k < extras[i].n; k++)
            free(extras[i].rules[k]);
    }
    ob_close(db, rds);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_producer),
        cmocka_unit_test(test_scheduler_and_worker),
        cmocka_unit_test(test_relay),
        cmocka_unit_test(test_admin),
        cmocka_unit_test(test_missing_command_named),
        cmocka_unit_test(test_worker_reports_refusal),
    };
    return th_exit(cmocka_run_group_tests(tests, setup, teardown));
}
