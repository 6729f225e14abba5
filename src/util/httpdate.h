/* httpdate.h - HTTP-date parsing (RFC 9110 §5.6.7) and the calendar arithmetic under it.
 *
 * Pure functions: no I/O, no allocation, no locale or TZ environment (our own
 * days-from-civil instead of timegm/mktime, whose TZ handling is process-global).
 * Thread-safe. */
#ifndef FERRY_UTIL_HTTPDATE_H
#define FERRY_UTIL_HTTPDATE_H

#include <stddef.h>
#include <stdint.h>

#include "util/civil.h"

/* The latest instant an HTTP-date can name: 9999-12-31 23:59:60 GMT, in ms since the epoch.
 * Every parsed date lies in [0000-01-01 00:00:00, this] (four-digit years; an RFC 850 year
 * that would resolve past 9999 is rejected), so arithmetic on parsed dates cannot overflow. */
#define FERRY_HTTPDATE_MAX_MS 253402300800000LL

/* Parse exactly `len` bytes at `s` (no NUL needed, no whitespace allowed) as one of the three
 * HTTP-date formats:
 *   IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
 *   RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT"  (two-digit year, see below)
 *   asctime      "Sun Nov  6 08:49:37 1994"        (day as SP DIGIT or 2DIGIT)
 * Strict on format and case (RFC 9110: "HTTP-date is case sensitive"): month and day names
 * as written above, the literal "GMT", single spaces. The weekday must be a valid name for
 * the format but is not checked against the date (RFC 9110 gives recipients no use for it;
 * rejecting a wrong weekday would only lose the hint). Validates month, day of month
 * (per month, leap years included), hour 0-23, minute 0-59, second 0-60 (a leap second
 * counts as the next minute's :00).
 *
 * RFC 850 two-digit years are resolved against the year of `now_ms`: the year with those
 * last two digits within (now_year - 50, now_year + 50], so a year that would be more than
 * 50 years in the future means the previous century (RFC 9110 §5.6.7). `now_ms` must be in
 * [0, FERRY_HTTPDATE_MAX_MS]; otherwise RFC 850 dates are rejected (other formats do not
 * use it).
 *
 * Returns 0 and *out_ms (ms since the epoch; may be negative for years before 1970), or -1
 * when the text is not a valid HTTP-date (*out_ms untouched). */
int ferry__httpdate_parse(const char *s, size_t len, int64_t now_ms, int64_t *out_ms);

#endif
