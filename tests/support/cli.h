/* cli.h - run the built `ferry` binary ($FERRY_BIN) from the CLI integration tests, prefix
 * cli_: posix_spawn with stdin fed from a file and stdout/stderr captured in files of the
 * test's temp directory (no pipe juggling, no deadlock on large output), exit codes and
 * output checks; and for the `ferry worker` tests the job command (a shell script whose
 * behaviour is chosen by the job name), adding jobs and starting `ferry worker` in the
 * background, and reading job state from the fixture's Redis. Header-only (static inline):
 * each test file is its own executable. */
#ifndef FERRY_TEST_CLI_H
#define FERRY_TEST_CLI_H

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/th.h"

extern char **environ;

/* ---- running the binary --------------------------------------------------------------- */

typedef struct cli_run {
    int code;     /* exit status, or 128 + signal */
    char *out;    /* stdout (malloc'd, NUL-terminated) */
    char *err;    /* stderr (malloc'd, NUL-terminated) */
    long long ms; /* wall time */
} cli_run;

static inline const char *cli_bin(void) {
    const char *b = getenv("FERRY_BIN");
    if (!b) fail_msg("FERRY_BIN is not set; run through ctest");
    return b;
}

/* The fixture's plain Redis, for --redis. */
static inline const char *cli_url(void) {
    return th_env_require("REDIS_URL");
}

/* Start $FERRY_BIN with argv (NULL-terminated, without the program name); stdin from
 * `in_path` (or /dev/null), stdout/stderr to the given files, extra_env ("K=V",
 * NULL-terminated, may be NULL) added to the inherited environment. Returns the pid. */
static inline pid_t cli_start(const char *const *argv, const char *const *extra_env,
                              const char *in_path, const char *out_path, const char *err_path) {
    size_t n = 0;
    while (argv[n])
        n++;
    const char **args = calloc(n + 2, sizeof *args);
    args[0] = cli_bin();
    for (size_t i = 0; i < n; i++)
        args[i + 1] = argv[i];
    char **env = th_env_with(extra_env, NULL);
    pid_t pid = th_spawn(args, env, in_path, out_path, err_path, 0);
    free(env);
    free(args);
    return pid;
}

/* Wait for pid up to timeout_ms (then SIGKILL and fail). Returns exit code or 128+sig. */
static inline int cli_wait(pid_t pid, int timeout_ms) {
    long long deadline = th_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t p = waitpid(pid, &st, WNOHANG);
        if (p == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (th_mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("ferry (pid %d) did not exit within %d ms", (int)pid, timeout_ms);
        }
        th_sleep_ms(5);
    }
}

/* Run to completion with optional stdin text and extra environment. */
static inline void cli_exec_env(cli_run *r, const char *input, const char *const *extra_env,
                                const char *const *argv) {
    char in[128], out[128], err[128];
    snprintf(in, sizeof in, "%s/stdin", th_tmpdir());
    snprintf(out, sizeof out, "%s/stdout", th_tmpdir());
    snprintf(err, sizeof err, "%s/stderr", th_tmpdir());
    if (input) th_write_file(in, input, 0600);
    long long t0 = th_mono_ms();
    pid_t pid = cli_start(argv, extra_env, input ? in : NULL, out, err);
    r->code = cli_wait(pid, 60000);
    r->ms = th_mono_ms() - t0;
    r->out = th_slurp(out);
    r->err = th_slurp(err);
}

/* s past the "YYYY-MM-DDTHH:MM:SS.mmmZ " a long-running command's lines start with (the
 * timestamp of cmd/ferry/logline.h), or s itself when it has none. */
static inline const char *cli_skip_timestamp(const char *s) {
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
    for (size_t i = 0; shape[i]; i++) {
        if (!s[i]) return s;
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i]) return s;
    }
    return s + sizeof shape - 1;
}

static inline void cli_run_free(cli_run *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

#define CLI_ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})
/* CLI(r, "queue", "add", ...): run with no stdin and the inherited environment. */
#define CLI(r, ...) cli_exec_env(&(r), NULL, NULL, CLI_ARGV(__VA_ARGS__))
#define CLI_IN(r, input, ...) cli_exec_env(&(r), (input), NULL, CLI_ARGV(__VA_ARGS__))

/* Fail with the captured output when the exit code is not `want`. */
#define CLI_EXPECT(r, want)                                                                        \
    do {                                                                                           \
        if ((r).code != (want))                                                                    \
            fail_msg("exit %d, want %d\nstdout: %s\nstderr: %s", (r).code, (want), (r).out,        \
                     (r).err);                                                                     \
    } while (0)

/* Number of '\n'-terminated lines in s. */
static inline int cli_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        if (*s == '\n') n++;
    return n;
}

/* ---- `ferry worker` ------------------------------------------------------------------- */

/* The job command's path in the temp directory (written on first use). Its behaviour is
 * chosen by the job name; see the cases below. */
static inline const char *cli_job_script(void) {
    static const char text[] =
        "#!/bin/sh\n"
        "# test job for ferry worker; behaviour chosen by the job name\n"
        "data=$(cat)\n"
        "case \"$FERRY_JOB_NAME\" in\n"
        "  echo) printf "
        "'{\"queue\":\"%s\",\"id\":\"%s\",\"name\":\"%s\",\"attempt\":%s,\"data\":%s}\\n' "
        "\"$FERRY_QUEUE\" \"$FERRY_JOB_ID\" \"$FERRY_JOB_NAME\" \"$FERRY_ATTEMPT\" \"$data\" ;;\n"
        "  text) echo 'plain words' ;;\n"
        "  nulout) printf 'a\\000b' ;;\n"
        "  bigint) echo '{\"n\":100000000000000000000}' ;;\n"
        "  binout) printf '\\377\\376abc' ;;\n"
        "  flaky) if [ \"$FERRY_ATTEMPT\" = 1 ]; then echo 'first attempt glitch' >&2; exit 75; "
        "fi\n"
        "         echo '\"second time lucky\"' ;;\n"
        "  transient) echo 'noise' >&2; echo 'still down' >&2; echo >&2; exit 75 ;;\n"
        "  permanent) echo 'bad input' >&2; exit 65 ;;\n"
        "  quiet) exit 3 ;;\n"
        "  crash) kill -9 $$ ;;\n"
        "  hang) while :; do sleep 1; done ;;\n"
        "  trapwait) trap 'exit 1' TERM; : > \"$CLITEST_DIR/started-$FERRY_JOB_ID\"\n"
        "        while [ ! -e \"$CLITEST_DIR/go\" ]; do sleep 0.05; done\n"
        "        echo '\"finished\"' ;;\n"
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
        "  longerr:*) # one stderr line of N 'x', then exit 3\n"
        "    head -c \"${FERRY_JOB_NAME#longerr:}\" /dev/zero | tr '\\0' x >&2; echo >&2; exit 3 "
        ";;\n"
        "  longerr-utf8) # 'a' + 600 x U+00E9 (2 bytes each) on one line\n"
        "    printf a >&2; i=0; while [ $i -lt 600 ]; do printf '\\303\\251' >&2; i=$((i+1)); "
        "done\n"
        "    echo >&2; exit 3 ;;\n"
        "  longerr-then-blank) # a short line, a 5000-byte line, a line of blanks\n"
        "    echo 'short first' >&2; head -c 5000 /dev/zero | tr '\\0' y >&2; echo >&2\n"
        "    echo '   ' >&2; exit 3 ;;\n"
        "  longerr-then-short) head -c 9000 /dev/zero | tr '\\0' z >&2; echo >&2\n"
        "    printf 'short last\\r\\n' >&2; exit 3 ;;\n"
        "  http:*) rest=${FERRY_JOB_NAME#http:}  # http:STATUS:RETRY-AFTER\n"
        "    exec \"$FERRY_BIN\" http-outcome \"${rest%%:*}\" \"${rest#*:}\" ;;\n"
        "  *) echo \"unknown job $FERRY_JOB_NAME\" >&2; exit 65 ;;\n"
        "esac\n";
    static char path[128];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/job.sh", th_tmpdir());
        th_write_file(path, text, 0755);
    }
    return path;
}

/* Add a job through the CLI; its id goes to id (cap bytes). */
static inline void cli_add_job(const char *p, const char *q, const char *name, const char *data,
                               const char *opts, char *id, size_t cap) {
    cli_run r;
    CLI(r, "queue", "add", q, name, data, "--opts", opts, "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    snprintf(id, cap, "%s", r.out);
    id[strcspn(id, "\n")] = 0;
    cli_run_free(&r);
}

/* Start `ferry worker ... -- cmd` in the background (CLITEST_DIR set to the temp
 * directory); stderr goes to the path written to err_path. */
static inline pid_t cli_worker_start_cmd(const char *p, const char *q,
                                         const char *const *extra_args, const char *cmd,
                                         char *err_path, size_t cap) {
    static int n;
    char out_path[160];
    snprintf(err_path, cap, "%s/worker%d.err", th_tmpdir(), n);
    snprintf(out_path, sizeof out_path, "%s/worker%d.out", th_tmpdir(), n++);
    const char *argv[40];
    int k = 0;
    argv[k++] = "worker";
    argv[k++] = q;
    argv[k++] = "--redis";
    argv[k++] = cli_url();
    argv[k++] = "--prefix";
    argv[k++] = p;
    for (int i = 0; extra_args && extra_args[i]; i++)
        argv[k++] = extra_args[i];
    argv[k++] = "--";
    argv[k++] = cmd;
    argv[k] = NULL;
    static char dirvar[160];
    snprintf(dirvar, sizeof dirvar, "CLITEST_DIR=%s", th_tmpdir());
    return cli_start(argv, CLI_ARGV(dirvar), NULL, out_path, err_path);
}

/* Start `ferry worker` running cli_job_script in the background. */
static inline pid_t cli_worker_start(const char *p, const char *q, const char *const *extra_args,
                                     char *err_path, size_t cap) {
    return cli_worker_start_cmd(p, q, extra_args, cli_job_script(), err_path, cap);
}

/* ---- job state in the fixture's Redis (each call opens its own connection) ------------- */

static inline long long cli_zcard(ferry_conn *c, const char *p, const char *q, const char *set) {
    return th_cmd_int(c, "ZCARD %s:%s:%s", p, q, set);
}

static inline long long cli_llen(const char *p, const char *q, const char *list) {
    ferry_conn *c = th_conn();
    long long v = th_cmd_int(c, "LLEN %s:%s:%s", p, q, list);
    ferry__conn_close(c);
    return v;
}

/* Wait condition: completed + failed of the queue reached want. */
typedef struct cli_finished_arg {
    const char *prefix, *queue;
    long long want;
} cli_finished_arg;

static inline int cli_all_finished(void *arg) {
    cli_finished_arg *a = arg;
    ferry_conn *c = th_conn();
    long long n = cli_zcard(c, a->prefix, a->queue, "completed") +
                  cli_zcard(c, a->prefix, a->queue, "failed");
    ferry__conn_close(c);
    return n >= a->want;
}

/* HGET of one job field (malloc'd copy, or NULL). */
static inline char *cli_hget(const char *p, const char *q, const char *id, const char *field) {
    char key[2048];
    snprintf(key, sizeof key, "%s:%s:%s", p, q, id);
    ferry_conn *c = th_conn();
    char *v = th_hget(c, key, field);
    ferry__conn_close(c);
    return v;
}

static inline void cli_expect_field(const char *p, const char *q, const char *id, const char *field,
                                    const char *want) {
    char key[2048];
    snprintf(key, sizeof key, "%s:%s:%s", p, q, id);
    ferry_conn *c = th_conn();
    th_expect_field(c, key, field, want);
    ferry__conn_close(c);
}

/* 1 when id is a member of the queue's sorted set `set` (completed, failed, delayed...). */
static inline int cli_in_set(const char *p, const char *q, const char *set, const char *id) {
    char key[2048];
    snprintf(key, sizeof key, "%s:%s:%s", p, q, set);
    ferry_conn *c = th_conn();
    char *score = th_zscore(c, key, id);
    ferry__conn_close(c);
    int found = score != NULL;
    free(score);
    return found;
}

static inline void cli_expect_state(const char *p, const char *q, const char *id, const char *set) {
    if (!cli_in_set(p, q, set, id)) fail_msg("job %s is not in %s", id, set);
}

#endif
