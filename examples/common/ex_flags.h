/* ex_flags.h - the command-line flags of an example program from one table {name, arg, help}:
 * --help's option lines, getopt_long's table, finding a word in the table, the usage-error
 * line, and numeric flags with their bounds. Pure: no I/O but printing to the FILE given
 * (stderr for ex_usage_error), no allocation, no global state. */
#ifndef EX_FLAGS_H
#define EX_FLAGS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One flag: "--NAME ARG" in --help, followed by HELP. */
typedef struct ex_flag {
    const char *name; /* without the leading "--" */
    const char *arg;  /* the value's placeholder ("URL", "N"); NULL = the flag takes no value */
    const char *help; /* may hold "\n" plus an indent for more lines */
} ex_flag;

/* ex_flags_print's width for "the help on a line of its own, indented six spaces". */
#define EX_FLAGS_HELP_BELOW (-1)

/* Print one line per flag to `to`: two spaces, "--NAME ARG" (or "--NAME") left-aligned in
 * `width` columns, a space, the help ("  %-*s %s\n"); a longer "--NAME ARG" is not cut, the
 * help follows it after one space. With width EX_FLAGS_HELP_BELOW: "  --NAME ARG\n", then
 * six spaces and the help. Returns nothing: write errors stay on the FILE (ferror).
 * Blocks: as stdio writing to `to` does. Threads: any, stdio locks `to` per call. */
void ex_flags_print(FILE *to, const ex_flag *flags, size_t n, int width);

/* Fill out[0..n] with getopt_long's table for flags[0..n-1]: the name, required_argument when
 * the flag has an arg (else no_argument), flag NULL and val = the flag's index, so that
 * getopt_long returns the index; out[n] is zeroed (the end mark). out must hold n + 1
 * entries; it points into `flags` (the names), which must outlive it. Threads: any. */
void ex_flags_longopts(const ex_flag *flags, size_t n, struct option *out);

/* The index of the flag whose "--NAME" is `word` exactly (no abbreviations). When
 * inline_value is not NULL, "--NAME=VALUE" of a flag taking a value matches too and
 * *inline_value is set to VALUE (a pointer into word); it is set to NULL otherwise.
 * Returns the index, or -1 when no flag matches. Threads: any. */
int ex_flags_find(const ex_flag *flags, size_t n, const char *word, const char **inline_value);

/* Read argv[1..argc-1] as the words "--NAME VALUE" (a flag taking a value) and "--NAME" (one
 * that does not; its value is then "1"), spelled exactly (ex_flags_find without "=VALUE"); a
 * later word replaces an earlier one's value. values[0..n-1] are set to NULL first, then to
 * the values given (pointers into argv). "--help" or "-h" in a word's place stops the reading.
 * Returns 0 when all was read, 1 when "--help" or "-h" was met (nothing printed: the caller
 * prints its usage), 2 on a usage error, printed to `errors` as "PROG: unknown option WORD
 * (see --help)" or "PROG: --NAME needs a value (ARG)". Threads: any. */
int ex_flags_scan(const char *prog, const ex_flag *flags, size_t n, int argc, char **argv,
                  const char **values, FILE *errors);

/* Print "PROG: MESSAGE\n(PROG --help shows the options)\n" to stderr, MESSAGE formatted from
 * fmt. Returns 2, the usage exit code, for `return ex_usage_error(...)`. Threads: any. */
int ex_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A numeric flag: its text (or dflt when it was not given) must be a whole decimal number
 * within [min, max] (ex_parse_long), which goes to *out. */
typedef struct ex_flag_number {
    int flag;         /* its index in the flag table */
    const char *dflt; /* the text used when the flag was not given */
    long min, max;
    long *out;
} ex_flag_number;

/* Parse nums[0..n-1] in order, the text of each being values[nums[i].flag] when not NULL,
 * else nums[i].dflt. Returns 0 with every *out set, or -1 at the first that does not parse,
 * with "--NAME: expected a whole number from MIN to MAX" in err[cap] (the earlier *out are
 * set, the later untouched). Threads: any. */
int ex_flags_numbers(const ex_flag *flags, const char *const *values, const ex_flag_number *nums,
                     size_t n, char *err, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
