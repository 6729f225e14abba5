/* exec_job.h - run one external command for one job (the exec worker's unit of work):
 * spawn without a shell, feed the job data on stdin, capture stdout up to a limit, pass
 * stderr through line by line with a prefix while remembering its last non-empty line,
 * and enforce a time limit (SIGTERM to the child's process group, SIGKILL after a grace
 * period). The mapping of a finished command to a job outcome lives in cmd_worker.c; what is
 * here besides the run is the exit-code contract shared by `ferry worker` and `ferry
 * http-outcome`, and the pure parser of a command's delay hint (its only ferry call is the
 * pure Retry-After parser).
 *
 * Children start in their own process group (so a terminal's Ctrl-C reaches only ferry,
 * which then lets running jobs finish), with an empty signal mask, default dispositions,
 * and no file descriptors but 0/1/2.
 *
 * Thread-safety: exec_run may be called from many threads at once; exec_kill_all from any
 * thread (not from a signal handler). */
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

/* Run the command to completion (blocking). Fills *res (free with exec_result_free).
 * Returns 0, or -1 when the command could not be started (res->spawn_errno set). */
int exec_run(const exec_spec *spec, exec_result *res);
void exec_result_free(exec_result *res);

/* Send `sig` to the process groups of all children running now. Returns how many. */
int exec_kill_all(int sig);

#endif
