/* numtext.h - doubles as text for Redis arguments and JSON, whatever the host program's
 * locale: printf-style conversions write the locale's decimal separator (a comma under
 * LC_NUMERIC=de_DE, say), which Lua's tonumber and every JSON reader refuse. */
#ifndef FERRY_UTIL_NUMTEXT_H
#define FERRY_UTIL_NUMTEXT_H

#include <stddef.h>

/* snprintf(buf, size, "%.*g", prec, x) with '.' as the decimal separator. Returns the length
 * written (as snprintf; buf is always terminated when size > 0). Thread-safe (reads the
 * locale with localeconv, which a concurrent setlocale may change: set the locale before
 * starting threads, as POSIX asks). No allocation. */
int ferryx_fmt_g(char *buf, size_t size, int prec, double x);

/* d as a whole number in lo..hi (lo <= hi): truncated toward zero, out-of-range values
 * clamped to the nearer bound, NaN read as 0 (then clamped). Casting a double outside
 * long long's range is undefined behaviour in C; this never does. Pure. */
long long ferryx_clamp_ll(double d, long long lo, long long hi);

/* strtod that reads '.' as the decimal separator whatever the locale; *end as strtod's. */
double ferryx_strtod_c(const char *s, char **end);

/* JavaScript's white space and line terminators (what Number() trims and String.split(/\s+/)
 * splits on) at the start of s[0..n), as UTF-8: the character's length (1..3), 0 when it is
 * something else (or n is 0). Pure, thread-safe. */
size_t ferryx_js_space(const char *s, size_t n);

/* JavaScript's Number(s) for the string s[0..n): blanks (JavaScript's white space and line
 * terminators, UTF-8) trimmed, "" = 0, [+-]Infinity, decimal literals, 0x / 0o / 0b integers;
 * anything else (strtod's "inf", "nan", hex floats, "1_0"...) is NaN. Pure, thread-safe. */
double ferryx_js_number(const char *s, size_t n);

#endif
