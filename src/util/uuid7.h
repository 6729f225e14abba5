/* uuid7.h - UUIDv7 (RFC 9562) for outbox event ids: the formatter is pure (unit-tested
 * alone), the generator keeps per-process state so ids made in one millisecond still
 * increase. */
#ifndef FERRY_UTIL_UUID7_H
#define FERRY_UTIL_UUID7_H

#include <stddef.h>
#include <stdint.h>

/* Format the UUIDv7 with unix_ms (low 48 bits used), a 12-bit counter (rand_a) and 62
 * random bits taken from rnd[0..8) (the top two bits of rnd[0] are replaced by the
 * variant) as 36 lower-case characters + NUL. Pure. */
void ferry__uuid7_format(uint64_t unix_ms, uint16_t counter, const uint8_t rnd[8], char out[37]);

/* 1 when s is a UUID in the 8-4-4-4-12 hex form (either case), any version. Pure. */
int ferry__uuid_text_valid(const char *s, size_t len);

/* Next (ms, counter) after (*last_ms, *last_counter) given the clock's now_ms and a random
 * seed for a fresh millisecond: the same or an earlier millisecond increments the counter
 * (a full counter moves to the next millisecond), a later one starts the counter at
 * seed & 0x7ff (leaving room to count up). Updates *last_ms / *last_counter. Pure. */
void ferry__uuid7_next(uint64_t now_ms, uint16_t seed, uint64_t *last_ms, uint16_t *last_counter);

#endif
