/* ex_text.h - pure text checks every example shares (no I/O, no dependency at all, so that
 * the pure parsers built on them can be tested and fuzzed alone). */
#ifndef EX_TEXT_H
#define EX_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Predicate: 1 when s is a UUID in canonical text form (36 characters, 8-4-4-4-12 hex
 * digits, either case, any version), else 0. NULL = 0. Threads: any. Blocks: no. */
int ex_uuid_valid(const char *s);

/* The part of an http(s) URL that is safe to show in a log line: its scheme, host, port and
 * path, with any user name and password left out ("***@" instead) and any query or fragment
 * replaced by "?..." (either may hold a key). Text that is not such a URL is shown as
 * "(a URL that is not http:// or https://)".
 * Returns: out (always NUL-terminated, cut to fit out[cap]; cap > 0). Threads: any. */
const char *ex_url_display(const char *url, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
