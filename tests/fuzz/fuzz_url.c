/* fuzz_url.c - libFuzzer target for the Redis URL parser (src/redis/url.c).
 * Beyond "no crash, no leak, no UB" it checks the parser's promises: a parsed URL is
 * internally consistent, and a failure is FERRY_EINVAL/ENOMEM with a non-empty message. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/redis.h"
#include "redis/url.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    ferry_redis_url u;
    ferry_error e = {0};
    int rc = ferry__redis_url_parse(s, &u, &e);
    if (rc == 0) {
        check(u.db >= 0);
        if (u.kind == FERRY_URL_UNIX) {
            check(u.path && u.path[0] == '/' && !u.host);
        } else {
            check(u.kind == FERRY_URL_TCP || u.kind == FERRY_URL_TLS);
            check(u.host && u.host[0] && !u.path);
            check(u.port >= 1 && u.port <= 65535);
        }
        check(!u.user || u.user[0]);
        check(!u.password || u.password[0]);
        check(strlen(s) <= 4096);
        ferry__redis_url_free(&u);
    } else {
        check(rc == FERRY_EINVAL || rc == FERRY_ENOMEM);
        check(e.code == rc && e.message[0] != '\0');
        check(memchr(e.message, '\0', sizeof e.message) != NULL);
        check(!u.host && !u.path && !u.user && !u.password);
    }
    check(ferry_redis_url_check(s, NULL) == rc);
    free(s);
    return 0;
}
