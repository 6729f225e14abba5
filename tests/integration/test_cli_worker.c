/* test_cli_worker.c - `ferry worker QUEUE -- CMD`: the exec worker's exit-code contract,
 * return values, environment, stdin, time limit, and graceful SIGTERM, with the real
 * binary against the fixture's Redis. The job command is a small shell script whose
 * behaviour is chosen by the job name. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_spawn.h"
#include "support/testenv.h"

static const char job_script[] =
    "#!/bin/sh\n"
    "# test job for ferry worker; behaviour chosen by the job name\n"
    "data=$(cat)\n"
    "case \"$FERRY_JOB_NAME\" in\n"
    "  echo) printf "
    "'{\"queue\":\"%s\",\"id\":\"%s\",\"name\":\"%s\",\"attempt\":%s,\"data\":%s}\\n' "
    "\"$FERRY_QUEUE\" \"$FERRY_JOB_ID\" \"$FERRY_JOB_NAME\" \"$FERRY_ATTEMPT\" \"$data\" ;;\n"
    "  text) echo 'plain words' ;;\n"
    "  flaky) if [ \"$FERRY_ATTEMPT\" = 1 ]; then echo 'first attempt glitch' >&2; exit 75; fi\n"
    "         echo '\"second time lucky\"' ;;\n"
    "  transient) echo 'noise' >&2; echo 'still down' >&2; echo >&2; exit 75 ;;\n"
    "  permanent) echo 'bad input' >&2; exit 65 ;;\n"
    "  quiet) exit 3 ;;\n"
    "  crash) kill -9 $$ ;;\n"
    "  hang) while :; do sleep 1; done ;;\n"
    "  wait) : > \"$CLITEST_DIR/started-$FERRY_JOB_ID\"\n"
    "        while [ ! -e \"$CLITEST_DIR/go\" ]; do sleep 0.05; done\n"
    "        echo '\"finished\"' ;;\n"
    "  *) echo \"unknown job $FERRY_JOB_NAME\" >&2; exit 65 ;;\n"
    "esac\n";

static const char *url(void) {
    return testenv_require("REDIS_URL");
}

static const char *script_path(void) {
    static char path[128];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/job.sh", cli_tmpdir());
        cli_write_file(path, job_script, 0755);
    }
    return path;
}

/* Add a job through the CLI; returns its id (static slot, copy it to keep several). */
static void add_job(const char *p, const char *q, const char *name, const char *data,
                    const char *opts, char *id, size_t cap) {
    cli_run r;
    CLI(r, "queue", "add", q, name, data, "--opts", opts, "--redis", url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    snprintf(id, cap, "%s", r.out);
    id[strcspn(id, "\n")] = 0;
    cli_run_free(&r);
}

/* Start `ferry worker` in the background; stderr goes to the returned path. */
static pid_t start_worker(const char *p, const char *q, const char *const *extra_args,
                          char *err_path, size_t cap) {
    static int n;
    char out_path[160];
    snprintf(err_path, cap, "%s/worker%d.err", cli_tmpdir(), n);
    snprintf(out_path, sizeof out_path, "%s/worker%d.out", cli_tmpdir(), n++);
    const char *argv[40];
    int k = 0;
    argv[k++] = "worker";
    argv[k++] = q;
    argv[k++] = "--redis";
    argv[k++] = url();
    argv[k++] = "--prefix";
    argv[k++] = p;
    for (int i = 0; extra_args && extra_args[i]; i++)
        argv[k++] = extra_args[i];
    argv[k++] = "--";
    argv[k++] = script_path();
    argv[k] = NULL;
    static char dirvar[160];
    snprintf(dirvar, sizeof dirvar, "CLITEST_DIR=%s", cli_tmpdir());
    return cli_start(argv, CLI_ARGV(dirvar), NULL, out_path, err_path);
}

typedef struct finished_arg {
    const char *prefix, *queue;
    long long want;
} finished_arg;

static long long zcard(ferry_conn *c, const char *p, const char *q, const char *set) {
    redisReply *r = testenv_cmd(c, "ZCARD %s:%s:%s", p, q, set);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static int all_finished(void *arg) {
    finished_arg *a = arg;
    ferry_conn *c = testenv_conn();
    long long n =
        zcard(c, a->prefix, a->queue, "completed") + zcard(c, a->prefix, a->queue, "failed");
    ferry__conn_close(c);
    return n >= a->want;
}

/* HGET of one job field (malloc'd copy, or NULL). */
static char *hget(const char *p, const char *q, const char *id, const char *field) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "HGET %s:%s:%s %s", p, q, id, field);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    ferry__conn_close(c);
    return v;
}

static void expect_field(const char *p, const char *q, const char *id, const char *field,
                         const char *want) {
    char *v = hget(p, q, id, field);
    if (!v || strcmp(v, want) != 0)
        fail_msg("job %s field %s: got %s, want %s", id, field, v ? v : "(absent)", want);
    free(v);
}

static int in_set(const char *p, const char *q, const char *set, const char *id) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "ZSCORE %s:%s:%s %s", p, q, set, id);
    int found = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    ferry__conn_close(c);
    return found;
}

static void expect_state(const char *p, const char *q, const char *id, const char *set) {
    if (!in_set(p, q, set, id)) fail_msg("job %s is not in %s", id, set);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_exit_code_contract(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "exec";
    char echo[64], text[64], flaky[64], transient[64], permanent[64], quiet[64], crash[64],
        hang[64];
    add_job(p, q, "echo", "{\"k\":\"v\",\"n\":[1,2]}", "{}", echo, sizeof echo);
    add_job(p, q, "text", "{}", "{}", text, sizeof text);
    add_job(p, q, "flaky", "{}", "{\"attempts\":2}", flaky, sizeof flaky);
    add_job(p, q, "transient", "{}", "{\"attempts\":2}", transient, sizeof transient);
    add_job(p, q, "permanent", "{}", "{\"attempts\":3}", permanent, sizeof permanent);
    add_job(p, q, "quiet", "{}", "{}", quiet, sizeof quiet);
    add_job(p, q, "crash", "{}", "{}", crash, sizeof crash);
    add_job(p, q, "hang", "{}", "{}", hang, sizeof hang);

    char errp[160];
    pid_t pid = start_worker(p, q,
                             CLI_ARGV("--concurrency", "4", "--timeout", "500", "--kill-grace",
                                      "200", "--name", "exec-test"),
                             errp, sizeof errp);
    finished_arg fa = {p, q, 8};
    int ok = testenv_wait_until(all_finished, &fa, 60000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = cli_slurp(errp);
    if (!ok) fail_msg("jobs did not all finish; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);

    /* exit 0 + JSON stdout: stored as JSON; env vars and stdin reached the command */
    expect_state(p, q, echo, "completed");
    char *rv = hget(p, q, echo, "returnvalue");
    json_t *j = json_loads(rv ? rv : "", 0, NULL);
    if (!j) fail_msg("echo returnvalue is not JSON: %s", rv ? rv : "(absent)");
    assert_string_equal(json_string_value(json_object_get(j, "queue")), q);
    assert_string_equal(json_string_value(json_object_get(j, "id")), echo);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "echo");
    assert_int_equal(json_integer_value(json_object_get(j, "attempt")), 1);
    json_t *data = json_object_get(j, "data");
    assert_string_equal(json_string_value(json_object_get(data, "k")), "v");
    assert_int_equal(json_array_size(json_object_get(data, "n")), 2);
    json_decref(j);
    free(rv);
    expect_field(p, q, echo, "pb", "exec-test");

    /* exit 0 + plain text: stored as a JSON string (trailing newline dropped) */
    expect_state(p, q, text, "completed");
    expect_field(p, q, text, "returnvalue", "\"plain words\"");

    /* exit 75 then success: retried, FERRY_ATTEMPT=2 on the second run */
    expect_state(p, q, flaky, "completed");
    expect_field(p, q, flaky, "returnvalue", "\"second time lucky\"");
    expect_field(p, q, flaky, "atm", "2");

    /* exit 75 every time: retried until attempts ran out; reason = last non-empty line */
    expect_state(p, q, transient, "failed");
    expect_field(p, q, transient, "atm", "2");
    expect_field(p, q, transient, "failedReason", "still down");

    /* exit 65: failed at once although attempts remained */
    expect_state(p, q, permanent, "failed");
    expect_field(p, q, permanent, "atm", "1");
    expect_field(p, q, permanent, "failedReason", "bad input");

    /* other exit without stderr, a signal, the time limit */
    expect_state(p, q, quiet, "failed");
    expect_field(p, q, quiet, "failedReason", "exit 3");
    expect_state(p, q, crash, "failed");
    expect_field(p, q, crash, "failedReason", "signal 9");
    expect_state(p, q, hang, "failed");
    expect_field(p, q, hang, "failedReason", "timeout after 500 ms");

    /* log: stderr passed through with the job id, one outcome line per attempt, no payloads */
    char want[128];
    snprintf(want, sizeof want, "[job %s] still down", transient);
    if (!strstr(log, want)) fail_msg("log lacks '%s':\n%s", want, log);
    snprintf(want, sizeof want, "id=%s attempt=2", flaky);
    if (!strstr(log, want)) fail_msg("log lacks '%s':\n%s", want, log);
    assert_non_null(strstr(log, "outcome=completed"));
    assert_non_null(strstr(log, "outcome=retry"));
    assert_non_null(strstr(log, "outcome=failed"));
    assert_null(strstr(log, "\"k\""));
    free(log);
}

typedef struct file_arg {
    char path[200];
} file_arg;

static int file_exists(void *arg) {
    return access(((file_arg *)arg)->path, F_OK) == 0;
}

static void test_sigterm_lets_running_job_finish(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "graceful";
    char go[200];
    snprintf(go, sizeof go, "%s/go", cli_tmpdir());
    unlink(go);
    char id[64];
    add_job(p, q, "wait", "{}", "{}", id, sizeof id);
    char errp[160];
    pid_t pid = start_worker(p, q, NULL, errp, sizeof errp);
    file_arg started;
    snprintf(started.path, sizeof started.path, "%s/started-%s", cli_tmpdir(), id);
    if (!testenv_wait_until(file_exists, &started, 30000)) {
        kill(pid, SIGKILL);
        cli_wait(pid, 10000);
        char *log = cli_slurp(errp);
        fail_msg("job never started; log:\n%s", log);
    }
    kill(pid, SIGTERM);
    /* the job is still running; it may finish only now, and the worker must wait for it */
    cli_write_file(go, "", 0600);
    int code = cli_wait(pid, 60000);
    char *log = cli_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    assert_non_null(strstr(log, "SIGTERM"));
    free(log);
    expect_state(p, q, id, "completed");
    expect_field(p, q, id, "returnvalue", "\"finished\"");
    unlink(go);
}

static void test_max_jobs_and_idle_exit(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "bounded";
    char id[64];
    add_job(p, q, "text", "{}", "{}", id, sizeof id);
    char errp[160];
    pid_t pid = start_worker(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, cli_slurp(errp));
    expect_state(p, q, id, "completed");

    pid = start_worker(p, q, CLI_ARGV("--idle-exit", "200"), errp, sizeof errp);
    code = cli_wait(pid, 60000);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, cli_slurp(errp));
}

static void test_worker_unreachable_redis(void **state) {
    (void)state;
    cli_run r;
    CLI(r, "worker", "q", "--redis", "redis://127.0.0.1:1", "--command-timeout", "2000", "--",
        "/bin/true");
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_contract),
        cmocka_unit_test(test_sigterm_lets_running_job_finish),
        cmocka_unit_test(test_max_jobs_and_idle_exit),
        cmocka_unit_test(test_worker_unreachable_redis),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    cli_tmpdir_remove();
    return failed;
}
