/* test_example_daemon.c - examples/worker-daemon, the worker daemon the docs point to, run as
 * a real process: it processes a job, and on SIGTERM during a job it lets that job finish,
 * writes its result and exits 0; bad arguments are exit 2 with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ferry/ferry.h"
#include "support/th.h"
#include "support/wt.h"

extern char **environ;

static char daemon_path[512];
static char err_path[256];

static const char *daemon_bin(void) {
    if (!daemon_path[0]) {
        const char *bin = getenv("FERRY_BIN"); /* <build>/ferry; examples in <build>/examples */
        if (!bin) fail_msg("FERRY_BIN is not set; run through ctest");
        char copy[512];
        snprintf(copy, sizeof copy, "%s", bin);
        snprintf(daemon_path, sizeof daemon_path, "%s/examples/worker-daemon", dirname(copy));
    }
    return daemon_path;
}

/* Start the daemon with argv (without argv[0]), REDIS_URL/FERRY_PREFIX set, stderr to a
 * file. Returns the pid. */
static pid_t start_daemon(const char *prefix, const char *const *args) {
    snprintf(err_path, sizeof err_path, "/tmp/ferry-daemon-test-%d.err", (int)getpid());
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)daemon_bin();
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    char url[512], pfx[256];
    snprintf(url, sizeof url, "REDIS_URL=%s", th_env_require("REDIS_URL"));
    snprintf(pfx, sizeof pfx, "FERRY_PREFIX=%s", prefix);
    char *env[] = {url, pfx, "PATH=/usr/bin:/bin", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) fail_msg("posix_spawn %s: %s", argv[0], strerror(rc));
    return pid;
}

static int wait_exit(pid_t pid, int timeout_ms) {
    for (int waited = 0;; waited += 10) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (waited > timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("worker-daemon did not exit within %d ms", timeout_ms);
        }
        usleep(10000);
    }
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

typedef struct job_ref {
    ferry_queue *q;
    const char *id;
    const char *state;
} job_ref;

static int job_in_state(void *arg) {
    job_ref *r = arg;
    ferry_job_info *info = NULL;
    ferry_error err = {0};
    int yes = ferry_queue_get_job(r->q, r->id, &info, &err) == 0 && info && info->state &&
              !strcmp(info->state, r->state);
    ferry_job_info_free(info);
    return yes;
}

/* SIGTERM while a job runs: the job completes (its result written), the daemon exits 0. */
static void test_sigterm_finishes_running_job(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    ferry_queue *q = th_queue_open(prefix, "mail", NULL, 0);
    const char *args[] = {"--concurrency", "2", "--work-ms", "1500", "mail", NULL};
    pid_t pid = start_daemon(prefix, args);
    ferry_job_spec spec = {.name = "welcome", .data_json = "{\"to\":\"a@example.com\"}"};
    char *id = NULL;
    ferry_error err = {0};
    assert_int_equal(ferry_queue_add(q, &spec, &id, &err), 0);
    job_ref active = {q, id, "active"};
    assert_true(th_wait_until(job_in_state, &active, 10000));
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(wait_exit(pid, 15000), 0);
    /* the job finished before the daemon exited, with its return value */
    ferry_job_info *info = NULL;
    assert_int_equal(ferry_queue_get_job(q, id, &info, &err), 0);
    assert_string_equal(info->state, "completed");
    assert_string_equal(info->returnvalue, "{\"bytes\":22}");
    ferry_job_info_free(info);
    char *log = slurp(err_path);
    assert_non_null(strstr(log, "SIGTERM received: finishing running jobs"));
    assert_non_null(strstr(log, "outcome=completed"));
    assert_non_null(strstr(log, "stopped (1 completed, 0 failed)"));
    free(log);
    /* a job added after the stop is left for the next worker */
    free(id);
    id = NULL;
    assert_int_equal(ferry_queue_add(q, &spec, &id, &err), 0);
    job_ref waiting = {q, id, "waiting"};
    assert_true(job_in_state(&waiting));
    free(id);
    ferry_queue_close(q);
    unlink(err_path);
}

/* Idle: SIGINT stops it at once (no job), exit 0. */
static void test_sigint_when_idle(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    const char *args[] = {"idle", NULL};
    pid_t pid = start_daemon(prefix, args);
    /* wait for the start line, so the signal lands after the mask is set */
    for (int i = 0; i < 1000; i++) {
        char *log = slurp(err_path);
        int started = strstr(log, "processing idle") != NULL;
        free(log);
        if (started) break;
        usleep(10000);
    }
    assert_int_equal(kill(pid, SIGINT), 0);
    assert_int_equal(wait_exit(pid, 10000), 0);
    char *log = slurp(err_path);
    assert_non_null(strstr(log, "SIGINT received"));
    free(log);
    unlink(err_path);
}

static void test_bad_arguments(void **state) {
    (void)state;
    const char *cases[][4] = {
        {"--concurrency", "0", "q", NULL},
        {"--work-ms", "abc", "q", NULL},
        {"--bogus", "q", NULL, NULL},
        {NULL, NULL, NULL, NULL}, /* no queue */
    };
    const char *want[] = {"--concurrency needs a whole number in 1..1024",
                          "--work-ms needs a whole number in 0..3600000", "unknown option --bogus",
                          "missing QUEUE"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pid_t pid = start_daemon(th_prefix(), cases[i]);
        assert_int_equal(wait_exit(pid, 10000), 2);
        char *log = slurp(err_path);
        if (!strstr(log, want[i])) fail_msg("case %zu: stderr %s lacks %s", i, log, want[i]);
        free(log);
    }
    unlink(err_path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm_finishes_running_job),
        cmocka_unit_test(test_sigint_when_idle),
        cmocka_unit_test(test_bad_arguments),
    };
    return th_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
