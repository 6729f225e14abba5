/* exec_guard.c - the guard of one job's command, in a process of its own (`ferry
 * EXEC_GUARD_MODE CMD...`): it starts the command, carries out the worker's requests on
 * the lifeline, and kills the command and everything it started when the worker is gone
 * (see exec_job.h for the design, exec_guard.h for the protocol). */
#define _GNU_SOURCE /* signalfd */
#include "exec_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_job.h"

extern char **environ;

/* How long the guard waits for a killed descendant before it looks for more to kill. */
#define GUARD_RESCAN_MS 20

/* Tell the worker why the command could not be started, then leave. */
static void guard_fail(int e) {
    ssize_t w = write(GUARD_REPORT_FD, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The worker is gone when the lifeline reads EOF (its write end closed) or fails. Reads
 * and carries out the worker's requests meanwhile. Returns 1 when gone. */
static int guard_lifeline(pid_t cmd) {
    for (;;) {
        char req[64];
        ssize_t n = read(GUARD_LIFELINE_FD, req, sizeof req);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) return 1;
        for (ssize_t i = 0; i < n; i++)
            if (req[i] == GUARD_REQ_TERM)
                kill(-cmd, SIGTERM);
            else if (req[i] == GUARD_REQ_KILL)
                kill(-cmd, SIGKILL);
    }
}

/* SIGKILL every child of this process, found in /proc (a descendant whose parent died has
 * been reparented here: the guard is a child subreaper). Returns how many were signalled. */
static int guard_kill_children(void) {
    DIR *d = opendir("/proc");
    if (!d) return 0;
    pid_t self = getpid();
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        char path[300], stat[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        ssize_t len = read(fd, stat, sizeof stat - 1);
        close(fd);
        if (len <= 0) continue;
        stat[len] = 0;
        /* "pid (comm) state ppid ...": comm may hold anything, ')' included */
        char *rp = strrchr(stat, ')');
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == self) {
            kill((pid_t)atoi(e->d_name), SIGKILL);
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Kill and reap everything the command left: its process group (signalled by the caller
 * while `cmd` could not be reused: alive or a zombie) and every other descendant, however
 * far it went (setsid, double fork), until this process has no child left. */
static void guard_kill_rest(int sigfd) {
    for (;;) {
        guard_kill_children();
        pid_t p;
        int status;
        while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
        }
        if (p < 0 && errno == ECHILD) return;
        /* Children remain: they die now, or one was reparented here after the scan. */
        struct pollfd pf = {sigfd, POLLIN, 0};
        if (poll(&pf, 1, GUARD_RESCAN_MS) > 0) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
            }
        }
    }
}

/* Leave as the command did: the same exit code, or death by the same signal (without a
 * core dump: the command's own dump, if any, was already written). */
static void guard_exit_like(int status) {
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig); /* pending: blocked */
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig); /* a signal whose default is not to terminate: not from a wait status */
}

int exec_guard_main(int argc, char **argv) {
    struct stat ls, rs;
    if (argc < 1 || fstat(GUARD_LIFELINE_FD, &ls) != 0 || !S_ISFIFO(ls.st_mode) ||
        fstat(GUARD_REPORT_FD, &rs) != 0 || !S_ISFIFO(rs.st_mode)) {
        fprintf(stderr, "ferry: %s is used by `ferry worker` internally; it is not a command\n",
                EXEC_GUARD_MODE);
        return 2;
    }
    /* Neither descriptor may reach the command: one that kept the lifeline open would keep
     * its own guard waiting for a worker that is gone. */
    fcntl(GUARD_LIFELINE_FD, F_SETFD, FD_CLOEXEC);
    fcntl(GUARD_REPORT_FD, F_SETFD, FD_CLOEXEC);
    fcntl(GUARD_LIFELINE_FD, F_SETFL, fcntl(GUARD_LIFELINE_FD, F_GETFL) | O_NONBLOCK);
    /* Every signal blocked (not ignored, which the command would inherit): a SIGTERM meant
     * for the command's group, or a stray one, never stops the guard. SIGCHLD is read from
     * a signalfd. */
    sigset_t all, chld;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) guard_fail(errno);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) guard_fail(errno);
    /* The worker may have died while this process started. */
    struct pollfd lp = {GUARD_LIFELINE_FD, POLLIN, 0};
    if (poll(&lp, 1, 0) == 1 && (lp.revents & (POLLHUP | POLLERR))) _exit(1);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    exec_spawn_attr_init(&at);
    pid_t cmd;
    int rc = posix_spawnp(&cmd, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc) guard_fail(rc);
    /* The job's pipes belong to the command alone: the worker sees EOF on stdout/stderr and
     * EPIPE on stdin when the command is done with them. */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3; fd++)
        if (null < 0 || dup2(null, fd) < 0) close(fd);
    if (null > 2) close(null);

    for (;;) {
        struct pollfd pf[2] = {{GUARD_LIFELINE_FD, POLLIN, 0}, {sigfd, POLLIN, 0}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR) break;
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
            }
            /* Reap descendants that ended while the command runs; the command itself is
             * only looked at, so that its pid (and group id) stays taken until the rest of
             * the group has been killed. */
            siginfo_t info;
            for (;;) {
                memset(&info, 0, sizeof info);
                if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || !info.si_pid)
                    break;
                if (info.si_pid == cmd) goto command_done;
                waitpid(info.si_pid, NULL, 0);
            }
        }
        if (pf[0].revents && guard_lifeline(cmd)) {
            /* The worker is gone, however it died: so is the job. */
            kill(-cmd, SIGKILL);
            guard_kill_rest(sigfd);
            _exit(1);
        }
    }
    /* (poll failed: cannot happen with valid descriptors) */
    kill(-cmd, SIGKILL);
command_done:
    /* What the command left behind ends with it. */
    kill(-cmd, SIGKILL);
    int status = 0;
    while (waitpid(cmd, &status, 0) < 0 && errno == EINTR) {
    }
    guard_kill_rest(sigfd);
    guard_exit_like(status);
    return 1;
}
