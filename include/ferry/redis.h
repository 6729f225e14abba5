/* ferry/redis.h - how ferry reaches Redis.
 *
 * A ferry_redis_options value describes one Redis endpoint. It is a plain struct owned by
 * the caller; ferry copies what it needs when a queue or worker is opened, so the struct
 * and its strings may be freed right after that call returns. */
#ifndef FERRY_REDIS_H
#define FERRY_REDIS_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FERRY_DEFAULT_REDIS_URL "redis://127.0.0.1:6379"
#define FERRY_REDIS_TIMEOUT_MAX_MS 86400000 /* connect_timeout_ms, command_timeout_ms: a day */

typedef struct ferry_redis_options {
    /* redis://[user:pass@]host[:port][/db], rediss://... (TLS), unix:///path[?db=N].
     * Credentials are percent-decoded. NULL means FERRY_DEFAULT_REDIS_URL. */
    const char *url;
    /* TLS (rediss:// only). Verification is on unless tls_insecure is set. */
    const char *tls_ca_file; /* PEM bundle; NULL = system default store */
    const char *tls_ca_dir;  /* hashed CA directory; NULL = none */
    /* Client certificate (PEM), optional; servers that require one (Redis'
     * tls-auth-clients yes) refuse a connection without it with FERRY_ETLS. */
    const char *tls_cert_file;
    const char *tls_key_file;    /* client private key (PEM), optional */
    const char *tls_server_name; /* name to verify and send as SNI; NULL = URL host */
    int tls_insecure;            /* 1 = skip certificate verification (tests only) */
    int connect_timeout_ms;      /* TCP connect + TLS handshake + AUTH/SELECT; 0 = 5000;
                                    at most FERRY_REDIS_TIMEOUT_MAX_MS */
    int command_timeout_ms;      /* one request/reply round trip; 0 = 5000; at most
                                    FERRY_REDIS_TIMEOUT_MAX_MS */
} ferry_redis_options;

/* Fill *o with defaults (all NULL / 0; NULL accepted). Threads: any. Blocks: no; no
 * allocation. */
FERRY_API void ferry_redis_options_init(ferry_redis_options *o);

/* Check that a URL parses (scheme, host, port, db, percent-encoding) without connecting.
 * Returns: 0. Errors: FERRY_EINVAL with a message naming the problem in *err.
 * Threads: any. Blocks: no (pure). */
FERRY_API int ferry_redis_url_check(const char *url, ferry_error *err);

#ifdef __cplusplus
}
#endif
#endif
