/* jsonw.h - a tiny streaming JSON object writer for the CLI's --json output. Values that
 * are already JSON text (job data, opts, return values stored by BullMQ) are spliced in
 * verbatim when they parse, so numbers and key order come out exactly as stored instead
 * of being re-encoded. One object per line. Not thread-safe (one writer per FILE). */
#ifndef FERRY_CLI_JSONW_H
#define FERRY_CLI_JSONW_H

#include <stddef.h>
#include <stdio.h>

typedef struct jsonw {
    FILE *f;
    int count; /* members written so far */
} jsonw;

void jsonw_begin(jsonw *w, FILE *f);
void jsonw_end(jsonw *w);                                   /* closes the object and writes '\n' */
void jsonw_str(jsonw *w, const char *key, const char *val); /* NULL -> null */
void jsonw_int(jsonw *w, const char *key, long long val);
void jsonw_int_or_null(jsonw *w, const char *key, long long val); /* val < 0 -> null */
void jsonw_double(jsonw *w, const char *key, double val);
void jsonw_null(jsonw *w, const char *key);
void jsonw_bool(jsonw *w, const char *key, int val); /* non-zero -> true */
/* `json` is JSON text: written verbatim when it parses, else as a JSON string; NULL -> null. */
void jsonw_raw(jsonw *w, const char *key, const char *json);

/* Write `s` as a quoted JSON string (escaping control characters, '"' and '\\'; a byte
 * that is not part of valid UTF-8 becomes U+FFFD, so the output is always valid JSON). */
void jsonw_write_string(FILE *f, const char *s);

#endif
