/* fuzz_retry_after.c - libFuzzer target for Retry-After / HTTP-date parsing and the HTTP
 * status classifier (src/worker/http_classify.c, src/util/httpdate.c).
 *
 * Input layout: the first 8 bytes (when present) choose now_ms and the status code, the
 * rest is the header value. The value goes to the HTTP-date parser as an exact-length,
 * unterminated heap copy (so ASan catches any read past `len`) and to the public API as a
 * NUL-terminated string. Invariants are checked with __builtin_trap(): a parser that
 * returns a delay outside its documented range is as much a bug as a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/http_classify.h"
#include "util/httpdate.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

static void check_verdict(int status, const char *value, long long now_ms) {
    ferry_http_verdict v = ferry_http_classify(status, value, now_ms);
    CHECK(v.delay_ms >= 0 && v.delay_ms <= FERRY_RETRY_AFTER_MAX_MS);
    CHECK(v.cls >= FERRY_HTTP_OK && v.cls <= FERRY_HTTP_PERMANENT);
    CHECK(strcmp(ferry_http_class_name(v.cls), "unknown") != 0);
    if (v.cls != FERRY_HTTP_RETRY_LATER && v.cls != FERRY_HTTP_THROTTLED) CHECK(v.delay_ms == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A fixed, realistic clock for most inputs; a fuzzer-chosen one (any 64-bit value) when
     * the input starts with '#', to exercise the overflow guards. */
    long long now_ms = 1700000000000LL; /* 2023-11-14 */
    int status = 503;
    if (size >= 9 && data[0] == '#') {
        uint64_t raw;
        memcpy(&raw, data + 1, sizeof raw);
        now_ms = (long long)raw;
        status = 400 + (int)(raw % 200);
        data += 9;
        size -= 9;
    }

    /* exact-length, unterminated copy for the internal parser */
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) return 0;
    memcpy(exact, data, size);
    int64_t at_ms;
    if (ferry__httpdate_parse((const char *)exact, size, now_ms, &at_ms) == 0) {
        CHECK(at_ms >= -62167219200000LL && at_ms <= FERRY_HTTPDATE_MAX_MS);
    }
    free(exact);

    char *value = malloc(size + 1);
    if (!value) return 0;
    memcpy(value, data, size);
    value[size] = '\0';

    long long d1 = -1, d2 = -1;
    int r1 = ferry_retry_after_parse(value, now_ms, &d1);
    int r2 = ferry_retry_after_parse(value, now_ms, NULL);
    CHECK(r1 == 0 || r1 == FERRY_EINVAL);
    CHECK(r1 == r2); /* a NULL out pointer only drops the result */
    if (r1 == 0) {
        CHECK(d1 >= 0 && d1 <= FERRY_RETRY_AFTER_MAX_MS);
        /* A later clock never lengthens the wait, except across an RFC 850 century
         * boundary (the only format with '-', and the only one whose year depends on now). */
        if (now_ms < INT64_MAX - 1000 && !strchr(value, '-')) {
            CHECK(ferry_retry_after_parse(value, now_ms + 1000, &d2) == 0);
            CHECK(d2 <= d1);
        }
    } else {
        CHECK(d1 == -1);
    }

    check_verdict(status, value, now_ms);
    check_verdict(429, value, now_ms);
    ferry_http_verdict t = ferry_http_classify(429, value, now_ms);
    CHECK(t.delay_ms == (r1 == 0 ? d1 : FERRY_THROTTLE_DEFAULT_MS));
    free(value);
    return 0;
}
