/* logline.h - one line of a long-running process's log (`ferry worker`, `ferry relay`):
 * "2026-12-02T00:58:40.123Z ferry worker: <text>" on stderr, the time in UTC with
 * milliseconds, so every line of a daemon can be placed in time without a log shipper.
 *
 * Thread-safe: each line is one fprintf on unbuffered stderr (one write), so lines from
 * different threads do not interleave. Not for use in a signal handler. */
#ifndef FERRY_CLI_LOGLINE_H
#define FERRY_CLI_LOGLINE_H

#include <stddef.h>

/* Size of the text timestamp, NUL included ("YYYY-MM-DDTHH:MM:SS.mmmZ"). */
#define LOGLINE_TIME_MAX 32

/* Write the wall-clock time now as "YYYY-MM-DDTHH:MM:SS.mmmZ" into out[cap] (cap >=
 * LOGLINE_TIME_MAX). Returns out. */
const char *logline_time(char *out, size_t cap);

/* Print "<time> ferry <prog>: <formatted text>\n" to stderr. `prog` is the subcommand's
 * name ("worker", "relay"); the text should not end in a newline. User-supplied strings in
 * it must already be made printable (ferryx_printable). */
void logline(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print a JSON log object to stderr with a leading "time" member: `obj` is a JSON object
 * text ("{...}"); the line written is {"time":"<time>",...rest of obj}. An obj that is not
 * an object ("{" first) is printed as is. */
void logline_json(const char *obj);

#endif
