/* logline.h - one line of a long-running process's log (`ferry worker`, `ferry relay`,
 * `ferry serve`), in one of two formats chosen once per process (--log-format):
 *   text: "2026-12-02T00:58:40.123Z ferry worker: <text>", the time in UTC with
 *         milliseconds, so every line of a daemon can be placed in time without a shipper;
 *   json: one JSON object per line, {"time":...,"level":...,"event":...,"msg":...,<fields>},
 *         built with jansson (so every string is escaped right: a queue name or topic with
 *         a newline or a quote cannot forge a line or a member). docs/logging.md lists the
 *         events and their fields.
 * Every writer of these lines goes through this file: logline() (free text, "<prog>.log" in
 * JSON), logline_event() (an event with fields) and logline_json() (a ready JSON object).
 *
 * Thread-safe: each line is one fprintf on unbuffered stderr under stderr's stdio lock (one
 * write), so lines from different threads do not interleave. Not for use in a signal
 * handler. Nothing here ever prints a payload or a secret by itself: callers pass only
 * fields that are neither (see docs/logging.md "What is never logged"). */
#ifndef FERRY_CLI_LOGLINE_H
#define FERRY_CLI_LOGLINE_H

#include <jansson.h>
#include <stddef.h>

/* Size of the text timestamp, NUL included ("YYYY-MM-DDTHH:MM:SS.mmmZ"). */
#define LOGLINE_TIME_MAX 32

/* Longest line written (bytes, newline excluded): longer text is cut, its end marked
 * "..." (text) or the "msg" member cut and "truncated":true added (json). */
#define LOGLINE_MAX (64 * 1024)

typedef enum logline_format {
    LOGLINE_TEXT = 0, /* the default */
    LOGLINE_JSON = 1,
} logline_format;

/* Write the wall-clock time now as "YYYY-MM-DDTHH:MM:SS.mmmZ" into out[cap] (cap >=
 * LOGLINE_TIME_MAX). Returns out. */
const char *logline_time(char *out, size_t cap);

/* Choose the format of every later line of this process. Call on the main thread before
 * other threads start (it is a plain variable). */
void logline_set_format(logline_format f);

/* The format chosen (LOGLINE_TEXT until logline_set_format). Threads: any. */
logline_format logline_get_format(void);

/* "text" -> LOGLINE_TEXT, "json" -> LOGLINE_JSON; returns 0, or -1 for anything else (the
 * caller reports it: the accepted values differ per command). */
int logline_format_parse(const char *s, logline_format *out);

/* Print one line of free text: "<time> ferry <prog>: <formatted text>\n" (text), or
 * {"time","level":"info","event":"<prog>.log","msg":<text>} (json). `prog` is the
 * subcommand's name ("worker", "relay"); the text should not end in a newline. User-supplied
 * strings in it must already be made printable (ferryx_printable). */
void logline(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print one event. text: exactly what logline(prog, fmt, ...) prints (the fields are not
 * shown: the text says what matters). json: {"time","level","event","msg",...fields}, level
 * a ferry_log_level (FERRY_LOG_DEBUG..FERRY_LOG_ERROR -> "debug", "info", "warn", "error"),
 * `event` a name from docs/logging.md ("worker.start", "relay.batch"...). `fields` is a JSON
 * object whose members follow "msg" in order (NULL = none); the reference is stolen (freed
 * here, in both formats). Keys time/level/event/msg in it are ignored. */
void logline_event(const char *prog, int level, const char *event, json_t *fields, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

/* Print a JSON log object to stderr with a leading "time" member: `obj` is a JSON object
 * text ("{...}"); the line written is {"time":"<time>",...rest of obj}. An obj that is not
 * an object ("{" first) is printed as is. For callers that render their own objects; new
 * code uses logline_event. */
void logline_json(const char *obj);

/* ---- building fields ------------------------------------------------------------------ */

/* Set o[key] to the string s (nothing when s is NULL). Bytes that are not valid UTF-8
 * become U+FFFD, so any text from outside (queue names, topics, Redis replies) can be a
 * member; jansson escapes control characters and quotes when the line is written. */
void logline_set_str(json_t *o, const char *key, const char *s);

/* Set o[key] to an integer. */
void logline_set_int(json_t *o, const char *key, long long v);

/* The trace members of an id: "trace" (the id as carried: a W3C traceparent or an opaque
 * id), "trace_id" (a traceparent's 32-hex trace-id, else the opaque id itself) and, for a
 * traceparent, "span_id" (its 16-hex parent-id) and "trace_flags" (its 2 hex flags).
 * Nothing when trace is NULL or empty. */
void logline_set_trace(json_t *o, const char *trace);

/* Split a W3C traceparent (Trace Context level 1: "vv-<32 hex>-<16 hex>-<2 hex>", lower-case
 * hex, version not "ff", trace-id and parent-id not all zeros; version 00 exactly 55
 * characters, a later version may continue after a '-'), the rule ferry's outbox applies
 * when an event is appended. Returns 1 with trace_id[33], span_id[17], flags[3] filled
 * (any may be NULL), or 0 when s is not one. Pure, thread-safe. */
int logline_traceparent(const char *s, char *trace_id, char *span_id, char *flags);

/* Replace by "***" in buf (NUL-terminated, cap bytes) every occurrence of the password a
 * URL ("scheme://user:password@host...") holds, as written and percent-decoded, in case a
 * lower layer echoed it (as cli_report does for its lines). url may be NULL (nothing to
 * mask). Text made longer by "***" is cut at cap. Pure, thread-safe. */
void logline_mask_url_password(char *buf, size_t cap, const char *url);

#endif
