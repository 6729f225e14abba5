/* civil.h - proleptic Gregorian calendar arithmetic (H. Hinnant's days-from-civil), used by
 * the HTTP-date parser and the time-zone / cron code instead of timegm/mktime, whose TZ
 * handling is process-global. Pure functions, any year that fits in +-2^40, thread-safe. */
#ifndef FERRY_UTIL_CIVIL_H
#define FERRY_UTIL_CIVIL_H

#include <stdint.h>

/* 1 for a Gregorian leap year, else 0. */
int ferry__is_leap_year(int64_t y);

/* Days in month m (1..12) of year y. */
int ferry__days_in_month(int64_t y, int m);

/* Days since 1970-01-01 of the date y-m-d (m 1..12, d 1..31). Does not validate d against
 * the month. */
int64_t ferry__days_from_civil(int64_t y, int m, int d);

/* The date of day `days` since 1970-01-01. */
void ferry__civil_from_days(int64_t days, int64_t *y, int *m, int *d);

/* The year containing day `days` since 1970-01-01. */
int64_t ferry__year_from_days(int64_t days);

#endif
