/* ferry/common.h - export macro, version, error codes, the error detail struct, the
 * diagnostics model, and the rules every ferry header follows.
 *
 * Return convention: every fallible ferry call returns an int: 0 (FERRY_OK) on success, a
 * negative ferry_err value on failure. A yes/no answer is either a predicate that cannot fail
 * (named as one: ferry_routes_has_topic, ferry_worker_start_retryable) or comes back through
 * an out parameter (ferry_queue_exists, ferry_queue_is_paused). Calls that can say more take a
 * caller-supplied `ferry_error *` (may be NULL) that receives the code and a one-line
 * message.
 *
 * Contract comments: each public function says what it does, then only the lines that apply
 * of Returns (what success gives back), Errors (which codes, and when), Blocks (I/O and its
 * deadline; "no" when it never waits), Threads (who may call it, and when), Ownership (who
 * frees what, how long borrowed pointers must live). A header's top comment states the rules
 * that hold for all of its functions; a function repeats only what differs.
 *
 * Stability (from this release on; a change that breaks one of these is a breaking change,
 * named as such in CHANGELOG.md):
 *   - Error codes keep their values (FERRY_ERRNO_MAP), and so do the values of every other
 *     public enum (ferry_outcome, ferry_http_class, ferry_worker_notice_kind,
 *     ferry_log_level) and of the public macros' meaning.
 *   - Option structs (ferry_*_options, ferry_scheduler_spec, ferry_worker_callbacks) keep
 *     the order and meaning of their fields; new fields are only added at the end, and their
 *     zero value keeps the old behaviour. So a program that starts from the struct's _init
 *     (or zeroes it) and then sets fields by name keeps working, unchanged, with a newer
 *     library. Never fill one with a positional initializer.
 *   - Structs the library fills and returns (ferry_job_counts, ferry_worker_stats,
 *     ferry_relay_stats, ferry_job_log, ferry_worker_notice, ...) may also grow at the end;
 *     read them by field name.
 *   - Structs passed by value (ferry_http_verdict, ferry_error) keep their layout.
 *   - Handles (ferry_queue, ferry_worker, ferry_relay, ferry_routes, ferry_job) are opaque:
 *     their layout is not part of the API. */
#ifndef FERRY_COMMON_H
#define FERRY_COMMON_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define FERRY_API __attribute__((visibility("default")))
#define FERRY_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FERRY_API
#define FERRY_PRINTF(fmt, args)
#endif

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"

/* The BullMQ release whose Redis layout ferry speaks (written to <queue>:meta version). */
#define FERRY_BULLMQ_VERSION "6.7.0"

#ifdef __cplusplus
extern "C" {
#endif

/* Every error code, from one list: XX(name, value, message). It generates the ferry_err
 * enum, ferry_strerror() and ferry_err_name(). A program may expand
 * it too (e.g. into a table of its own).
 * Promise: a value is never reused or renumbered, and a code is never
 * removed; a new code gets the next unused negative number, added at the end. The messages
 * are short English text for people, not for parsing; the names are stable. */
#define FERRY_ERRNO_MAP(XX)                                                                        \
    XX(OK, 0, "ok")                                                                                \
    XX(EINVAL, -1, "invalid argument") /* bad argument, URL, JSON, option */                       \
    XX(ENOMEM, -2, "out of memory")    /* allocation failed */                                     \
    XX(EIO, -3, "I/O error")           /* socket / transport error, connection lost */             \
    XX(ETIMEDOUT, -4, "timed out")     /* a deadline passed */                                     \
    XX(EPROTO, -5, "protocol error")   /* unexpected reply shape */                                \
    XX(EREDIS, -6, "Redis error")      /* Redis answered with an error reply (text in message) */  \
    XX(ETLS, -7, "TLS error")          /* TLS handshake or certificate verification failed */      \
    XX(EAUTH, -8, "authentication failed") /* AUTH / SELECT refused */                             \
    XX(ENOTFOUND, -9, "not found")         /* job / key does not exist */                          \
    XX(ETOOBIG, -10, "too big")            /* payload or input over its stated limit */            \
    XX(ELOCK, -11, "lock lost")            /* job lock lost or owned by another worker */          \
    XX(ESTATE, -12, "wrong state")         /* object not in the state the call needs */            \
    XX(ECLOSED, -13, "closed")             /* handle is closing / closed */                        \
    XX(EDB, -14, "database error") /* PostgreSQL reported an error (SQLSTATE in the message) */

typedef enum ferry_err {
#define FERRY__ERR_ENUM(name, value, message) FERRY_##name = (value),
    FERRY_ERRNO_MAP(FERRY__ERR_ENUM)
#undef FERRY__ERR_ENUM
} ferry_err;

#define FERRY_ERROR_MESSAGE_MAX 512

/* Detail of the last failure of a call. Plain value, owned by the caller; a call that
 * fails fills it (code + NUL-terminated message), a call that succeeds leaves it alone. */
typedef struct ferry_error {
    int code;
    char message[FERRY_ERROR_MESSAGE_MAX];
} ferry_error;

/* ---- diagnostics: one model -----------------------------------------------------------
 * The library never prints, exits or aborts. What it has to tell a program goes to
 * callbacks the program sets, in three kinds:
 *   - log lines: free text for an operator (a connection lost and retried, a warning about
 *     the server's configuration, a component started or stopped), each with a level. Every
 *     long-running component takes a ferry_log_fn: ferry_relay_options.log and
 *     ferry_worker_callbacks.log. Lines are one line of text (no newline; text from outside,
 *     such as queue names and server replies, escaped), never a payload or a password.
 *   - typed events, for a program that acts on them: they carry fields besides the text
 *     (the worker's callbacks.error gives a ferry_error with its code, callbacks.notice a
 *     ferry_worker_notice with its kind; job outcomes go to callbacks.job_log and
 *     completed / failed / stalled). Each error and notice also goes to the log callback
 *     as a line (errors and REDIS_LOST / EVICTION_POLICY notices at FERRY_LOG_WARN: the
 *     worker keeps going; REDIS_RESTORED at FERRY_LOG_INFO), so a program that only wants
 *     a log sets just `log`, and one that acts on codes sets the typed callback too.
 *   - a call's own failure: its return value, with the detail in the caller's ferry_error.
 * Callbacks run on the component's threads, one at a time per component, and must not
 * block for long; every string is valid only during the call. */
typedef enum ferry_log_level {
    FERRY_LOG_DEBUG = 0,
    FERRY_LOG_INFO = 1,
    FERRY_LOG_WARN = 2,
    FERRY_LOG_ERROR = 3,
} ferry_log_level;

/* A log line: `level` is a ferry_log_level, `message` one line of text (valid during the
 * call), `userdata` what the component was given with the callback. */
typedef void (*ferry_log_fn)(int level, const char *message, void *userdata);

/* Short English text for a code ("invalid argument"); "unknown error" for a value that is
 * not a ferry_err.
 * Returns: a static string; never NULL, never freed. Threads: any. */
FERRY_API const char *ferry_strerror(int code);

/* The code's name as spelled in C ("FERRY_EINVAL", "FERRY_OK"); "FERRY_UNKNOWN" for a value
 * that is not a ferry_err. For logs and tests that want a stable token, not prose.
 * Returns: a static string; never NULL, never freed. Threads: any. */
FERRY_API const char *ferry_err_name(int code);

/* The library's version, e.g. "0.1.0" (the FERRY_VERSION_* macros are the version a
 * program was compiled against). Returns: a static string; never NULL, never freed.
 * Threads: any. */
FERRY_API const char *ferry_version(void);

#ifdef __cplusplus
}
#endif
#endif
