/* uuid7.c - UUIDv7 generation: 48-bit Unix milliseconds, a 12-bit per-process counter
 * (RFC 9562 method 1, "fixed-length dedicated counter") so that ids made by one process are
 * strictly increasing even within a millisecond or when the clock steps back, and 62
 * random bits from getrandom(2). */
#include "util/uuid7.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include "ferry/outbox.h"
#include "util/clock.h"

#define COUNTER_MAX 0xfffu

void ferry__uuid7_format(uint64_t unix_ms, uint16_t counter, const uint8_t rnd[8], char out[37]) {
    uint8_t b[16];
    for (int i = 0; i < 6; i++)
        b[i] = (uint8_t)(unix_ms >> (8 * (5 - i)));
    b[6] = (uint8_t)(0x70 | ((counter >> 8) & 0x0f));
    b[7] = (uint8_t)(counter & 0xff);
    b[8] = (uint8_t)(0x80 | (rnd[0] & 0x3f));
    memcpy(b + 9, rnd + 1, 7);
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

void ferry__uuid7_next(uint64_t now_ms, uint16_t seed, uint64_t *last_ms, uint16_t *last_counter) {
    if (now_ms > *last_ms) {
        *last_ms = now_ms;
        *last_counter = (uint16_t)(seed & 0x7ff);
    } else if (*last_counter < COUNTER_MAX) {
        (*last_counter)++; /* same millisecond, or the clock went back: keep counting */
    } else {
        (*last_ms)++; /* counter exhausted: borrow the next millisecond */
        *last_counter = (uint16_t)(seed & 0x7ff);
    }
}

static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gen_last_ms;
static uint16_t gen_last_counter;

static int random_bytes(uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

int ferry_uuid7(char out[FERRY_UUID_STRLEN + 1]) {
    uint8_t rnd[10];
    if (!out || random_bytes(rnd, sizeof rnd)) return FERRY_EIO;
    int64_t now = ferry__now_ms();
    uint16_t seed = (uint16_t)(rnd[8] | (rnd[9] << 8));
    pthread_mutex_lock(&gen_mu);
    ferry__uuid7_next(now > 0 ? (uint64_t)now : 0, seed, &gen_last_ms, &gen_last_counter);
    uint64_t ms = gen_last_ms;
    uint16_t counter = gen_last_counter;
    pthread_mutex_unlock(&gen_mu);
    ferry__uuid7_format(ms, counter, rnd, out);
    return 0;
}
