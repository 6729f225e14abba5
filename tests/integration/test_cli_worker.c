/* test_cli_worker.c - `ferry worker QUEUE -- CMD`: the exec worker's exit-code contract
 * (0/65/75), return values, environment, stdin, time limit, lanes, per-job log lines,
 * graceful SIGTERM, --max-jobs/--idle-exit, --max-stalled-count 0, option checks and
 * `ferry http-outcome`, with the real binary against the fixture's Redis (118/119 are in
 * test_cli_worker_postpone.c). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "support/cli.h"
#include "support/wt.h"
#include "util/clock.h"

/* Connections named as the blocking connections of worker `name` on queue b64q. */
static int named_clients(const char *p, const char *b64q, const char *name) {
    char want[192];
    snprintf(want, sizeof want, "name=%s:%s:w:%s ", p, b64q, name);
    ferry_conn *c = th_conn();
    redisReply *r = th_cmd(c, "CLIENT LIST");
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
    const char *p = th_prefix(), *q = "exec";
    char echo[64], text[64], flaky[64], transient[64], permanent[64], quiet[64], crash[64],
        hang[64], nulout[64], binout[64], bigint[64];
    cli_add_job(p, q, "echo", "{\"k\":\"v\",\"n\":[1,2]}", "{}", echo, sizeof echo);
    cli_add_job(p, q, "text", "{}", "{}", text, sizeof text);
    cli_add_job(p, q, "flaky", "{}", "{\"attempts\":2}", flaky, sizeof flaky);
    cli_add_job(p, q, "transient", "{}", "{\"attempts\":2}", transient, sizeof transient);
    cli_add_job(p, q, "permanent", "{}", "{\"attempts\":3}", permanent, sizeof permanent);
    cli_add_job(p, q, "quiet", "{}", "{}", quiet, sizeof quiet);
    cli_add_job(p, q, "crash", "{}", "{}", crash, sizeof crash);
    cli_add_job(p, q, "hang", "{}", "{}", hang, sizeof hang);
    cli_add_job(p, q, "nulout", "{}", "{\"attempts\":3}", nulout, sizeof nulout);
    cli_add_job(p, q, "binout", "{}", "{\"attempts\":3}", binout, sizeof binout);
    cli_add_job(p, q, "bigint", "{}", "{}", bigint, sizeof bigint);

    char errp[160];
    pid_t pid = cli_worker_start(p, q,
                                 CLI_ARGV("--concurrency", "4", "--lanes", "2", "--timeout", "500",
                                          "--kill-grace", "200", "--name", "exec-test"),
                                 errp, sizeof errp);
    cli_finished_arg fa = {p, q, 11};
    int ok = th_wait_until(cli_all_finished, &fa, 60000);
    /* --lanes 2 at concurrency 4: one blocking connection carries the worker's name (Node's
     * getWorkers lists the worker once) */
    int named = ok ? named_clients(p, "ZXhlYw==", "exec-test") : -1; /* base64("exec") */
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (!ok) fail_msg("jobs did not all finish; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);

    assert_int_equal(named, 1);
    if (!strstr(log, "concurrency=4 lanes=2 "))
        fail_msg("started line does not give the lanes; log:\n%s", log);

    /* exit 0 + JSON stdout: stored as JSON; env vars and stdin reached the command */
    cli_expect_state(p, q, echo, "completed");
    char *rv = cli_hget(p, q, echo, "returnvalue");
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
    cli_expect_field(p, q, echo, "pb", "exec-test");

    /* exit 0 + plain text: stored as a JSON string (trailing newline dropped) */
    cli_expect_state(p, q, text, "completed");
    cli_expect_field(p, q, text, "returnvalue", "\"plain words\"");

    /* exit 75 then success: retried, FERRY_ATTEMPT=2 on the second run */
    cli_expect_state(p, q, flaky, "completed");
    cli_expect_field(p, q, flaky, "returnvalue", "\"second time lucky\"");
    cli_expect_field(p, q, flaky, "atm", "2");

    /* exit 75 every time: retried until attempts ran out; reason = last non-empty line */
    cli_expect_state(p, q, transient, "failed");
    cli_expect_field(p, q, transient, "atm", "2");
    cli_expect_field(p, q, transient, "failedReason", "still down");

    /* exit 65: failed at once although attempts remained */
    cli_expect_state(p, q, permanent, "failed");
    cli_expect_field(p, q, permanent, "atm", "1");
    cli_expect_field(p, q, permanent, "failedReason", "bad input");

    /* other exit without stderr, a signal, the time limit */
    cli_expect_state(p, q, quiet, "failed");
    cli_expect_field(p, q, quiet, "failedReason", "exit 3");
    cli_expect_state(p, q, crash, "failed");
    cli_expect_field(p, q, crash, "failedReason", "signal 9");
    cli_expect_state(p, q, hang, "failed");
    cli_expect_field(p, q, hang, "failedReason", "timeout after 500 ms");
    /* exit 0: text with a NUL byte is stored as a JSON string; bytes that are not UTF-8
     * cannot be, and the job fails without retry (it ran: a retry would repeat it) */
    cli_expect_state(p, q, nulout, "completed");
    cli_expect_field(p, q, nulout, "returnvalue", "\"a\\u0000b\"");
    /* JSON that jansson refuses but JSON.parse takes (an integer past 64 bits) is JSON */
    cli_expect_state(p, q, bigint, "completed");
    cli_expect_field(p, q, bigint, "returnvalue", "{\"n\":100000000000000000000}");
    cli_expect_state(p, q, binout, "failed");
    cli_expect_field(p, q, binout, "atm", "1");
    cli_expect_field(p, q, binout, "failedReason",
                     "exit 0, but stdout is neither JSON nor UTF-8 text, so it cannot be stored as "
                     "the return value (not retried: the command succeeded)");

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

static void test_sigterm_lets_running_job_finish(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "graceful";
    char go[200];
    snprintf(go, sizeof go, "%s/go", th_tmpdir());
    unlink(go);
    char id[64];
    cli_add_job(p, q, "wait", "{}", "{}", id, sizeof id);
    char errp[160];
    pid_t pid = cli_worker_start(p, q, NULL, errp, sizeof errp);
    th_file_arg started;
    snprintf(started.path, sizeof started.path, "%s/started-%s", th_tmpdir(), id);
    if (!th_wait_until(th_file_exists, &started, 30000)) {
        kill(pid, SIGKILL);
        cli_wait(pid, 10000);
        char *log = th_slurp(errp);
        fail_msg("job never started; log:\n%s", log);
    }
    kill(pid, SIGTERM);
    /* the job is still running; it may finish only now, and the worker must wait for it */
    th_write_file(go, "", 0600);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    assert_non_null(strstr(log, "SIGTERM"));
    free(log);
    cli_expect_state(p, q, id, "completed");
    cli_expect_field(p, q, id, "returnvalue", "\"finished\"");
    unlink(go);
}

/* A second stop signal kills the running commands: their jobs go back to the queue (delayed,
 * ready at once) without spending an attempt, even with attempts 1, however the command
 * ends (killed by the signal, or trapping it and exiting 1): stopping the worker is not the
 * jobs' failure. */
static void test_second_signal_hands_job_back(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "stopped";
    char go[200];
    snprintf(go, sizeof go, "%s/go", th_tmpdir());
    unlink(go); /* never created: the commands run until they are stopped */
    const char *names[2] = {"wait", "trapwait"};
    const char *reasons[2] = {"signal 15: stopped by the worker's shutdown",
                              "exit 1: stopped by the worker's shutdown"};
    char ids[2][64];
    th_file_arg started[2]; /* (an earlier test's job may have had the same id) */
    for (int i = 0; i < 2; i++) {
        cli_add_job(p, q, names[i], "{}", "{\"attempts\":1}", ids[i], sizeof ids[i]);
        snprintf(started[i].path, sizeof started[i].path, "%s/started-%s", th_tmpdir(), ids[i]);
        unlink(started[i].path);
    }
    char errp[160];
    pid_t pid = cli_worker_start(p, q, CLI_ARGV("--concurrency", "2"), errp, sizeof errp);
    for (int i = 0; i < 2; i++)
        if (!th_wait_until(th_file_exists, &started[i], 30000)) {
            kill(pid, SIGKILL);
            cli_wait(pid, 10000);
            fail_msg("job %s never started; log:\n%s", ids[i], th_slurp(errp));
        }
    kill(pid, SIGTERM);
    /* (two signals sent at once may arrive as one) */
    th_log_arg first = {errp, "SIGTERM received: finishing running jobs"};
    if (!th_wait_until(th_log_has, &first, 30000)) {
        kill(pid, SIGKILL);
        cli_wait(pid, 10000);
        fail_msg("the first SIGTERM was not taken; log:\n%s", th_slurp(errp));
    }
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    free(log);
    for (int i = 0; i < 2; i++) {
        cli_expect_state(p, q, ids[i], "delayed");
        cli_expect_field(p, q, ids[i], "failedReason", reasons[i]);
        char *atm = cli_hget(p, q, ids[i], "atm");
        if (atm && strcmp(atm, "0") != 0)
            fail_msg("%s: an attempt was spent: atm %s", names[i], atm);
        free(atm);
    }
}

/* A stop signal while the worker is still connecting (here to a server that accepts and
 * never answers, under a 60 s command timeout) exits 0 at once. */
static void test_signal_while_connecting(void **state) {
    (void)state;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(ls, 8), 0);
    assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
    char silent[64];
    snprintf(silent, sizeof silent, "redis://127.0.0.1:%d", ntohs(a.sin_port));
    char errp[160], outp[160];
    snprintf(errp, sizeof errp, "%s/connecting.err", th_tmpdir());
    snprintf(outp, sizeof outp, "%s/connecting.out", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("worker", "q", "--redis", silent, "--command-timeout", "60000",
                                   "--", cli_job_script()),
                          NULL, NULL, outp, errp);
    /* the worker has connected and waits for its first reply */
    struct pollfd pfd = {ls, POLLIN, 0};
    int ready = poll(&pfd, 1, 30000);
    int cs = ready == 1 ? accept(ls, NULL, NULL) : -1;
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 20000);
    char *log = th_slurp(errp);
    if (cs < 0) fail_msg("the worker never connected; log:\n%s", log);
    if (code != 0 || !strstr(log, "SIGTERM received while connecting: exiting, no job was taken"))
        fail_msg("exit %d; log:\n%s", code, log);
    free(log);
    close(cs);
    close(ls);
}

static void test_max_jobs_and_idle_exit(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "bounded";
    char id[64];
    cli_add_job(p, q, "text", "{}", "{}", id, sizeof id);
    char errp[160];
    pid_t pid = cli_worker_start(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    int code = cli_wait(pid, 60000);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, th_slurp(errp));
    cli_expect_state(p, q, id, "completed");

    pid = cli_worker_start(p, q, CLI_ARGV("--idle-exit", "200"), errp, sizeof errp);
    code = cli_wait(pid, 60000);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, th_slurp(errp));
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
        {"--remove-on-complete", "{\"age\":-1}", NULL, NULL, "--remove-on-complete: keepJobs.age"},
        {"--remove-on-fail", "\"x\"", NULL, NULL, "--remove-on-fail: keepJobs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        if (bad[i].a2)
            CLI(r, "worker", "q", "--redis", cli_url(), bad[i].a1, bad[i].v1, bad[i].a2, bad[i].v2,
                "--", "/bin/true");
        else
            CLI(r, "worker", "q", "--redis", cli_url(), bad[i].a1, bad[i].v1, "--", "/bin/true");
        if (r.code != 2 || !strstr(r.err, bad[i].err_has) || cli_lines(r.err) != 1)
            fail_msg("%s %s %s %s: exit %d, stderr '%s' (want 2 and one line with '%s')", bad[i].a1,
                     bad[i].v1, bad[i].a2 ? bad[i].a2 : "", bad[i].v2 ? bad[i].v2 : "", r.code,
                     r.err, bad[i].err_has);
        cli_run_free(&r);
    }
    char name[258];
    memset(name, 'n', 257);
    name[257] = 0;
    cli_run r;
    CLI(r, "worker", "q", "--redis", cli_url(), "--name", name, "--", "/bin/true");
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, "--name: expected 1 to 256 bytes, got 257")) fail_msg("stderr: %s", r.err);
    cli_run_free(&r);
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
    const char *p = th_prefix(), *q = "logs";
    const char *data = "{\"traceId\":\"trace-e-42\",\"secret\":\"" SECRET "\"}";
    char ok_id[64], perm[64], later[64], trans[64];
    cli_add_job(p, q, "text", data, "{}", ok_id, sizeof ok_id);
    cli_add_job(p, q, "permanent", data, "{\"attempts\":3}", perm, sizeof perm);
    cli_add_job(p, q, "postpone:once:118:FERRY_RETRY_AFTER_MS=0", data, "{\"attempts\":2}", later,
                sizeof later);
    cli_add_job(p, q, "transient", data, "{\"attempts\":2}", trans, sizeof trans);
    char errp[160];
    pid_t pid = cli_worker_start(p, q, CLI_ARGV("--log-format", "json", "--max-jobs", "6"), errp,
                                 sizeof errp);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
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
    cli_add_job(p, q, "text", data, "{}", t2, sizeof t2);
    pid = cli_worker_start(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    code = cli_wait(pid, 60000);
    log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    char want[200];
    snprintf(want, sizeof want, "ferry worker: queue=%s job=text id=%s attempt=1 trace=trace-e-42",
             q, t2);
    if (!strstr(log, want) || !strstr(log, "outcome=completed") || strstr(log, SECRET))
        fail_msg("text log line: want '%s', outcome, no data:\n%s", want, log);
    free(log);
    cli_add_job(p, q, "text", data, "{}", t2, sizeof t2);
    pid = cli_worker_start(p, q, CLI_ARGV("--max-jobs", "1", "--log-format", "none"), errp,
                           sizeof errp);
    code = cli_wait(pid, 60000);
    log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    if (strstr(log, "outcome=") || strstr(log, "\"outcome\""))
        fail_msg("--log-format none still logged outcomes:\n%s", log);
    cli_expect_state(p, q, t2, "completed");
    free(log);
}

static void test_worker_unreachable_redis(void **state) {
    (void)state;
    cli_run r;
    /* a worker waits for its Redis at start: --connect-timeout bounds that */
    CLI(r, "worker", "q", "--redis", "redis://127.0.0.1:1", "--command-timeout", "2000",
        "--connect-timeout", "500", "--", "/bin/true");
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    cli_run_free(&r);
}

/* --max-stalled-count 0 is BullMQ's maxStalledCount 0: a job whose worker died (taken with
 * a short lock that nobody renews) fails at its first stall instead of running again. */
static void test_max_stalled_count_zero_fails_first_stall(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "stall0";
    char id[64];
    cli_add_job(p, q, "echo", "{}", "{\"attempts\":3}", id, sizeof id);
    /* a worker that then dies: it takes the job with a 200 ms lock, never renewed */
    char base[160];
    snprintf(base, sizeof base, "%s:%s:", p, q);
    ferry_conn *c = th_conn();
    wt_dead_worker_fetch(c, base, id, 200);
    ferry__conn_close(c);

    char errp[160];
    pid_t pid =
        cli_worker_start(p, q, CLI_ARGV("--max-stalled-count", "0", "--stalled-interval", "1000"),
                         errp, sizeof errp);
    cli_finished_arg fa = {p, q, 1};
    int ok = th_wait_until(cli_all_finished, &fa, 20000);
    kill(pid, SIGTERM);
    int code = cli_wait(pid, 30000);
    char *log = th_slurp(errp);
    if (!ok) fail_msg("the stalled job was not settled; worker log:\n%s", log);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    free(log);
    cli_expect_state(p, q, id, "failed");
    cli_expect_field(p, q, id, "failedReason", "job stalled more than allowable limit");
    cli_expect_field(p, q, id, "stc", "1");
    /* failed with attempts left and no returnvalue: the fetch that followed the stall
     * failed it without running the command (ats still counts that fetch, as in BullMQ) */
    char *rv = cli_hget(p, q, id, "returnvalue");
    if (rv) fail_msg("job %s ran: returnvalue %s", id, rv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_code_contract),
        cmocka_unit_test(test_sigterm_lets_running_job_finish),
        cmocka_unit_test(test_second_signal_hands_job_back),
        cmocka_unit_test(test_signal_while_connecting),
        cmocka_unit_test(test_max_jobs_and_idle_exit),
        cmocka_unit_test(test_worker_unreachable_redis),
        cmocka_unit_test(test_http_outcome),
        cmocka_unit_test(test_worker_option_validation),
        cmocka_unit_test(test_log_lines),
        cmocka_unit_test(test_max_stalled_count_zero_fails_first_stall),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
