/* job_outcome.c - what a job's run of the command means for the job (see job_outcome.h):
 * the exit status, signal, timeout or output limit turned into a ferry_outcome, with the
 * return value, failure reason and stack, or delay set on the job. */
#include "job_outcome.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "util/utf8.h"

/* failedReason comes from the command's stderr, which may be any bytes: replace what is not
 * UTF-8 with '?' so it can be stored as JSON text. */
static void make_utf8(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0, len; i < n; i += len)
        if (!(len = ferryx_utf8_seq((unsigned char *)s + i, n - i))) {
            s[i] = '?';
            len = 1;
        }
}

/* Store stdout as the return value. Returns 0, or -1 with *why set when it cannot be
 * stored (the job then fails, permanently: the command succeeded, so running it again
 * would repeat its effects). UTF-8 text is handed to ferry_job_set_return, which stores it
 * as is when it is JSON (by the library's own check, as wide as JSON.parse: big integers,
 * \u0000 escapes) and as a JSON string otherwise; text with raw NUL bytes is quoted here
 * (\u0000), since a C string cannot carry it. */
static int set_return_value(ferry_job *job, exec_result *res, const char **why) {
    size_t n = res->output_len;
    const char *out = res->output ? res->output : "";
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        n--;
    if (n == 0) return ferry_job_set_return(job, "null") ? (*why = "out of memory", -1) : 0;
    if (!ferryx_utf8_valid(out, n)) {
        *why = "exit 0, but stdout is neither JSON nor UTF-8 text, so it cannot be stored "
               "as the return value (not retried: the command succeeded)";
        return -1;
    }
    char *text;
    if (memchr(out, 0, n)) {
        json_t *s = json_stringn(out, n);
        text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        json_decref(s);
    } else {
        text = strndup(out, n);
    }
    int rc = text ? ferry_job_set_return(job, text) : FERRY_ENOMEM;
    free(text);
    if (rc == FERRY_ETOOBIG)
        *why = "exit 0, but stdout, as stored (text that is not JSON becomes a JSON string), "
               "is over the 16 MiB return value limit (FERRY_RETURN_MAX_BYTES; not retried: "
               "the command succeeded)";
    else if (rc)
        *why = "out of memory storing the return value";
    return rc ? -1 : 0;
}

static ferry_outcome fail(ferry_job *job, ferry_outcome how, const char *reason, const char *cmd,
                          const char *status) {
    char stack[EXEC_ERRLINE_MAX + 256];
    snprintf(stack, sizeof stack, "Error: %s\n    at %s (ferry worker, %s)", reason, cmd, status);
    ferry_job_set_failure(job, reason, stack);
    return how;
}

/* Exit 118 / 119: back to delayed (or, throttled with a limiter, to wait with the queue
 * limited) for the delay the command printed last on stdout, without spending an attempt. A
 * malformed FERRY_RETRY_AFTER_MS line is the script's bug: the job then fails as transient,
 * with a reason saying why, so it runs out of attempts visibly instead of looping. */
static ferry_outcome postpone(const job_outcome_rules *rules, ferry_job *job,
                              const exec_result *res, const char *cmd, const char *status) {
    int throttled = res->exit_code == EXEC_EXIT_THROTTLED;
    char reason[EXEC_ERRLINE_MAX + 64], why[256];
    long long delay = 0;
    int hint = exec_delay_hint(res->output, res->output_len, &delay, why, sizeof why);
    if (hint < 0) {
        snprintf(reason, sizeof reason, "exit %d: %s", res->exit_code, why);
        return fail(job, FERRY_FAILED, reason, cmd, status);
    }
    /* No hint: 118 waits the CLI's default; 119 leaves 0, the library's throttle default. */
    if (!hint) delay = throttled ? 0 : rules->retry_later_default;
    ferry_job_set_delay(job, delay);
    if (res->last_err_line[0]) {
        snprintf(reason, sizeof reason, "%s", res->last_err_line);
        make_utf8(reason);
    } else {
        snprintf(reason, sizeof reason, "exit %d (%s)", res->exit_code,
                 throttled ? "throttled" : "retry later");
    }
    ferry_job_set_failure(job, reason, NULL);
    return throttled ? FERRY_THROTTLED : FERRY_RETRY_LATER;
}

ferry_outcome job_outcome(const job_outcome_rules *rules, ferry_job *job, exec_result *res,
                          int spawn_rc, char *status, size_t scap) {
    const char *cmd = rules->cmd;
    char reason[EXEC_ERRLINE_MAX + 64];
    if (spawn_rc) {
        snprintf(status, scap, "spawn-error");
        snprintf(reason, sizeof reason, "cannot run %s: %s", cmd, strerror(res->spawn_errno));
        return fail(job, FERRY_FAILED, reason, cmd, status);
    }
    if (res->exited)
        snprintf(status, scap, "exit:%d", res->exit_code);
    else
        snprintf(status, scap, "signal:%d", res->term_signal);
    if (res->killed_by_kill_all && !res->timed_out && !(res->exited && res->exit_code == 0)) {
        /* stopped by the worker's shutdown (a second or third stop signal), however it
         * ended: back to the queue, ready at once, without spending an attempt */
        if (res->exited)
            snprintf(reason, sizeof reason, "exit %d: stopped by the worker's shutdown",
                     res->exit_code);
        else
            snprintf(reason, sizeof reason, "signal %d: stopped by the worker's shutdown",
                     res->term_signal);
        ferry_job_set_delay(job, 0);
        ferry_job_set_failure(job, reason, NULL);
        return FERRY_RETRY_LATER;
    }
    if (res->timed_out) {
        snprintf(reason, sizeof reason, "timeout after %lld ms", rules->job_timeout);
        snprintf(status, scap, "timeout");
        return fail(job, FERRY_FAILED, reason, cmd, status);
    }
    if (res->output_overflow) {
        snprintf(reason, sizeof reason, "stdout over the %lld-byte limit (--max-output)",
                 rules->max_output);
        snprintf(status, scap, "output-limit");
        return fail(job, FERRY_FAILED, reason, cmd, status);
    }
    if (res->exited && res->exit_code == 0) {
        const char *why = NULL;
        if (set_return_value(job, res, &why) == 0) return FERRY_COMPLETED;
        snprintf(status, scap, "bad-output");
        return fail(job, FERRY_FAILED_PERMANENT, why, cmd, status);
    }
    if (res->exited &&
        (res->exit_code == EXEC_EXIT_RETRY_LATER || res->exit_code == EXEC_EXIT_THROTTLED))
        return postpone(rules, job, res, cmd, status);
    if (res->last_err_line[0]) {
        snprintf(reason, sizeof reason, "%s", res->last_err_line);
        make_utf8(reason);
    } else if (res->exited)
        snprintf(reason, sizeof reason, "exit %d", res->exit_code);
    else
        snprintf(reason, sizeof reason, "signal %d", res->term_signal);
    ferry_outcome how = res->exited && res->exit_code == EXEC_EXIT_PERMANENT ? FERRY_FAILED_PERMANENT : FERRY_FAILED;
    return fail(job, how, reason, cmd, status);
}
