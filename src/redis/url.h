/* url.h - Redis URL parser (pure, no I/O).
 * redis://[user[:pass]@]host[:port][/db]   rediss://...   unix:///path/to.sock[?db=N]
 * IPv6 hosts in brackets ([::1]). user/pass percent-decoded. */
#ifndef FERRY_REDIS_URL_H
#define FERRY_REDIS_URL_H

#include "ferry/common.h"

typedef enum { FERRY_URL_TCP, FERRY_URL_TLS, FERRY_URL_UNIX } ferry_url_kind;

typedef struct ferry_redis_url {
    ferry_url_kind kind;
    char *host;     /* TCP/TLS: host name or address (no brackets); NULL for unix */
    int port;       /* default 6379 */
    char *path;     /* unix socket path; NULL otherwise */
    char *user;     /* decoded, NULL when absent */
    char *password; /* decoded, NULL when absent */
    int db;         /* default 0 */
} ferry_redis_url;

/* Parse `url` into *out (fields malloc'd, freed with ferry__redis_url_free). Returns 0 or
 * FERRY_EINVAL with a message naming the problem. Thread-safe. */
int ferry__redis_url_parse(const char *url, ferry_redis_url *out, ferry_error *err);
void ferry__redis_url_free(ferry_redis_url *u);

#endif
