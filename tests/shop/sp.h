/* sp.h - start the example programs (shop-fakes, shop-api, shop-worker, taskflow-*) as child
 * processes for the shop tests, and stop or kill them for real.
 *
 * A program is found in SHOP_BIN_DIR (set by tests/shop/CMakeLists.txt). Its stdout and
 * stderr go to files in th_tmpdir(); a server is ready when it has printed "listening on
 * 127.0.0.1:PORT", a worker when it has printed "ready" (both on stdout). Header-only, like
 * the other support helpers. */
#ifndef SHOP_TEST_SP_H
#define SHOP_TEST_SP_H

#include "support/th.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { SP_NONE = 0, SP_PORT = 1, SP_READY = 2 };

typedef struct sp_proc {
    pid_t pid;
    int port;
    char out_path[512], err_path[512];
} sp_proc;

/* Print the child's stderr (the reason it did not come up) into the test log. */
static inline void sp_dump(const sp_proc *p) {
    char *e = th_slurp(p->err_path);
    print_message("---- %s ----\n%s\n----\n", p->err_path, e ? e : "(none)");
    free(e);
}

/* Start SHOP_BIN_DIR/prog with args (NULL-terminated; may be NULL) and extra environment
 * "K=V" (NULL-terminated; may be NULL), then wait up to 15 s for `want` (SP_PORT: the
 * "listening on" line, whose port lands in p->port; SP_READY: a "ready" line; SP_NONE: no
 * wait). Fails the test, with the child's stderr, when the child exits or the time passes. */
static inline void sp_start(sp_proc *p, const char *prog, const char *const *args,
                            const char *const *env, int want) {
    static int seq;
    memset(p, 0, sizeof *p);
    const char *dir = getenv("SHOP_BIN_DIR"); /* set by tests/shop/CMakeLists.txt */
    if (!dir || !*dir) fail_msg("SHOP_BIN_DIR is not set (run the shop tests through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, prog);
    const char *argv[64];
    int n = 0;
    argv[n++] = path;
    for (int i = 0; args && args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int k = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
    snprintf(p->out_path, sizeof p->out_path, "%s/%s.%d.out", th_tmpdir(), prog, k);
    snprintf(p->err_path, sizeof p->err_path, "%s/%s.%d.err", th_tmpdir(), prog, k);
    char **envp = th_env_with(env, NULL);
    p->pid = th_spawn(argv, envp, NULL, p->out_path, p->err_path, 0);
    free(envp);
    if (want == SP_NONE) return;
    long long deadline = th_mono_ms() + 15000;
    for (;;) {
        char *out = th_slurp(p->out_path);
        if (out) {
            const char *l = strstr(out, "listening on ");
            if (want == SP_PORT && l) {
                const char *colon = strchr(l + 13, ':');
                const char *nl = colon ? strchr(colon, '\n') : NULL;
                if (colon && nl) {
                    p->port = atoi(colon + 1);
                    free(out);
                    if (p->port > 0) return;
                    sp_dump(p);
                    fail_msg("%s printed no usable port", prog);
                }
            }
            if (want == SP_READY && (strncmp(out, "ready\n", 6) == 0 || strstr(out, "\nready\n"))) {
                free(out);
                return;
            }
            free(out);
        }
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            sp_dump(p);
            fail_msg("%s exited before it was ready (status %d)", prog,
                     WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        }
        if (th_mono_ms() > deadline) {
            sp_dump(p);
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            p->pid = 0;
            fail_msg("%s was not ready within 15 s", prog);
        }
        th_sleep_ms(20);
    }
}

/* SIGTERM, then wait up to timeout_ms. Returns the exit status (0..255; 128+signal when a
 * signal ended it), or -1 when it had to be killed (SIGKILL after the timeout). */
static inline int sp_stop(sp_proc *p, int timeout_ms) {
    if (p->pid <= 0) return -1;
    kill(p->pid, SIGTERM);
    long long deadline = th_mono_ms() + timeout_ms;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid) break;
        if (r < 0 && errno != EINTR) {
            p->pid = 0;
            return -1;
        }
        if (th_mono_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &st, 0);
            p->pid = 0;
            return -1;
        }
        th_sleep_ms(10);
    }
    p->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* SIGKILL and reap (a crash, for the tests where that is the point). */
static inline void sp_kill(sp_proc *p) {
    if (p->pid <= 0) return;
    kill(p->pid, SIGKILL);
    int st;
    waitpid(p->pid, &st, 0);
    p->pid = 0;
}

/* Wait up to timeout_ms for a child meant to exit by itself; returns its exit code (128 + the
 * signal when one ended it). Kills it and fails the test when the time passes. */
static inline int sp_wait_exit(sp_proc *p, int timeout_ms) {
    long long deadline = th_mono_ms() + timeout_ms;
    for (;;) {
        int st;
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        if (th_mono_ms() > deadline) {
            sp_kill(p);
            fail_msg("the program did not exit within %d ms", timeout_ms);
        }
        th_sleep_ms(10);
    }
}

/* "http://127.0.0.1:PORT" + path into buf. Returns buf. */
static inline const char *sp_url(const sp_proc *p, const char *path, char *buf, size_t cap) {
    snprintf(buf, cap, "http://127.0.0.1:%d%s", p->port, path ? path : "");
    return buf;
}

#endif
