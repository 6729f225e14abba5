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

/* ---- a plain connection for reading the server's own figures (`ferry bench`) ---------- */

/* A connection made with a ferry_redis_options value and used only for INFO: queues and
 * workers open their own connections, and this one cannot send anything else. */
typedef struct ferry_redis_conn ferry_redis_conn;

/* Connect as a queue would (URL, TLS, AUTH, SELECT; within opts->connect_timeout_ms).
 * Returns: 0 with *out set, freed with ferry_redis_disconnect.
 * Errors: FERRY_EINVAL (bad options or URL, or out NULL), FERRY_EIO / FERRY_ETIMEDOUT
 * (unreachable), FERRY_ETLS, FERRY_EAUTH, FERRY_ENOMEM; *out is NULL and err says why.
 * Blocks: yes, up to the connect timeout. Threads: any; the connection is then used by one
 * thread at a time. Ownership: opts is only read during the call. */
FERRY_API int ferry_redis_connect(const ferry_redis_options *opts, ferry_redis_conn **out,
                                  ferry_error *err);

/* Send `INFO section` (section: one word such as "cpu", or NULL for the default sections).
 * Returns: 0 with *text the server's answer (malloc'd, NUL-terminated; the caller frees it).
 * Errors: FERRY_EINVAL (c or text NULL), FERRY_EREDIS (the server answered with an
 * error), FERRY_EPROTO (not a text
 * answer), FERRY_EIO / FERRY_ETIMEDOUT (within opts->command_timeout_ms; the connection is
 * then broken, and later calls fail), FERRY_ENOMEM; *text is NULL.
 * Blocks: yes, one round trip. Threads: one thread at a time per connection.
 * Ownership: `section` is only read. */
FERRY_API int ferry_redis_info(ferry_redis_conn *c, const char *section, char **text,
                               ferry_error *err);

/* Close and free. NULL accepted. Blocks: no (closes the socket). */
FERRY_API void ferry_redis_disconnect(ferry_redis_conn *c);

#ifdef __cplusplus
}
#endif
#endif
