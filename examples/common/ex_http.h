/* ex_http.h - a small blocking HTTP client for the examples (libcurl underneath).
 *
 * What the shop's and taskflow's processes use to call their providers (payment gateway,
 * carrier, mailer) and what the demo's load client uses to call shop-api. Every call has a
 * deadline; a provider that answers nothing, too late, or drops the connection comes back
 * as a transport failure, never as a hang. */
#ifndef EX_HTTP_H
#define EX_HTTP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EX_HTTP_BODY_MAX (4u << 20) /* largest response body accepted (bytes) */

/* Why no response came (ex_http_response.transport). */
enum {
    EX_HTTP_OK = 0,        /* a response came (any status) */
    EX_HTTP_ETIMEDOUT = 1, /* the deadline passed: the request may or may not have had an effect */
    EX_HTTP_ECONNECT = 2,  /* could not connect: the request had no effect */
    EX_HTTP_EDROPPED = 3,  /* the connection closed before a complete response: unknown effect */
    EX_HTTP_ETOOBIG = 4,   /* the response body is over EX_HTTP_BODY_MAX */
    EX_HTTP_EOTHER = 5,    /* anything else (bad URL, out of memory...) */
};

typedef struct ex_http_request {
    const char *method;          /* "GET", "POST", ... ; NULL = "GET" */
    const char *url;             /* absolute http:// URL, required */
    const char *body;            /* request body (sent as application/json); NULL = none */
    const char *idempotency_key; /* sent as Idempotency-Key; NULL = none */
    const char *traceparent;     /* sent as traceparent; NULL = none */
    const char *token;           /* sent as Authorization: Bearer ...; NULL = none */
    int timeout_ms;              /* whole-call deadline, connect included; 0 = 5000 */
} ex_http_request;

typedef struct ex_http_response {
    int status;            /* HTTP status when transport == EX_HTTP_OK, else 0 */
    int transport;         /* EX_HTTP_OK or why no response came */
    char retry_after[128]; /* the Retry-After header as sent (trimmed), "" when absent */
    char *body;            /* NUL-terminated body ("" when empty), owned by the response */
    size_t body_len;
    char error[256]; /* transport failure in words, "" when transport == EX_HTTP_OK */
} ex_http_response;

/* Once per process, before any thread calls ex_http_do (curl_global_init).
 * Returns 0, -1 when libcurl cannot initialise. Threads: call from main before others. */
int ex_http_global_init(void);

/* Send one request and wait for its response, up to req->timeout_ms.
 * Returns: 0 when a response came (res->status holds it, whatever it is), -1 when none did
 *   (res->transport and res->error say why; res->body is "").
 * Blocks: up to the timeout. Threads: any; calls share nothing (one connection each).
 * Ownership: res is filled in (its previous contents are not freed); free it with
 *   ex_http_response_free, on success and on failure alike. */
int ex_http_do(const ex_http_request *req, ex_http_response *res);

/* Free what ex_http_do put in res (body); res itself stays the caller's. NULL accepted. */
void ex_http_response_free(ex_http_response *res);

/* Name of a transport code ("timeout", "connect", "dropped", "too big", "error", "ok"). */
const char *ex_http_transport_name(int transport);

#ifdef __cplusplus
}
#endif

#endif
