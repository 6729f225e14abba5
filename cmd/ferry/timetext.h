/* timetext.h - times and durations as the CLI reads and prints them: "7d"-style durations,
 * UTC timestamps, ages. Pure (no I/O), thread-safe. */
#ifndef FERRY_CLI_TIMETEXT_H
#define FERRY_CLI_TIMETEXT_H

#include <stddef.h>

/* "90s", "30m", "12h", "7d" (a whole number and one unit) into seconds; -1 when it is not
 * one, or more than 100 years. */
long long cli_duration_s(const char *s);

/* A point in time given on the command line, into ms since the epoch: an RFC 3339 UTC
 * timestamp ("2026-12-01T10:00:00Z", fractions of a second and a numeric offset allowed),
 * a date ("2026-12-01", midnight UTC), or a duration ago as cli_duration_s reads it ("2h" =
 * now_ms minus two hours). Returns 0 with *out, -1 when it is none of these. */
int cli_time_ms(const char *s, long long now_ms, long long *out);

/* ms since the epoch as "2026-12-01T10:00:00Z" into buf; returns buf. */
const char *cli_utc_text(long long ms, char *buf, size_t cap);

/* An age in ms as "12.5 s", "3.2 min", "5.0 h" or "2.1 d" into buf; returns buf. */
const char *cli_age_text(long long ms, char *buf, size_t cap);

#endif
