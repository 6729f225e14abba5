/* printable.h - text from outside ferry (a topic an application inserted into the outbox)
 * made safe for one line of a log or of CLI output. */
#ifndef FERRY_UTIL_PRINTABLE_H
#define FERRY_UTIL_PRINTABLE_H

#include <stddef.h>

/* Copy s into out[cap] (cap >= 8) with backslash, C0 controls, DEL and C1 controls
 * (U+0080-U+009F) escaped (\\, \n, \r, \t, \xNN, \u00NN) and every byte that is not part
 * of a valid, shortest-form UTF-8 sequence of a scalar value (stray continuation bytes,
 * truncated or overlong sequences, surrogates, code points above U+10FFFF; judged by
 * ferryx_utf8_seq) as \xNN, so no such text can forge or garble lines; cut with "..." when
 * out is full, never inside an escape or a sequence. Returns out. Pure, thread-safe; no
 * allocation. */
const char *ferryx_printable(const char *s, char *out, size_t cap);

/* 1 when ferryx_printable would change nothing in s but backslashes (no control character,
 * C1 control or invalid UTF-8), so s can be printed as it is on one line; else 0. For text
 * whose backslashes already mean something, such as JSON. Pure, thread-safe. */
int ferryx_printable_clean(const char *s);

#endif
