/* fuzz_routes.c - libFuzzer target for the relay's routes file parser (src/outbox/routes.c).
 * Beyond "no crash, no leak, no UB" it checks the parser's promises: a parsed table is
 * consistent (every topic is found by lookup at its own index, has 1..64 targets with
 * non-empty names within their limits, no queue twice per topic) and a failure is
 * FERRY_EINVAL/ETOOBIG/ENOMEM with a message naming the source. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/outbox.h"
#include "outbox/routes.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ferry_routes *r = NULL;
    ferry_error e = {0};
    int rc = ferry_routes_parse((const char *)data, size, "fuzz.routes", &r, &e);
    if (rc) {
        check(r == NULL);
        check(rc == FERRY_EINVAL || rc == FERRY_ETOOBIG || rc == FERRY_ENOMEM);
        check(e.code == rc && !strncmp(e.message, "fuzz.routes", 11));
        return 0;
    }
    size_t n = ferry_routes_topic_count(r);
    check(n >= 1 && n <= FERRY_ROUTES_TOPICS_MAX);
    for (size_t i = 0; i < n; i++) {
        const char *t = ferry_routes_topic(r, i);
        check(t && *t && strlen(t) <= FERRY_OUTBOX_TOPIC_MAX);
        check(ferry__routes_find(r, t) == (long)i);
        check(!strpbrk(t, " \t#\r\n"));
        size_t nt = ferry_routes_target_count(r, i);
        check(nt >= 1 && nt <= FERRY_ROUTES_TARGETS_MAX);
        for (size_t j = 0; j < nt; j++) {
            const char *q = NULL, *job = NULL;
            check(ferry_routes_target(r, i, j, &q, &job) == 0);
            check(q && *q && !strchr(q, ':') && job && *job);
            for (size_t k = 0; k < j; k++) {
                const char *q2 = NULL;
                ferry_routes_target(r, i, k, &q2, NULL);
                check(strcmp(q, q2) != 0);
            }
        }
    }
    check(ferry_routes_topic(r, n) == NULL);
    ferry_routes_free(r);
    return 0;
}
