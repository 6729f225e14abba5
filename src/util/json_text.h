/* json_text.h - JSON text helpers for the producer (pure, no I/O):
 *  - a non-allocating syntax + UTF-8 check for job data (fast enough for the add path,
 *    where building a jansson tree per job would cost more than the Redis work);
 *  - a compact serializer for jansson values that prints numbers the way JavaScript's
 *    JSON.stringify does (integral values without ".0", shortest round-trip doubles),
 *    so stored opts look like what Node writes.
 * Thread-safe (no shared state). */
#ifndef FERRY_UTIL_JSON_TEXT_H
#define FERRY_UTIL_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

#include "util/utf8.h" /* ferryx_utf8_seq */

typedef struct ferryx_json_check_error {
    size_t offset;      /* byte offset of the problem */
    const char *reason; /* static text */
} ferryx_json_check_error;

/* Check that s[0..n) is exactly one RFC 8259 JSON value (surrounding whitespace allowed),
 * strings are valid UTF-8 without raw control characters, and arrays/objects nest at most
 * max_depth (1..4096) levels. Returns 0, or -1 with *e filled (e may be NULL). */
int ferryx_json_check(const char *s, size_t n, int max_depth, ferryx_json_check_error *e);

/* Check that s[0..n), already accepted by ferryx_json_check, is also what PostgreSQL's jsonb
 * input accepts (PostgreSQL 13+, UTF8 database), which is stricter than RFC 8259 (and than
 * Node's JSON.parse, so job data does not use this): no \u0000 escape; a \uD800-\uDBFF
 * escape followed at once by a \uDC00-\uDFFF one, and no other surrogate escape; every
 * number within numeric's range (value below 10^131072, at most 16383 digits after the
 * decimal point counting an exponent's shift and trailing zeros, exponent below 2^30 - 1
 * in magnitude). Returns 0, or -1 with *e filled (offset = the string or number's first
 * byte; e may be NULL). Pure, thread-safe, no allocation; linear in n. */
int ferryx_jsonb_check(const char *s, size_t n, ferryx_json_check_error *e);

/* Serialize v compactly. drop_nulls = 1 leaves out object members whose value is null
 * (as BullMQ's msgpack/cjson round trip does). Returns a malloc'd NUL-terminated string
 * (caller frees) or NULL when out of memory or the text would exceed max_len bytes.
 * Recursion follows the value's depth; callers bound it when parsing. */
char *ferryx_json_serialize(const json_t *v, int drop_nulls, size_t max_len);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, surrogates or code points > U+10FFFF). */
int ferryx_utf8_valid(const char *s, size_t n);

/* Index just past the JSON value that starts at s[i] (after any blanks), in text that
 * ferryx_json_check accepted; n when the text ends first. Lets a caller take the elements
 * of an array as they are written (no re-encoding). Pure. */
size_t ferryx_json_value_end(const char *s, size_t n, size_t i);

/* Depth of the deepest array/object nesting in JSON text (strings skipped), stopping early
 * once it exceeds `limit`. Used to refuse deep input before jansson recurses on it. */
int ferryx_json_depth(const char *s, size_t n, int limit);

#endif
