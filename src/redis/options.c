/* options.c - the public ferry_redis_options helpers (defaults and URL check). */
#include <string.h>

#include "ferry/redis.h"
#include "redis/url.h"

void ferry_redis_options_init(ferry_redis_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_redis_url_check(const char *url, ferry_error *err) {
    ferry_redis_url u;
    int rc = ferry__redis_url_parse(url, &u, err);
    if (rc == 0) ferry__redis_url_free(&u);
    return rc;
}
