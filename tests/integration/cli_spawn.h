/* cli_spawn.h - run the built `ferry` binary ($FERRY_BIN) from CLI integration tests with
 * posix_spawn, feeding stdin and capturing stdout/stderr through temporary files (no pipe
 * juggling, no deadlock on large output). Header-only (static functions) because it is
 * shared by test_cli.c and test_cli_worker.c, each its own test executable. */
#ifndef FERRY_TEST_CLI_SPAWN_H
#define FERRY_TEST_CLI_SPAWN_H

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/testenv.h"

extern char **environ;

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

static inline long long cli_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A private temp directory for this test process (created once). */
static inline const char *cli_tmpdir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ferry-clitest-XXXXXX");
        if (!mkdtemp(dir)) fail_msg("mkdtemp failed");
    }
    return dir;
}

/* Remove the temp directory and its files (flat; call at the end of main). */
static inline void cli_tmpdir_remove(void) {
    DIR *d = opendir(cli_tmpdir());
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", cli_tmpdir(), e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(cli_tmpdir());
}

static inline char *cli_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

static inline void cli_write_file(const char *path, const char *text, int mode) {
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    fputs(text, f);
    fclose(f);
    chmod(path, (mode_t)mode);
}

/* environ plus `extra` ("K=V" strings, NULL-terminated; may be NULL). Caller frees the array. */
static inline char **cli_env(const char *const *extra) {
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    while (extra && extra[k])
        k++;
    char **env = calloc(n + k + 1, sizeof *env);
    memcpy(env, environ, n * sizeof *env);
    for (size_t i = 0; i < k; i++)
        env[n + i] = (char *)extra[i];
    return env;
}

/* Start $FERRY_BIN with argv (NULL-terminated, without the program name); stdin from
 * `in_path` (or /dev/null), stdout/stderr to the given files. Returns the pid. */
static inline pid_t cli_start(const char *const *argv, const char *const *extra_env,
                              const char *in_path, const char *out_path, const char *err_path) {
    size_t n = 0;
    while (argv[n])
        n++;
    char **args = calloc(n + 2, sizeof *args);
    args[0] = (char *)cli_bin();
    for (size_t i = 0; i < n; i++)
        args[i + 1] = (char *)argv[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char **env = cli_env(extra_env);
    pid_t pid;
    int rc = posix_spawn(&pid, args[0], &fa, NULL, args, env);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    free(args);
    if (rc) fail_msg("posix_spawn %s: %s", cli_bin(), strerror(rc));
    return pid;
}

/* Wait for pid up to timeout_ms (then SIGKILL and fail). Returns exit code or 128+sig. */
static inline int cli_wait(pid_t pid, int timeout_ms) {
    long long deadline = cli_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t p = waitpid(pid, &st, WNOHANG);
        if (p == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (cli_mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("ferry (pid %d) did not exit within %d ms", (int)pid, timeout_ms);
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Run to completion with optional stdin text and extra environment. */
static inline void cli_exec_env(cli_run *r, const char *input, const char *const *extra_env,
                                const char *const *argv) {
    char in[128], out[128], err[128];
    snprintf(in, sizeof in, "%s/stdin", cli_tmpdir());
    snprintf(out, sizeof out, "%s/stdout", cli_tmpdir());
    snprintf(err, sizeof err, "%s/stderr", cli_tmpdir());
    if (input) cli_write_file(in, input, 0600);
    long long t0 = cli_mono_ms();
    pid_t pid = cli_start(argv, extra_env, input ? in : NULL, out, err);
    r->code = cli_wait(pid, 60000);
    r->ms = cli_mono_ms() - t0;
    r->out = cli_slurp(out);
    r->err = cli_slurp(err);
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

#endif
