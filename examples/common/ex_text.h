/* ex_text.h - pure text checks every example shares (no I/O, no dependency at all, so that
 * the pure parsers built on them can be tested and fuzzed alone). */
#ifndef EX_TEXT_H
#define EX_TEXT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Predicate: 1 when s is a UUID in canonical text form (36 characters, 8-4-4-4-12 hex
 * digits, either case, any version), else 0. NULL = 0. Threads: any. Blocks: no. */
int ex_uuid_valid(const char *s);

#ifdef __cplusplus
}
#endif

#endif
