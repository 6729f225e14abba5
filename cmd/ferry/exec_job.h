/* exec_job.h - run one external command for one job (the exec worker's unit of work):
 * spawn without a shell, feed the job data on stdin, capture stdout up to a limit, pass
 * stderr through line by line with a prefix while remembering its last non-empty line,
 * and enforce a time limit (SIGTERM to the child's process group, SIGKILL after a grace
 * period). The mapping of a finished command to a job outcome lives in cmd_worker.c; what is
 * here besides the run is the exit-code contract shared by `ferry worker` and `ferry
 * http-outcome`, and the pure parser of a command's delay hint (its only ferry call is the
 * pure Retry-After parser).
 *
 * The guard. A job's command must not outlive its worker, however the worker dies (a
 * SIGKILL included: the job would then run again after stalled recovery, maybe beside the
 * orphan, and its time limit would no longer hold). So exec_run does not start the command
 * itself: it starts a small guard, this same binary re-executed through /proc/self/exe in a
 * hidden mode (`ferry EXEC_GUARD_MODE CMD [ARGS...]`, not a command, not in --help), which
 * starts the command and watches over it:
 *   - it makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so every descendant whose
 *     parent dies, one that called setsid or double-forked included, becomes its child;
 *   - it holds the read end of a "lifeline" pipe whose only write end is the worker's
 *     (O_CLOEXEC, and every guard starts with nothing above fd 4, so no other guard or
 *     command has a copy): EOF on it means the worker is gone, and the guard then SIGKILLs
 *     the command's process group and every remaining descendant, and exits;
 *   - the worker's stop requests come over that pipe too (one byte: SIGTERM or SIGKILL for
 *     the command's group), so the guard, which is not in that group, is never killed with
 *     it and can always clean up after it;
 *   - when the command exits, whatever it left running (in its group or not) is killed
 *     with SIGKILL and reaped: a job's processes end with the job (as systemd's
 *     KillMode=control-group). Then the guard exits with the command's status unchanged:
 *     the same exit code, or death by the same signal (core dumps off), so the exit-code
 *     contract and the signal handling of cmd_worker.c hold as if the command were the
 *     worker's own child;
 *   - a command it cannot start (posix_spawnp failed) is reported on the report pipe (fd
 *     4, close-on-exec, read by exec_run) and becomes res->spawn_errno, as before.
 * The guard blocks every signal (blocked, not ignored: the command gets an empty mask and
 * default dispositions) and reads SIGCHLD from a signalfd. Its own process group holds only
 * itself, so a terminal's Ctrl-C reaches neither it nor the command. Linux only (prctl,
 * signalfd, /proc). Only a SIGKILL sent to a guard itself (ferry never sends one) would
 * leave its command running.
 *
 * Commands start in their own process group (so a terminal's Ctrl-C reaches only ferry,
 * which then lets running jobs finish), with an empty signal mask, default dispositions,
 * and no file descriptors but 0/1/2.
 *
 * Thread-safety: exec_run may be called from many threads at once; exec_kill_all from any
 * thread (not from a signal handler). The caller ignores SIGPIPE (a command or guard that
 * is gone turns writes to it into EPIPE). */
#ifndef FERRY_CLI_EXEC_JOB_H
#define FERRY_CLI_EXEC_JOB_H

#include <stddef.h>

#define EXEC_ERRLINE_MAX 1024

/* The exit-code contract of a job command (docs/cli.md "Exit-code contract"). 65 and 75 are
 * sysexits' EX_DATAERR / EX_TEMPFAIL. The two ferry-specific codes sit outside every range a
 * handler's tools commonly use (sysexits 64-78, curl 1-101, Rust panics 101, Python's failed
 * shutdown 120, timeout/env 124-127, shell signal statuses 128+), because they do not spend an
 * attempt: a stray code must never make a job wait forever or throttle a whole queue. (77, the
 * obvious next number, is curl's "problem with the CA certificate": a `set -e` script would
 * throttle its queue forever over a misconfigured host.) */
#define EXEC_EXIT_COMPLETED 0
#define EXEC_EXIT_PERMANENT 65    /* EX_DATAERR: failed, never retried */
#define EXEC_EXIT_TRANSIENT 75    /* EX_TEMPFAIL: failed, retried with backoff */
#define EXEC_EXIT_RETRY_LATER 118 /* back to delayed, no attempt spent */
#define EXEC_EXIT_THROTTLED 119   /* rate limited: throttle the queue (limiter) or delay */

/* The delay-hint line a command prints last on stdout with exit 118/119. */
#define EXEC_HINT_MS_KEY "FERRY_RETRY_AFTER_MS="
#define EXEC_HINT_HEADER "Retry-After:"

/* Read the delay hint from the last non-empty line of a command's stdout (out[0..len), may
 * hold NULs): `FERRY_RETRY_AFTER_MS=<ms>` (ASCII digits, surrounding blanks ignored, values
 * over FERRY_RETRY_AFTER_MAX_MS clamp to it) or `Retry-After: <value>` (header name in any
 * case; value as ferry_retry_after_parse_now reads it: delta-seconds or an HTTP-date, clamped
 * to a day; an unusable value is "no hint", as for HTTP). Returns 1 with *delay_ms set, 0 when
 * the last line is neither (no hint), or -1 for a FERRY_RETRY_AFTER_MS line whose value is not
 * a plain non-negative integer, with a one-line explanation in why[0..whycap). Pure apart from
 * reading the wall clock for HTTP-dates; thread-safe; no allocation. */
int exec_delay_hint(const char *out, size_t len, long long *delay_ms, char *why, size_t whycap);

typedef struct exec_spec {
    char *const *argv; /* command and arguments, NULL-terminated; argv[0] looked up in PATH */
    char *const *envp; /* the child's whole environment, NULL-terminated */
    const char *input; /* written to the child's stdin, then stdin is closed */
    size_t input_len;
    size_t max_output;       /* most stdout bytes kept; more = overflow, child is stopped */
    long long timeout_ms;    /* 0 = no limit */
    long long kill_grace_ms; /* SIGTERM -> SIGKILL delay */
    const char *log_prefix;  /* prepended to each stderr line passed through ("[job 7] ") */
} exec_spec;

typedef struct exec_result {
    int spawn_errno; /* != 0: the command could not be started (nothing else is set) */
    int exited;      /* 1: exit_code is valid */
    int exit_code;
    int signaled; /* 1: term_signal is valid */
    int term_signal;
    int timed_out;          /* stopped because timeout_ms passed */
    int killed_by_kill_all; /* exec_kill_all signalled it while it ran (however it ended) */
    int output_overflow;    /* stopped because stdout exceeded max_output */
    char *output;           /* stdout (NUL-terminated, malloc'd, may hold NULs: see output_len) */
    size_t output_len;
    /* Last stderr line with text (not only blanks), trailing CRs dropped, "" if none. A
     * line of EXEC_ERRLINE_MAX bytes or more keeps its first EXEC_ERRLINE_MAX - 4 bytes at
     * most (cut at a UTF-8 character boundary) followed by "...". */
    char last_err_line[EXEC_ERRLINE_MAX];
    long long duration_ms;
} exec_result;

/* Run the command, through its guard, to completion (blocking). Fills *res (free with
 * exec_result_free). Returns 0, or -1 when the command could not be started
 * (res->spawn_errno set: from starting the guard, or from the guard starting CMD). */
int exec_run(const exec_spec *spec, exec_result *res);
void exec_result_free(exec_result *res);

/* Have every running command's process group sent `sig`, SIGTERM or SIGKILL (any other
 * signal: nothing is sent, 0 is returned), through its guard; the descendants of a command
 * killed so are killed by the guard when the command is gone. Does not block. Returns how
 * many guards were asked. */
int exec_kill_all(int sig);

/* The hidden argv[1] that makes `ferry` the guard of one job (see above). */
#define EXEC_GUARD_MODE "internal:exec-guard"

/* The guard: main.c calls it for `ferry EXEC_GUARD_MODE CMD [ARGS...]` with argv = CMD
 * [ARGS...]. Expects the descriptors exec_run sets up (0/1/2 the job's pipes, 3 the
 * lifeline, 4 the report pipe); without them it prints that this is not a command and
 * returns 2. Otherwise never returns: exits as the command did (see above). Blocks until
 * the command and everything it started are gone. */
int exec_guard_main(int argc, char **argv);

#endif
