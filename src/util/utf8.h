/* utf8.h - the one UTF-8 decoder: JSON checks, JSON writers and ferryx_printable all judge
 * bytes with it, so they agree on what is valid text. */
#ifndef FERRY_UTIL_UTF8_H
#define FERRY_UTIL_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s[0..n) (n >= 1; 1 for ASCII), or 0 if invalid:
 * a stray continuation byte, a truncated sequence, an overlong form, a surrogate
 * (U+D800-U+DFFF) or a code point above U+10FFFF. Pure, thread-safe. */
size_t ferryx_utf8_seq(const unsigned char *s, size_t n);

#endif
