/* exec_job.c - spawn one job's command through its guard and shepherd it to completion
 * (see exec_job.h; the guard itself is exec_guard.c, the delay hint exec_hint.c). */
#define _GNU_SOURCE /* posix_spawn_file_actions_addclosefrom_np, pipe2, signalfd */
#include "exec_job.h"
#include "exec_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


extern char **environ;

#define READ_CHUNK 16384 /* on the stack of a handler thread */
#define LINE_MAX_BYTES 4096
/* How long to keep reading after the child exited while a grandchild still holds its
 * stdout/stderr open: the job's outcome is the child's, not the grandchild's. */
#define ORPHAN_PIPE_GRACE_MS 200
/* Longest poll() sleep while the child runs: bounds how late an exit is noticed when the
 * child closed its pipes early (normally EOF on the pipes wakes us at once). */
#define POLL_CAP_MS 100

/* How long after the SIGKILL request the guard has to end before the worker ends the job
 * itself (a guard that the command stopped again, or that cannot reap its command). */
#define GUARD_STUCK_MS 500

/* ---- registry of running children (for exec_kill_all) ----------------------------------- */

typedef struct running {
    pid_t pid;     /* the job's guard */
    int lifeline;  /* [reg_lock] write end of the guard's lifeline; -1 once reaped */
    int signalled; /* [reg_lock] exec_kill_all signalled it */
    int kill_sent; /* [reg_lock] exec_kill_all asked for SIGKILL: the run ends it for sure */
    struct running *next;
} running;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static running *reg_head;

/* Ask the guard to signal its command (GUARD_REQ_*). Non-blocking; a guard that already
 * exited makes this EPIPE, which the caller ignores (SIGPIPE is ignored: exec_job.h).
 * The guard is continued first: the command may have stopped it (SIGSTOP cannot be
 * blocked), and a stopped guard would never read the request. Its pid is safe to signal:
 * it is not reaped while the lifeline is open.
 * Called with reg_lock held, or by the run's own thread (which alone closes the fd). */
static int guard_request(const running *r, char req) {
    if (r->lifeline < 0) return -1;
    kill(r->pid, SIGCONT);
    ssize_t w;
    do
        w = write(r->lifeline, &req, 1);
    while (w < 0 && errno == EINTR);
    return w == 1 ? 0 : -1;
}

/* Reap without blocking. Done under reg_lock so exec_kill_all never writes to a lifeline
 * that has been closed (and whose number might have been reused). Closing the lifeline
 * after the guard is gone changes nothing for it. Returns 1 when reaped. */
static int reg_try_reap(running *r, int *status) {
    pthread_mutex_lock(&reg_lock);
    int reaped = 0;
    pid_t p = waitpid(r->pid, status, WNOHANG);
    if (p == r->pid || (p < 0 && errno == ECHILD)) {
        reaped = 1;
        if (p < 0) *status = 0;
        if (r->lifeline >= 0) close(r->lifeline);
        r->lifeline = -1;
        for (running **pp = &reg_head; *pp; pp = &(*pp)->next)
            if (*pp == r) {
                *pp = r->next;
                break;
            }
    }
    pthread_mutex_unlock(&reg_lock);
    return reaped;
}

int exec_kill_all(int sig) {
    if (sig != SIGTERM && sig != SIGKILL) return 0;
    char req = sig == SIGTERM ? GUARD_REQ_TERM : GUARD_REQ_KILL;
    int n = 0;
    pthread_mutex_lock(&reg_lock);
    for (running *r = reg_head; r; r = r->next)
        if (guard_request(r, req) == 0) {
            r->signalled = 1;
            if (req == GUARD_REQ_KILL) r->kill_sent = 1;
            n++;
        }
    pthread_mutex_unlock(&reg_lock);
    return n;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Per-run stderr line assembly. A line is passed through in pieces of LINE_MAX_BYTES when
 * it is longer, but it is one line for last_err_line: its beginning is kept (`head`), and
 * only a complete line with some text replaces the previous one. */
typedef struct errlines {
    const char *prefix;
    char buf[LINE_MAX_BYTES]; /* the piece being assembled for pass-through */
    size_t len;
    char head[EXEC_ERRLINE_MAX]; /* the current line's first bytes, trailing CRs held back */
    size_t head_len;
    size_t line_len;   /* bytes of the current line so far, held-back CRs excluded */
    size_t pending_cr; /* CRs seen and not yet followed by anything else */
    int has_text;      /* the line has a byte other than blank / tab / CR */
    int piece_out;     /* a piece of the current line was already passed through */
    char *last;        /* result's last_err_line */
} errlines;

/* Pass the assembled piece through to our stderr. */
static void errlines_flush_piece(errlines *e) {
    /* strip a trailing CR (CRLF output) */
    while (e->len && e->buf[e->len - 1] == '\r')
        e->len--;
    fprintf(stderr, "%s%.*s\n", e->prefix, (int)e->len, e->buf);
    e->len = 0;
    e->piece_out = 1;
}

/* Pass through what is left of the line, unless that is nothing after earlier pieces. */
static void errlines_flush_rest(errlines *e) {
    if (e->len || !e->piece_out) errlines_flush_piece(e);
    e->piece_out = 0;
}

static void head_add(errlines *e, char c) {
    if (e->head_len < sizeof e->head) e->head[e->head_len++] = c;
    e->line_len++;
}

/* The line ended: make it last_err_line if it has text. */
static void errlines_end_line(errlines *e) {
    if (e->has_text) {
        if (e->line_len < EXEC_ERRLINE_MAX) {
            memcpy(e->last, e->head, e->line_len);
            e->last[e->line_len] = 0;
        } else {
            /* Too long for a failure reason: keep the start, cut at a UTF-8 character
             * boundary, and say it was cut. */
            size_t keep = EXEC_ERRLINE_MAX - 4;
            for (int k = 0; k < 3 && keep && ((unsigned char)e->head[keep] & 0xc0) == 0x80; k++)
                keep--;
            memcpy(e->last, e->head, keep);
            memcpy(e->last + keep, "...", 4);
        }
    }
    e->head_len = e->line_len = e->pending_cr = 0;
    e->has_text = 0;
}

static void errlines_feed(errlines *e, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            errlines_flush_rest(e);
            errlines_end_line(e);
            continue;
        }
        /* NUL would end the line early in printf and in the stored reason */
        char c = p[i] ? p[i] : ' ';
        if (c == '\r') {
            e->pending_cr++; /* dropped if the line ends here (CRLF) */
        } else {
            for (; e->pending_cr; e->pending_cr--)
                head_add(e, '\r');
            head_add(e, c);
            if (c != ' ' && c != '\t') e->has_text = 1;
        }
        e->buf[e->len++] = c;
        if (e->len == sizeof e->buf) errlines_flush_piece(e); /* very long line: in pieces */
    }
}

/* End of stderr (or of the run): an unterminated last line still counts. */
static void errlines_finish(errlines *e) {
    if (e->len || e->line_len || e->pending_cr) {
        errlines_flush_rest(e);
        errlines_end_line(e);
    }
}

/* ---- the run ------------------------------------------------------------------------------ */

typedef struct run_state {
    const exec_spec *spec;
    exec_result *res;
    int in_w, out_r, err_r;
    int report_r; /* read end of the guard's report pipe */
    size_t in_off;
    size_t out_cap;
    errlines el;
    running child;
    int kill_stage; /* 0 none, 1 SIGTERM sent, 2 SIGKILL sent, 3 the guard killed */
    long long kill_at;
} run_state;

void exec_spawn_attr_init(posix_spawnattr_t *at) {
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    static const int reset[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
                                SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&defaults, reset[i]);
    posix_spawnattr_init(at);
    posix_spawnattr_setsigmask(at, &empty);
    posix_spawnattr_setsigdefault(at, &defaults);
    posix_spawnattr_setpgroup(at, 0);
    posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                     POSIX_SPAWN_SETPGROUP);
}

/* A pipe end moved to a descriptor >= 5 (close-on-exec), so that the dup2s onto 3 and 4 of
 * the guard's file actions never overwrite one another's source. */
static int fd_above_guard_fds(int *fd) {
    int nfd = fcntl(*fd, F_DUPFD_CLOEXEC, GUARD_REPORT_FD + 1);
    if (nfd < 0) return errno;
    close(*fd);
    *fd = nfd;
    return 0;
}

/* Start the job's guard (`ferry EXEC_GUARD_MODE CMD...`, this very binary through
 * /proc/self/exe) with the job's pipes on 0/1/2, the lifeline's read end on 3 and the
 * report pipe's write end on 4. */
static int spawn_child(run_state *st) {
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, life[2] = {-1, -1},
        rep[2] = {-1, -1};
    int rc = 0;
    char **argv = NULL;
    /* O_CLOEXEC: another job's guard spawned concurrently must not inherit these; the
     * lifeline's write end above all, or that guard would keep this one's lifeline open. */
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
        pipe2(life, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
        rc = errno;
        goto fail;
    }
    if ((rc = fd_above_guard_fds(&life[0])) || (rc = fd_above_guard_fds(&rep[1]))) goto fail;
    size_t n = 0;
    while (st->spec->argv[n])
        n++;
    if (!(argv = calloc(n + 3, sizeof *argv))) {
        rc = ENOMEM;
        goto fail;
    }
    argv[0] = (char *)"ferry";
    argv[1] = (char *)EXEC_GUARD_MODE;
    memcpy(argv + 2, st->spec->argv, n * sizeof *argv);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_adddup2(&fa, life[0], GUARD_LIFELINE_FD);
    posix_spawn_file_actions_adddup2(&fa, rep[1], GUARD_REPORT_FD);
    posix_spawn_file_actions_addclosefrom_np(&fa, GUARD_REPORT_FD + 1);
    exec_spawn_attr_init(&at);
    pid_t pid;
    /* Register under the lock with the spawn, so exec_kill_all sees every guard. */
    pthread_mutex_lock(&reg_lock);
    rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, st->spec->envp);
    if (rc == 0) {
        st->child.pid = pid;
        st->child.lifeline = life[1];
        life[1] = -1;
        st->child.next = reg_head;
        reg_head = &st->child;
    }
    pthread_mutex_unlock(&reg_lock);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(argv);
    argv = NULL;
    if (rc) goto fail;
    close(in[0]);
    close(out[1]);
    close(err[1]);
    close(life[0]);
    close(rep[1]);
    st->in_w = in[1];
    st->out_r = out[0];
    st->err_r = err[0];
    st->report_r = rep[0];
    /* A guard that hangs (it never does) must not block the worker's kill requests. */
    fcntl(st->child.lifeline, F_SETFL, fcntl(st->child.lifeline, F_GETFL) | O_NONBLOCK);
    fcntl(st->report_r, F_SETFL, fcntl(st->report_r, F_GETFL) | O_NONBLOCK);
    fcntl(st->in_w, F_SETFL, fcntl(st->in_w, F_GETFL) | O_NONBLOCK);
    if (st->spec->input_len == 0) close_fd(&st->in_w);
    return 0;
fail:
    free(argv);
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&err[i]);
        close_fd(&life[i]);
        close_fd(&rep[i]);
    }
    return rc;
}

/* The state letter of a process in /proc/PID/stat, or 0. */
static char proc_state(pid_t pid, pid_t *ppid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0) return 0;
    buf[len] = 0;
    char *rp = strrchr(buf, ')'); /* comm may hold anything, ')' included */
    char state;
    int pp;
    if (!rp || sscanf(rp + 1, " %c %d", &state, &pp) != 2) return 0;
    if (ppid) *ppid = (pid_t)pp;
    return state;
}

/* The guard did not end after the SIGKILL request: the command keeps it stopped, or it
 * cannot reap what it killed. While it is stopped it reaps nothing, so the pids of its
 * children (and the groups they lead) cannot be reused: kill those from here. Then kill
 * the guard itself, so that the job ends whatever its command does. */
static void end_stuck_guard(run_state *st) {
    pid_t guard = st->child.pid;
    char gs = proc_state(guard, NULL);
    if (gs == 'T' || gs == 't') {
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
            pid_t pid = (pid_t)atoi(e->d_name), ppid = 0;
            if (proc_state(pid, &ppid) && ppid == guard) {
                kill(-pid, SIGKILL); /* the command leads its group */
                kill(pid, SIGKILL);
            }
        }
        if (d) closedir(d);
    }
    kill(guard, SIGKILL);
}

static void begin_kill(run_state *st, long long now) {
    if (st->kill_stage) return;
    guard_request(&st->child, GUARD_REQ_TERM);
    st->kill_stage = 1;
    st->kill_at = now + st->spec->kill_grace_ms;
}

static void feed_stdin(run_state *st) {
    const exec_spec *sp = st->spec;
    while (st->in_w >= 0 && st->in_off < sp->input_len) {
        size_t n = sp->input_len - st->in_off;
        if (n > READ_CHUNK) n = READ_CHUNK;
        ssize_t w = write(st->in_w, sp->input + st->in_off, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) close_fd(&st->in_w); /* EPIPE: the child did not want it */
            return;
        }
        st->in_off += (size_t)w;
    }
    if (st->in_off >= sp->input_len) close_fd(&st->in_w);
}

static void drain_stdout(run_state *st, long long now) {
    char tmp[READ_CHUNK];
    exec_result *res = st->res;
    ssize_t n = read(st->out_r, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        close_fd(&st->out_r);
        return;
    }
    if (res->output_overflow) return; /* discard */
    if (res->output_len + (size_t)n > st->spec->max_output) {
        res->output_overflow = 1;
        begin_kill(st, now);
        return;
    }
    if (res->output_len + (size_t)n + 1 > st->out_cap) {
        size_t ncap = st->out_cap ? st->out_cap : 4096;
        while (ncap < res->output_len + (size_t)n + 1)
            ncap *= 2;
        char *nb = realloc(res->output, ncap);
        if (!nb) { /* treat like overflow rather than lose output silently */
            res->output_overflow = 1;
            begin_kill(st, now);
            return;
        }
        res->output = nb;
        st->out_cap = ncap;
    }
    memcpy(res->output + res->output_len, tmp, (size_t)n);
    res->output_len += (size_t)n;
    res->output[res->output_len] = 0;
}

static void drain_stderr(run_state *st) {
    char tmp[READ_CHUNK];
    ssize_t n = read(st->err_r, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        errlines_finish(&st->el);
        close_fd(&st->err_r);
        return;
    }
    errlines_feed(&st->el, tmp, (size_t)n);
}

int exec_run(const exec_spec *spec, exec_result *res) {
    memset(res, 0, sizeof *res);
    run_state st = {.spec = spec,
                    .res = res,
                    .in_w = -1,
                    .out_r = -1,
                    .err_r = -1,
                    .report_r = -1,
                    .child = {.lifeline = -1}};
    st.el.prefix = spec->log_prefix ? spec->log_prefix : "";
    st.el.last = res->last_err_line;
    long long start = mono_ms();
    int rc = spawn_child(&st);
    if (rc) {
        res->spawn_errno = rc;
        return -1;
    }
    int status = 0, reaped = 0;
    long long reaped_at = 0;
    for (;;) {
        long long now = mono_ms();
        if (!reaped && (reaped = reg_try_reap(&st.child, &status))) reaped_at = now;
        if (reaped) {
            close_fd(&st.in_w);
            if (st.out_r < 0 && st.err_r < 0) break;
            if (now - reaped_at >= ORPHAN_PIPE_GRACE_MS) break;
        }
        long long wait = POLL_CAP_MS;
        if (!reaped) {
            if (spec->timeout_ms > 0 && !st.kill_stage) {
                long long due = start + spec->timeout_ms;
                if (now >= due) {
                    res->timed_out = 1;
                    begin_kill(&st, now);
                } else if (due - now < wait) {
                    wait = due - now;
                }
            }
            pthread_mutex_lock(&reg_lock);
            int kill_sent = st.child.kill_sent;
            pthread_mutex_unlock(&reg_lock);
            if (kill_sent && st.kill_stage < 2) { /* exec_kill_all(SIGKILL) asked already */
                st.kill_stage = 2;
                st.kill_at = now + GUARD_STUCK_MS;
            }
            if (st.kill_stage == 1) {
                if (now >= st.kill_at) {
                    guard_request(&st.child, GUARD_REQ_KILL);
                    st.kill_stage = 2;
                    st.kill_at = now + GUARD_STUCK_MS;
                } else if (st.kill_at - now < wait) {
                    wait = st.kill_at - now;
                }
            }
            if (st.kill_stage == 2) {
                if (now >= st.kill_at) {
                    end_stuck_guard(&st);
                    st.kill_stage = 3;
                } else {
                    kill(st.child.pid, SIGCONT); /* in case it was stopped again */
                    if (st.kill_at - now < wait) wait = st.kill_at - now;
                }
            }
            /* Pipes closed but the child still runs: check its exit often. */
            if (st.out_r < 0 && st.err_r < 0 && wait > 5) wait = 5;
        } else {
            wait = ORPHAN_PIPE_GRACE_MS - (now - reaped_at);
        }
        struct pollfd pf[3];
        int nf = 0, iin = -1, iout = -1, ierr = -1;
        if (st.in_w >= 0) pf[iin = nf++] = (struct pollfd){st.in_w, POLLOUT, 0};
        if (st.out_r >= 0) pf[iout = nf++] = (struct pollfd){st.out_r, POLLIN, 0};
        if (st.err_r >= 0) pf[ierr = nf++] = (struct pollfd){st.err_r, POLLIN, 0};
        int pr = poll(pf, (nfds_t)nf, (int)(wait < 0 ? 0 : wait));
        if (pr < 0 && errno != EINTR) break; /* cannot happen with valid fds; do not spin */
        if (pr <= 0) continue;
        now = mono_ms();
        if (iin >= 0 && pf[iin].revents) {
            if (pf[iin].revents & (POLLERR | POLLHUP))
                close_fd(&st.in_w);
            else
                feed_stdin(&st);
        }
        if (iout >= 0 && pf[iout].revents) drain_stdout(&st, now);
        if (ierr >= 0 && pf[ierr].revents) drain_stderr(&st);
    }
    if (!reaped) { /* only after a poll() failure: make sure the command is gone */
        guard_request(&st.child, GUARD_REQ_KILL);
        while (!reg_try_reap(&st.child, &status)) {
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    errlines_finish(&st.el);
    close_fd(&st.in_w);
    close_fd(&st.out_r);
    close_fd(&st.err_r);
    /* The guard could not start the command: it said why before exiting. */
    int spawn_err = 0;
    ssize_t got = read(st.report_r, &spawn_err, sizeof spawn_err);
    close_fd(&st.report_r);
    if (got == (ssize_t)sizeof spawn_err && spawn_err != 0) {
        free(res->output);
        memset(res, 0, sizeof *res);
        res->spawn_errno = spawn_err;
        return -1;
    }
    if (WIFEXITED(status)) {
        res->exited = 1;
        res->exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res->signaled = 1;
        res->term_signal = WTERMSIG(status);
    }
    /* (reaped: out of the registry, so exec_kill_all no longer writes it) */
    res->killed_by_kill_all = st.child.signalled;
    res->duration_ms = mono_ms() - start;
    return 0;
}

void exec_result_free(exec_result *res) {
    if (!res) return;
    free(res->output);
    res->output = NULL;
}
