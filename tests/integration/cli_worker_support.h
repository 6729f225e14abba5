/* cli_worker_support.h - helpers shared by the `ferry worker` CLI tests
 * (test_cli_worker.c, test_cli_worker_postpone.c): the job command (a shell script whose
 * behaviour is chosen by the job name), adding jobs and starting `ferry worker` through the
 * real binary, and reading job state from the fixture's Redis. Header-only (each test file
 * is its own executable). */
#ifndef FERRY_TEST_CLI_WORKER_SUPPORT_H
#define FERRY_TEST_CLI_WORKER_SUPPORT_H

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
    "  nulout) printf 'a\\000b' ;;\n"
    "  bigint) echo '{\"n\":100000000000000000000}' ;;\n"
    "  binout) printf '\\377\\376abc' ;;\n"
    "  flaky) if [ \"$FERRY_ATTEMPT\" = 1 ]; then echo 'first attempt glitch' >&2; exit 75; fi\n"
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
    "    head -c \"${FERRY_JOB_NAME#longerr:}\" /dev/zero | tr '\\0' x >&2; echo >&2; exit 3 ;;\n"
    "  longerr-utf8) # 'a' + 600 x U+00E9 (2 bytes each) on one line\n"
    "    printf a >&2; i=0; while [ $i -lt 600 ]; do printf '\\303\\251' >&2; i=$((i+1)); done\n"
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

static inline const char *url(void) {
    return testenv_require("REDIS_URL");
}

static inline const char *script_path(void) {
    static char path[128];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/job.sh", cli_tmpdir());
        cli_write_file(path, job_script, 0755);
    }
    return path;
}

/* Add a job through the CLI; returns its id (static slot, copy it to keep several). */
static inline void add_job(const char *p, const char *q, const char *name, const char *data,
                           const char *opts, char *id, size_t cap) {
    cli_run r;
    CLI(r, "queue", "add", q, name, data, "--opts", opts, "--redis", url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    snprintf(id, cap, "%s", r.out);
    id[strcspn(id, "\n")] = 0;
    cli_run_free(&r);
}

/* Start `ferry worker ... -- cmd` in the background; stderr goes to the returned path. */
static inline pid_t start_worker_cmd(const char *p, const char *q, const char *const *extra_args,
                                     const char *cmd, char *err_path, size_t cap) {
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
    argv[k++] = cmd;
    argv[k] = NULL;
    static char dirvar[160];
    snprintf(dirvar, sizeof dirvar, "CLITEST_DIR=%s", cli_tmpdir());
    return cli_start(argv, CLI_ARGV(dirvar), NULL, out_path, err_path);
}

/* Start `ferry worker` running the test script in the background. */
static inline pid_t start_worker(const char *p, const char *q, const char *const *extra_args,
                                 char *err_path, size_t cap) {
    return start_worker_cmd(p, q, extra_args, script_path(), err_path, cap);
}

typedef struct finished_arg {
    const char *prefix, *queue;
    long long want;
} finished_arg;

static inline long long zcard(ferry_conn *c, const char *p, const char *q, const char *set) {
    redisReply *r = testenv_cmd(c, "ZCARD %s:%s:%s", p, q, set);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

static inline int all_finished(void *arg) {
    finished_arg *a = arg;
    ferry_conn *c = testenv_conn();
    long long n =
        zcard(c, a->prefix, a->queue, "completed") + zcard(c, a->prefix, a->queue, "failed");
    ferry__conn_close(c);
    return n >= a->want;
}

/* HGET of one job field (malloc'd copy, or NULL). */
static inline char *hget(const char *p, const char *q, const char *id, const char *field) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "HGET %s:%s:%s %s", p, q, id, field);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    ferry__conn_close(c);
    return v;
}

static inline void expect_field(const char *p, const char *q, const char *id, const char *field,
                                const char *want) {
    char *v = hget(p, q, id, field);
    if (!v || strcmp(v, want) != 0)
        fail_msg("job %s field %s: got %s, want %s", id, field, v ? v : "(absent)", want);
    free(v);
}

static inline int in_set(const char *p, const char *q, const char *set, const char *id) {
    ferry_conn *c = testenv_conn();
    redisReply *r = testenv_cmd(c, "ZSCORE %s:%s:%s %s", p, q, set, id);
    int found = r->type == REDIS_REPLY_STRING;
    freeReplyObject(r);
    ferry__conn_close(c);
    return found;
}

static inline void expect_state(const char *p, const char *q, const char *id, const char *set) {
    if (!in_set(p, q, set, id)) fail_msg("job %s is not in %s", id, set);
}

/* Wait condition: the file at `path` exists. */
typedef struct file_arg {
    char path[200];
} file_arg;

static inline int file_exists(void *arg) {
    return access(((file_arg *)arg)->path, F_OK) == 0;
}

#endif
