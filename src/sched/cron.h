/* cron.h - cron expressions for job schedulers, computing the same next run times as the
 * npm package cron-parser 5.10.3 that Node BullMQ 6.7.0 uses (see docs/cron.md).
 *
 * Syntax (cron-parser's, non-strict mode):
 *   [second] minute hour day-of-month month day-of-week   6 fields, or 5 (second = 0);
 *        fewer fields are completed from the left with "0 * * * *" as cron-parser does,
 *        so "5" alone means every minute on Fridays - callers may want to insist on 5-6.
 *   second 0-59, minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-7
 *        (0 and 7 = Sunday); `*` and `?` = any; lists `a,b`; ranges `a-b`; steps `*\/n`,
 *        `a/n` (= a-max/n), `a-b/n`; names JAN-DEC and SUN-SAT (any case) in the month and
 *        day-of-week fields; `L` in day-of-month (last day) and day-of-week (`5L` = last
 *        Friday); `d#n` in day-of-week (n-th weekday d of the month, n 1-5).
 *   Day rule: when both day fields are restricted (neither is `*` / `?`), a day matches if
 *        EITHER matches; otherwise only the restricted one counts.
 *   Predefined: @yearly @annually @monthly @weekly @daily @hourly @minutely @secondly
 *        @weekdays @weekends (the whole expression, exact spelling).
 *   Not supported: Jenkins-style hashed values (`H`, `H/5`, `H(0-29)`): cron-parser draws
 *        them from a fresh random seed on every parse, so no two processes agree.
 *   A value listed twice (`1,1`, `0,7`, `1-5,3`) is an error, as in cron-parser - except
 *        that when the month field holds exactly one month, day-of-month numbers past that
 *        month's length (Feb = 29) are dropped before the check (`0 0 31,31,1 4 *` is April
 *        1), unless no value would be left. A field may not grow past 256 values (repeats
 *        included) before its next list element.
 *
 * DST (same as cron-parser): a wall time skipped by a spring-forward gap runs at the
 * corresponding time after the gap (02:30 -> 03:30), once; a wall time repeated in autumn
 * runs once, at its first occurrence - except that an expression whose hour field allows
 * all 24 hours (`0 * * * *`, `*\/15 * * * *`) fires in both copies of the repeated hour.
 */
#ifndef FERRY_SCHED_CRON_H
#define FERRY_SCHED_CRON_H

#include "ferry/common.h"
#include "sched/tz.h"

/* Longest expression accepted, in UTF-16 code units as JavaScript counts them (bytes for
 * ASCII); longer is FERRY_ETOOBIG, as cron-parser refuses it too. */
#define FERRY_CRON_EXPR_MAX 1024
/* Instants accepted by ferry__cron_next: 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z. */
#define FERRY_CRON_MS_MIN 0LL
#define FERRY_CRON_MS_MAX 253402300799999LL
/* cron-parser gives up after this many search steps; so do we (FERRY_ENOTFOUND). */
#define FERRY_CRON_SEARCH_STEPS 10000

typedef struct ferry__cron ferry__cron; /* a parsed expression, immutable */

/* Parse `expr`. Returns 0 and a new object in *out (free with ferry__cron_free), or
 * FERRY_EINVAL with a message naming the field and the offending text (e.g. "cron: hour
 * field '25': value 25 out of range 0-23"), FERRY_ETOOBIG, FERRY_ENOMEM. Pure, thread-safe. */
int ferry__cron_parse(const char *expr, ferry__cron **out, ferry_error *err);

/* Free a parsed expression; NULL is fine. */
void ferry__cron_free(ferry__cron *c);

/* The expression text as given to ferry__cron_parse (owned by c). */
const char *ferry__cron_text(const ferry__cron *c);

/* Next fire time after `after_ms` (Unix millis, FERRY_CRON_MS_MIN..MAX) in zone `tz` (a name
 * as in tz.h; NULL or "" = UTC). Returns 0 and *next_ms; FERRY_ENOTFOUND when cron-parser
 * would find none (its 10000-step search limit, e.g. "0 0 31 2,4 *"); FERRY_EINVAL for an
 * unknown zone or an out-of-range after_ms; *next_ms is untouched on failure.
 * The result is strictly after `after_ms`, except in a cron-parser anomaly reproduced on
 * purpose: in zones whose DST change is not a whole hour on a whole local hour
 * (Australia/Lord_Howe, Pacific/Chatham) it can be earlier. Like BullMQ, callers clamp the
 * result to at least now, search from max(now, prevMillis, startDate), and stop once the
 * result is past endDate. The first use of a zone reads its file (ferry__tz_open);
 * otherwise pure. Thread-safe. */
int ferry__cron_next(const ferry__cron *c, const char *tz, long long after_ms, long long *next_ms,
                     ferry_error *err);

/* As ferry__cron_next with an already opened zone (borrowed). Pure, thread-safe. */
int ferry__cron_next_in(const ferry__cron *c, const ferry__tz *zone, long long after_ms,
                        long long *next_ms, ferry_error *err);

#endif
