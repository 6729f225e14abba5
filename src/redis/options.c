/* options.c - the public ferry_redis_options helpers (defaults and URL check) and the
 * owning copies the handles keep (options.h). */
#include <stdlib.h>
#include <string.h>

#include "ferry/redis.h"
#include "redis/options.h"
#include "redis/url.h"
#include "util/error.h"

void ferry_redis_options_init(ferry_redis_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_redis_url_check(const char *url, ferry_error *err) {
    ferry_redis_url u;
    int rc = ferry__redis_url_parse(url, &u, err);
    if (rc == 0) ferry__redis_url_free(&u);
    return rc;
}

/* The string fields of ferry_redis_options, in one place for dup and release. */
#define REDIS_OPTION_STRINGS(o)                                                                \
    {&(o)->url, &(o)->tls_ca_file, &(o)->tls_ca_dir, &(o)->tls_cert_file, &(o)->tls_key_file, \
     &(o)->tls_server_name}

int ferry__redis_options_dup(ferry_redis_options *dst, const ferry_redis_options *src,
                             ferry_error *err) {
    ferry_redis_options_init(dst);
    if (src) *dst = *src;
    const char **fields[] = REDIS_OPTION_STRINGS(dst);
    size_t n = sizeof fields / sizeof fields[0];
    int oom = 0;
    for (size_t i = 0; i < n; i++) {
        if (!*fields[i]) continue;
        char *copy = oom ? NULL : strdup(*fields[i]);
        if (!copy) oom = 1;
        *fields[i] = copy;
    }
    if (!oom) return 0;
    ferry__redis_options_release(dst);
    return ferry__err(err, FERRY_ENOMEM, "out of memory");
}

void ferry__redis_options_release(ferry_redis_options *o) {
    if (!o) return;
    const char **fields[] = REDIS_OPTION_STRINGS(o);
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        free((char *)*fields[i]);
        *fields[i] = NULL;
    }
}
