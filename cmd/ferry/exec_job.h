/* exec_job.h - run one external command for one job (the exec worker's unit of work):
 * spawn without a shell, feed the job data on stdin, capture stdout up to a limit, pass
 * stderr through line by line with a prefix while remembering its last non-empty line,
 * and enforce a time limit (SIGTERM to the child's process group, SIGKILL after a grace
 * period). No ferry calls: the mapping to job outcomes lives in cmd_worker.c.
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
    int timed_out;       /* stopped because timeout_ms passed */
    int output_overflow; /* stopped because stdout exceeded max_output */
    char *output;        /* stdout (NUL-terminated, malloc'd, may hold NULs: see output_len) */
    size_t output_len;
    char last_err_line[EXEC_ERRLINE_MAX]; /* last non-empty stderr line ("" if none) */
    long long duration_ms;
} exec_result;

/* Run the command to completion (blocking). Fills *res (free with exec_result_free).
 * Returns 0, or -1 when the command could not be started (res->spawn_errno set). */
int exec_run(const exec_spec *spec, exec_result *res);
void exec_result_free(exec_result *res);

/* Send `sig` to the process groups of all children running now. Returns how many. */
int exec_kill_all(int sig);

#endif
