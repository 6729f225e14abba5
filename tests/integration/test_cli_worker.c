/* test_cli_worker.c - `ferry worker QUEUE -- CMD`: the exec worker's exit-code contract
 * (0/65/75, 118 retry-later and 119 throttled with their delay hints), return values,
 * environment, stdin, time limit, limiter, per-job log lines, graceful SIGTERM, and
 * `ferry http-outcome`, with the real binary against the fixture's Redis. The job command
 * is a small shell script whose behaviour is chosen by the job name. */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_spawn.h"
#include "dead_worker.h"
#include "support/testenv.h"
#include "util/clock.h"

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
    "  postpone:*) # postpone:once|always:CODE:LAST-STDOUT-LINE ('-' = none)\n"
    "    rest=${FERRY_JOB_NAME#postpone:}; mode=${rest%%:*}; rest=${rest#*:}\n"
    "    code=${rest%%:*}; line=${rest#*:}\n"
    "    echo \"$FERRY_ATTEMPT $FERRY_ATTEMPTS_STARTED $(date +%s%3N)\" "
    ">> \"$CLITEST_DIR/runs-$FERRY_QUEUE-$FERRY_JOB_ID\"\n"
    "    if [ \"$mode\" = always ] || [ \"$FERRY_ATTEMPTS_STARTED\" = 1 ]; then\n"
    "      echo 'some output first'\n"
    "      [ \"$line\" = - ] || printf '%s\\n' \"$line\"\n"
    "      echo \"postponed by $code\" >&2\n"
    "      date +%s%3N > \"$CLITEST_DIR/end-$FERRY_QUEUE-$FERRY_JOB_ID\"\n"
    "      exit \"$code\"\n"
    "    fi\n"
    "    printf '{\"attempt\":%s,\"started\":%s}\\n' \"$FERRY_ATTEMPT\" "
    "\"$FERRY_ATTEMPTS_STARTED\" ;;\n"
    "  http:*) rest=${FERRY_JOB_NAME#http:}  # http:STATUS:RETRY-AFTER\n"
    "    exec \"$FERRY_BIN\" http-outcome \"${rest%%:*}\" \"${rest#*:}\" ;;\n"
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

/* Connections named as the blocking connections of worker `name` on queue b64q. */
static int named_clients(const char *p, const char *b64q, const char *name) {
    char want[192];
    snprintf(want, sizeof want, "name=%s:%s:w:%s ", p, b64q, name);
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "CLIENT LIST");
    int n = 0;
    for (const char *s = r->str; (s = strstr(s, want)); s += strlen(want))
        n++;
    freeReplyObject(r);
    ferry__conn_close(c);
    return n;
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
                             CLI_ARGV("--concurrency", "4", "--lanes", "2", "--timeout", "500",
                                      "--kill-grace", "200", "--name", "exec-test"),
                             errp, sizeof errp);
    finished_arg fa = {p, q, 8};
    int ok = testenv_wait_until(all_finished, &fa, 60000);
    /* --lanes 2 at concurrency 4: two blocking connections carry the worker's name */
    int named = ok ? named_clients(p, "ZXhlYw==", "exec-test") : -1; /* base64("exec") */
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = cli_slurp(errp);
    if (!ok) fail_msg("jobs did not all finish; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);

    assert_int_equal(named, 2);

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
    assert_non_null(strstr(log, "outcome=permanent"));
    assert_non_null(strstr(log, "status=exit:65"));
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

/* ---- ferry http-outcome ----------------------------------------------------------------- */

typedef struct http_case {
    const char *status, *retry_after; /* retry_after NULL = not given */
    int code;
    const char *out;     /* exact stdout */
    const char *err_has; /* substring of the one stderr line */
} http_case;

static void test_http_outcome(void **state) {
    (void)state;
    static const http_case cases[] = {
        {"200", NULL, 0, "", "HTTP 200: ok"},
        {"204", "5", 0, "", "HTTP 204: ok"},
        {"429", NULL, 119, "FERRY_RETRY_AFTER_MS=10000\n", "HTTP 429: throttled"},
        {"429", "", 119, "FERRY_RETRY_AFTER_MS=10000\n", "throttled"},
        {"429", "7", 119, "FERRY_RETRY_AFTER_MS=7000\n", "throttled (delay 7000 ms)"},
        {"429", "soon", 119, "FERRY_RETRY_AFTER_MS=10000\n", "throttled"},
        {"503", "2", 118, "FERRY_RETRY_AFTER_MS=2000\n", "HTTP 503: retry-later"},
        {"503", "Fri, 01 Jan 2100 00:00:00 GMT", 118, "FERRY_RETRY_AFTER_MS=86400000\n",
         "retry-later"},
        {"408", "1", 118, "FERRY_RETRY_AFTER_MS=1000\n", "retry-later"},
        {"503", NULL, 75, "", "HTTP 503: transient"},
        {"503", "-5", 75, "", "transient"},
        {"500", "", 75, "", "transient"},
        {"404", NULL, 65, "", "HTTP 404: permanent"},
        {"404", "5", 65, "", "permanent"},
        {"301", NULL, 65, "", "permanent"},
        {"0", NULL, 75, "", "no HTTP response (status 0): transient"},
        {"000", NULL, 75, "", "transient"},
        {"abc", NULL, 2, "", "STATUS"},
        {"", NULL, 2, "", "STATUS"},
        {"2000", NULL, 2, "", "STATUS"},
        {"-1", NULL, 2, "", "STATUS"},
        {" 200", NULL, 2, "", "STATUS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const http_case *c = &cases[i];
        cli_run r;
        if (c->retry_after)
            CLI(r, "http-outcome", c->status, c->retry_after);
        else
            CLI(r, "http-outcome", c->status);
        if (r.code != c->code || strcmp(r.out, c->out) != 0 || !strstr(r.err, c->err_has) ||
            cli_lines(r.err) != 1)
            fail_msg("http-outcome '%s' '%s': exit %d (want %d), stdout '%s' (want '%s'), "
                     "stderr '%s' (want one line with '%s')",
                     c->status, c->retry_after ? c->retry_after : "(none)", r.code, c->code, r.out,
                     c->out, r.err, c->err_has);
        cli_run_free(&r);
    }
    cli_run r;
    CLI(r, "http-outcome");
    CLI_EXPECT(r, 2);
    assert_int_equal(cli_lines(r.err), 1);
    cli_run_free(&r);
    CLI(r, "http-outcome", "503", "1", "extra");
    CLI_EXPECT(r, 2);
    assert_int_equal(cli_lines(r.err), 1);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    CLI(r, "http-outcome", "--", "429", "-3");
    CLI_EXPECT(r, 119);
    assert_string_equal(r.out, "FERRY_RETRY_AFTER_MS=10000\n");
    cli_run_free(&r);
    CLI(r, "http-outcome", "--help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "119"));
    cli_run_free(&r);
}

/* ---- option validation -------------------------------------------------------------------- */

static void test_worker_option_validation(void **state) {
    (void)state;
    static const struct {
        const char *a1, *v1, *a2, *v2, *err_has;
    } bad[] = {
        {"--limiter-max", "5", NULL, NULL, "--limiter-duration"},
        {"--limiter-duration", "1000", NULL, NULL, "--limiter-max"},
        {"--limiter-max", "0", "--limiter-duration", "1000", "--limiter-max"},
        {"--limiter-max", "5", "--limiter-duration", "0", "--limiter-duration"},
        {"--limiter-max", "x", "--limiter-duration", "1000", "--limiter-max"},
        {"--limiter-max", "5", "--limiter-duration", "-1", "--limiter-duration"},
        {"--log-format", "xml", NULL, NULL, "--log-format"},
        {"--retry-later-default", "-1", NULL, NULL, "--retry-later-default"},
        {"--retry-later-default", "86400001", NULL, NULL, "--retry-later-default"},
        {"--max-started-attempts", "0", NULL, NULL, "--max-started-attempts"},
        {"--max-stalled-count", "-2", NULL, NULL, "--max-stalled-count"},
        {"--lanes", "0", NULL, NULL, "--lanes"},
        {"--lanes", "5", NULL, NULL, "--lanes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        if (bad[i].a2)
            CLI(r, "worker", "q", "--redis", url(), bad[i].a1, bad[i].v1, bad[i].a2, bad[i].v2,
                "--", "/bin/true");
        else
            CLI(r, "worker", "q", "--redis", url(), bad[i].a1, bad[i].v1, "--", "/bin/true");
        if (r.code != 2 || !strstr(r.err, bad[i].err_has) || cli_lines(r.err) != 1)
            fail_msg("%s %s %s %s: exit %d, stderr '%s' (want 2 and one line with '%s')", bad[i].a1,
                     bad[i].v1, bad[i].a2 ? bad[i].a2 : "", bad[i].v2 ? bad[i].v2 : "", r.code,
                     r.err, bad[i].err_has);
        cli_run_free(&r);
    }
}

/* ---- retry later / throttled ---------------------------------------------------------------- */

static long long wall_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Due time (ms) of a job in the delayed zset (score = due * 4096 + seq), or -1. */
static long long delayed_due(const char *p, const char *q, const char *id) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "ZSCORE %s:%s:delayed %s", p, q, id);
    long long due = r->type == REDIS_REPLY_STRING ? (long long)(strtod(r->str, NULL) / 4096) : -1;
    freeReplyObject(r);
    ferry__conn_close(c);
    return due;
}

static int in_list(const char *p, const char *q, const char *list, const char *id) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "LPOS %s:%s:%s %s", p, q, list, id);
    int found = r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    ferry__conn_close(c);
    return found;
}

static long long key_pttl(const char *p, const char *q, const char *suffix) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "PTTL %s:%s:%s", p, q, suffix);
    long long v = r->integer;
    freeReplyObject(r);
    ferry__conn_close(c);
    return v;
}

/* The runs file the job script appends to: "FERRY_ATTEMPT FERRY_ATTEMPTS_STARTED start_ms"
 * per run (named by queue and id: ids repeat across the tests' prefixes). Returns how many
 * runs (up to max) and fills the arrays. */
static int read_runs(const char *q, const char *id, long long *attempt, long long *started,
                     long long *at, int max) {
    char path[200];
    snprintf(path, sizeof path, "%s/runs-%s-%s", cli_tmpdir(), q, id);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    long long a, s, t;
    while (fscanf(f, "%lld %lld %lld", &a, &s, &t) == 3)
        if (n < max) {
            attempt[n] = a;
            started[n] = s;
            at[n++] = t;
        }
    fclose(f);
    return n;
}

static long long read_end_ms(const char *q, const char *id) {
    char path[1200]; /* temp dir (< 200) + queue + id, both short here */
    int n = snprintf(path, sizeof path, "%s/end-%s-%s", cli_tmpdir(), q, id);
    assert_true(n > 0 && (size_t)n < sizeof path);
    char *s = cli_slurp(path);
    long long v = strtoll(s, NULL, 10);
    free(s);
    return v;
}

/* Wait condition: every job of the list in its wanted state. */
typedef struct state_want {
    const char *prefix, *queue;
    const char *ids[16], *sets[16]; /* set: "completed", "failed", "delayed" or "wait" */
    int n;
} state_want;

static int states_reached(void *arg) {
    state_want *w = arg;
    for (int i = 0; i < w->n; i++) {
        int ok = !strcmp(w->sets[i], "wait") ? in_list(w->prefix, w->queue, "wait", w->ids[i])
                                             : in_set(w->prefix, w->queue, w->sets[i], w->ids[i]);
        if (!ok) return 0;
    }
    return 1;
}

static void want_state(state_want *w, const char *id, const char *set) {
    w->ids[w->n] = id;
    w->sets[w->n++] = set;
}

/* The job's atm (attempts made): absent and "0" both mean none spent. */
static void expect_no_attempt_spent(const char *p, const char *q, const char *id) {
    char *atm = hget(p, q, id, "atm");
    if (atm && strcmp(atm, "0") != 0) fail_msg("job %s spent an attempt: atm=%s", id, atm);
    free(atm);
}

static void expect_due_between(const char *p, const char *q, const char *id, long long lo,
                               long long hi) {
    long long due = delayed_due(p, q, id);
    if (due < lo || due > hi)
        fail_msg("job %s: due at %lld, want %lld..%lld (delay %lld..%lld from the start)", id, due,
                 lo, hi, due - lo, hi - lo);
}

static void test_retry_later_and_throttled_without_limiter(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "later";
    enum {
        ONCE_MS,
        ONCE_RA,
        LONG,
        NOHINT,
        BAD_RA,
        HUGE,
        NEG,
        ABC,
        T_LONG,
        T_NOHINT,
        H503,
        H429,
        LOOP,
        NJOBS
    };
    static const char *const names[NJOBS] = {
        "postpone:once:118:FERRY_RETRY_AFTER_MS=300",
        "postpone:once:118:Retry-After: 1",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=60000",
        "postpone:always:118:-",
        "postpone:always:118:Retry-After: soon",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=99999999999999999999999",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=-5",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=abc",
        "postpone:always:119:FERRY_RETRY_AFTER_MS=60000",
        "postpone:always:119:-",
        "http:503:3600",
        "http:429:",
        "postpone:always:118:FERRY_RETRY_AFTER_MS=0",
    };
    char ids[NJOBS][64];
    long long t0 = wall_ms();
    for (int i = 0; i < NJOBS; i++)
        add_job(p, q, names[i], "{}", i == NEG ? "{\"attempts\":1}" : "{\"attempts\":2}", ids[i],
                sizeof ids[i]);

    char errp[160];
    pid_t pid = start_worker(p, q,
                             CLI_ARGV("--concurrency", "4", "--retry-later-default", "45000",
                                      "--max-started-attempts", "3"),
                             errp, sizeof errp);
    state_want w = {.prefix = p, .queue = q};
    want_state(&w, ids[ONCE_MS], "completed");
    want_state(&w, ids[ONCE_RA], "completed");
    want_state(&w, ids[NEG], "failed");
    want_state(&w, ids[ABC], "failed");
    want_state(&w, ids[LOOP], "failed");
    for (int i = LONG; i <= H429; i++)
        if (i != NEG && i != ABC) want_state(&w, ids[i], "delayed");
    int ok = testenv_wait_until(states_reached, &w, 60000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    long long t1 = wall_ms();
    char *log = cli_slurp(errp);
    if (!ok) fail_msg("jobs did not reach their states; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);

    /* 118 with FERRY_RETRY_AFTER_MS=300 / Retry-After: 1: delayed for at least that long,
     * then run again with the same FERRY_ATTEMPT (no attempt spent) and the next
     * FERRY_ATTEMPTS_STARTED; atm counts only the completing run. */
    const long long min_gap[2] = {300, 1000};
    for (int k = 0; k < 2; k++) {
        const char *id = ids[k == 0 ? ONCE_MS : ONCE_RA];
        long long att[4], st[4], at[4];
        int runs = read_runs(q, id, att, st, at, 4);
        if (runs != 2) fail_msg("job %s ran %d times, want 2; log:\n%s", id, runs, log);
        assert_int_equal(att[0], 1);
        assert_int_equal(att[1], 1);
        assert_int_equal(st[0], 1);
        assert_int_equal(st[1], 2);
        long long gap = at[1] - read_end_ms(q, id);
        if (gap < min_gap[k])
            fail_msg("job %s re-ran %lld ms after exit 118, want >= %lld", id, gap, min_gap[k]);
        expect_field(p, q, id, "returnvalue", "{\"attempt\":1,\"started\":2}");
        expect_field(p, q, id, "atm", "1");
    }

    /* still postponed: no attempt spent, reason = last stderr line, due from the hint */
    for (int i = LONG; i <= H429; i++) {
        if (i == NEG || i == ABC) continue;
        expect_state(p, q, ids[i], "delayed");
        expect_no_attempt_spent(p, q, ids[i]);
        expect_field(p, q, ids[i], "ats", "1");
    }
    expect_field(p, q, ids[LONG], "failedReason", "postponed by 118");
    expect_due_between(p, q, ids[LONG], t0 + 60000, t1 + 60000);
    /* no hint, and an unusable Retry-After: --retry-later-default */
    expect_due_between(p, q, ids[NOHINT], t0 + 45000, t1 + 45000);
    expect_due_between(p, q, ids[BAD_RA], t0 + 45000, t1 + 45000);
    /* huge: clamped to a day */
    expect_due_between(p, q, ids[HUGE], t0 + 86400000, t1 + 86400000);
    /* 119 without a limiter: delayed like 118, the queue is not limited; no hint = 10 s */
    expect_field(p, q, ids[T_LONG], "failedReason", "postponed by 119");
    expect_due_between(p, q, ids[T_LONG], t0 + 60000, t1 + 60000);
    expect_due_between(p, q, ids[T_NOHINT], t0 + 10000, t1 + 10000);
    assert_true(key_pttl(p, q, "limiter") == -2);
    /* through ferry http-outcome: its stderr line is the reason */
    expect_field(p, q, ids[H503], "failedReason", "HTTP 503: retry-later (delay 3600000 ms)");
    expect_due_between(p, q, ids[H503], t0 + 3600000, t1 + 3600000);
    expect_field(p, q, ids[H429], "failedReason", "HTTP 429: throttled (delay 10000 ms)");
    expect_due_between(p, q, ids[H429], t0 + 10000, t1 + 10000);

    /* a malformed FERRY_RETRY_AFTER_MS line fails the run as transient, with the reason */
    expect_field(p, q, ids[NEG], "atm", "1");
    char *reason = hget(p, q, ids[NEG], "failedReason");
    if (!reason || !strstr(reason, "exit 118: invalid FERRY_RETRY_AFTER_MS") ||
        !strstr(reason, "\"-5\""))
        fail_msg("failedReason of a bad hint: %s", reason ? reason : "(absent)");
    free(reason);
    expect_field(p, q, ids[ABC], "atm", "2");
    reason = hget(p, q, ids[ABC], "failedReason");
    if (!reason || !strstr(reason, "\"abc\"")) fail_msg("failedReason: %s", reason);
    free(reason);

    /* endless 0 ms postponing is stopped by --max-started-attempts 3 */
    long long att[8], st[8], at[8];
    int loops = read_runs(q, ids[LOOP], att, st, at, 8);
    if (loops != 3) fail_msg("looping job ran %d times, want 3; log:\n%s", loops, log);
    for (int i = 0; i < loops; i++)
        assert_int_equal(att[i], 1);

    /* log: what was written to Redis; 119 without a limiter is a retry-later */
    char want[200];
    snprintf(want, sizeof want, "id=%s attempt=1", ids[LONG]);
    if (!strstr(log, want)) fail_msg("log lacks '%s':\n%s", want, log);
    snprintf(want, sizeof want,
             "id=%s attempt=1 trace=job-%s-%s outcome=retry-later duration_ms=", ids[T_LONG], q,
             ids[T_LONG]);
    const char *line = strstr(log, want);
    if (!line) fail_msg("log lacks '%s':\n%s", want, log);
    if (!strstr(line, "delay_ms=60000 reason=\"postponed by 119\" status=exit:119\n"))
        fail_msg("log line of the 119 job: %.*s", (int)strcspn(line, "\n"), line);
    assert_null(strstr(log, "outcome=throttled"));
    free(log);
}

static int limited_and_waiting(void *arg) {
    state_want *w = arg;
    return key_pttl(w->prefix, w->queue, "limiter") > 0 && states_reached(w);
}

static void test_throttled_with_limiter(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "throttle";
    char id[64];
    add_job(p, q, "postpone:always:119:FERRY_RETRY_AFTER_MS=60000", "{}", "{\"attempts\":2}", id,
            sizeof id);
    char errp[160];
    pid_t pid = start_worker(p, q, CLI_ARGV("--limiter-max", "100", "--limiter-duration", "1000"),
                             errp, sizeof errp);
    state_want w = {.prefix = p, .queue = q};
    want_state(&w, id, "wait");
    file_arg ran;
    snprintf(ran.path, sizeof ran.path, "%s/end-%s-%s", cli_tmpdir(), q, id);
    int ok = testenv_wait_until(file_exists, &ran, 60000) &&
             testenv_wait_until(limited_and_waiting, &w, 60000);
    long long ttl = key_pttl(p, q, "limiter");
    ferry_conn *c = testenv_conn();
    redisReply *lim = testenv_cmd(c, "GET %s:%s:limiter", p, q);
    /* BullMQ queue.rateLimit's value, so Node workers with a limiter stop too */
    int bullmq_value = lim->type == REDIS_REPLY_STRING && !strcmp(lim->str, "9007199254740991");
    freeReplyObject(lim);
    ferry__conn_close(c);
    /* a job added now is not handed out while the queue is limited (checked below, after
     * the worker stopped: it never ran) */
    char later[64];
    add_job(p, q, "text", "{}", "{}", later, sizeof later);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = cli_slurp(errp);
    if (!ok) fail_msg("queue not limited with the job back in wait; log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    /* over the limiter's own 1000 ms window: the key is the throttle's, not the fetch count */
    if (ttl <= 1000 || ttl > 60000) fail_msg("limiter PTTL %lld, want 1001..60000", ttl);
    assert_true(bullmq_value);
    expect_no_attempt_spent(p, q, id);
    expect_field(p, q, id, "failedReason", "postponed by 119");
    long long att[4], st[4], at[4];
    assert_int_equal(read_runs(q, id, att, st, at, 4), 1);
    assert_false(in_set(p, q, "completed", later));
    assert_non_null(strstr(log, "outcome=throttled"));
    assert_non_null(strstr(log, "limiter=100/1000ms"));
    free(log);
}

/* ---- per-job log lines -------------------------------------------------------------------- */

#define SECRET "SECRET-e-7f3a9"

/* Count the JSON log lines of one job id and check the fields every record carries. */
static int json_lines_of(const char *log, const char *q, const char *id, const char *name,
                         char outcomes[][24], int max) {
    int n = 0;
    for (const char *line = log; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len && line[0] == '{') {
            json_error_t je;
            json_t *o = json_loadb(line, len, 0, &je);
            if (!o) fail_msg("log line is not JSON (%s): %.*s", je.text, (int)len, line);
            const char *jid = json_string_value(json_object_get(o, "id"));
            if (jid && !strcmp(jid, id)) {
                assert_string_equal(json_string_value(json_object_get(o, "queue")), q);
                assert_string_equal(json_string_value(json_object_get(o, "job")), name);
                assert_true(json_integer_value(json_object_get(o, "attempt")) >= 1);
                assert_non_null(json_string_value(json_object_get(o, "trace")));
                assert_non_null(json_string_value(json_object_get(o, "status")));
                if (n < max)
                    snprintf(outcomes[n], sizeof outcomes[n], "%s",
                             json_string_value(json_object_get(o, "outcome")));
                n++;
            }
            json_decref(o);
        }
        line += len + (eol ? 1 : 0);
    }
    return n;
}

static void test_log_lines(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "logs";
    const char *data = "{\"traceId\":\"trace-e-42\",\"secret\":\"" SECRET "\"}";
    char ok_id[64], perm[64], later[64], trans[64];
    add_job(p, q, "text", data, "{}", ok_id, sizeof ok_id);
    add_job(p, q, "permanent", data, "{\"attempts\":3}", perm, sizeof perm);
    add_job(p, q, "postpone:once:118:FERRY_RETRY_AFTER_MS=0", data, "{\"attempts\":2}", later,
            sizeof later);
    add_job(p, q, "transient", data, "{\"attempts\":2}", trans, sizeof trans);
    char errp[160];
    pid_t pid =
        start_worker(p, q, CLI_ARGV("--log-format", "json", "--max-jobs", "6"), errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    char *log = cli_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    if (strstr(log, SECRET)) fail_msg("job data leaked into the log:\n%s", log);
    char outc[4][24];
    if (json_lines_of(log, q, ok_id, "text", outc, 4) != 1 || strcmp(outc[0], "completed"))
        fail_msg("want one completed line for %s:\n%s", ok_id, log);
    if (json_lines_of(log, q, perm, "permanent", outc, 4) != 1 || strcmp(outc[0], "permanent"))
        fail_msg("want one permanent line for %s:\n%s", perm, log);
    if (json_lines_of(log, q, later, "postpone:once:118:FERRY_RETRY_AFTER_MS=0", outc, 4) != 2 ||
        strcmp(outc[0], "retry-later") || strcmp(outc[1], "completed"))
        fail_msg("want retry-later then completed for %s:\n%s", later, log);
    if (json_lines_of(log, q, trans, "transient", outc, 4) != 2 || strcmp(outc[0], "retry") ||
        strcmp(outc[1], "failed"))
        fail_msg("want retry then failed for %s:\n%s", trans, log);
    assert_non_null(strstr(log, "\"trace-e-42\""));
    free(log);

    /* text (default) and none */
    char t2[64];
    add_job(p, q, "text", data, "{}", t2, sizeof t2);
    pid = start_worker(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    code = cli_wait(pid, 60000);
    log = cli_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    char want[200];
    snprintf(want, sizeof want, "ferry worker: queue=%s job=text id=%s attempt=1 trace=trace-e-42",
             q, t2);
    if (!strstr(log, want) || !strstr(log, "outcome=completed") || strstr(log, SECRET))
        fail_msg("text log line: want '%s', outcome, no data:\n%s", want, log);
    free(log);
    add_job(p, q, "text", data, "{}", t2, sizeof t2);
    pid =
        start_worker(p, q, CLI_ARGV("--max-jobs", "1", "--log-format", "none"), errp, sizeof errp);
    code = cli_wait(pid, 60000);
    log = cli_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    if (strstr(log, "outcome=") || strstr(log, "\"outcome\""))
        fail_msg("--log-format none still logged outcomes:\n%s", log);
    expect_state(p, q, t2, "completed");
    free(log);
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

/* --max-stalled-count 0 is BullMQ's maxStalledCount 0: a job whose worker died (taken with
 * a short lock that nobody renews) fails at its first stall instead of running again. */
static void test_max_stalled_count_zero_fails_first_stall(void **state) {
    (void)state;
    const char *p = testenv_prefix(), *q = "stall0";
    char id[64];
    add_job(p, q, "echo", "{}", "{\"attempts\":3}", id, sizeof id);
    /* a worker that then dies: it takes the job with a 200 ms lock, never renewed */
    char base[160];
    snprintf(base, sizeof base, "%s:%s:", p, q);
    ferry_conn *c = testenv_conn();
    dead_worker_fetch(c, base, id, 200);
    ferry__conn_close(c);

    char errp[160];
    pid_t pid =
        start_worker(p, q, CLI_ARGV("--max-stalled-count", "0", "--stalled-interval", "1000"), errp,
                     sizeof errp);
    finished_arg fa = {p, q, 1};
    int ok = testenv_wait_until(all_finished, &fa, 20000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    char *log = cli_slurp(errp);
    if (!ok) fail_msg("the stalled job was not settled; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    free(log);
    expect_state(p, q, id, "failed");
    expect_field(p, q, id, "failedReason", "job stalled more than allowable limit");
    expect_field(p, q, id, "stc", "1");
    /* failed with attempts left and no returnvalue: the fetch that followed the stall
     * failed it without running the command (ats still counts that fetch, as in BullMQ) */
    char *rv = hget(p, q, id, "returnvalue");
    if (rv) fail_msg("job %s ran: returnvalue %s", id, rv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_contract),
        cmocka_unit_test(test_sigterm_lets_running_job_finish),
        cmocka_unit_test(test_max_jobs_and_idle_exit),
        cmocka_unit_test(test_worker_unreachable_redis),
        cmocka_unit_test(test_http_outcome),
        cmocka_unit_test(test_worker_option_validation),
        cmocka_unit_test(test_retry_later_and_throttled_without_limiter),
        cmocka_unit_test(test_throttled_with_limiter),
        cmocka_unit_test(test_log_lines),
        cmocka_unit_test(test_max_stalled_count_zero_fails_first_stall),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    cli_tmpdir_remove();
    return failed;
}
