/* api.h - shop-api's parts, shared by its files (not an installed header): the settings every
 * handler reads, the router, the handlers of the order routes, the order view and the
 * payment gateway client.
 *
 * Threads, for every function below: handlers run on ex_httpd's connection threads, several
 * at once; they share only the shop_api settings (read-only after start) and the pool. */
#ifndef SHOP_API_H
#define SHOP_API_H

#include "ex_httpd.h"
#include "ex_util.h"

#include <libpq-fe.h>
#include <stddef.h>

#define SHOP_API_BODY_MAX (64u * 1024u)    /* request bodies: larger ones get 413 */
#define SHOP_API_POOL_WAIT_MS 5000         /* longest wait for a pooled connection */
#define SHOP_API_STATEMENT_TIMEOUT_MS 5000 /* statement_timeout of the pool's sessions */
#define SHOP_AUTH_ID_MAX 128               /* bytes of a gateway authorization id */

typedef struct shop_api {
    ex_pgpool *pool;
    const char *schema;      /* where ferry's and the shop's tables are (search_path) */
    const char *gateway_url; /* base URL of the gateway, no trailing '/' */
    int provider_timeout_ms; /* whole-call deadline of a gateway call */
} shop_api;

/* The ex_httpd handler (userdata = shop_api *): routes by method and path, answers 404 for
 * unknown paths and 405 with Allow for a known path's wrong method. */
void shop_api_handle(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata);

/* POST /orders: validate, authorize, write order + payment + order.placed in one
 * transaction; 201 with the order view. Fills resp in every case. */
void shop_api_place(shop_api *api, const ex_httpd_req *req, ex_httpd_resp *resp);
/* POST /orders/{id}/cancel (id as in the path, not yet validated). Fills resp. */
void shop_api_cancel(shop_api *api, const ex_httpd_req *req, ex_httpd_resp *resp, const char *id);
/* GET /orders/{id} (id not yet validated). Fills resp. */
void shop_api_get(shop_api *api, ex_httpd_resp *resp, const char *id);
/* GET /healthz: 200 {"ok":true} when a pooled connection answers SELECT 1, else 503. */
void shop_api_healthz(shop_api *api, ex_httpd_resp *resp);

/* The order view (what GET /orders/{id} answers) of order `id` (a valid UUID), read on c,
 * inside the caller's transaction when there is one.
 * Returns: 1 and a malloc'd JSON object in *json (caller frees); 0 when there is no such
 *   order; -1 with "SQLSTATE: message" in err[cap] (database failure) or "out of memory".
 * Blocks: one statement under the session's statement_timeout. */
int shop_api_view(PGconn *c, const char *id, char **json, char *err, size_t cap);

/* Outcomes of the gateway calls. */
enum {
    SHOP_GW_OK = 0,           /* done: the authorization id is filled in */
    SHOP_GW_REFUSED = 1,      /* the gateway said no: 400/402/403/409/422, or a declined status */
    SHOP_GW_UNAVAILABLE = -1, /* nothing decided: down, timeout, dropped, 5xx, 408, 429, 401,
                                 404, 405, 3xx, a 2xx without an authorization id */
};

/* Authorize `amount` for order `order_id` at base_url/authorizations with Idempotency-Key
 * "authorize-<order_id>" and the traceparent (NULL = none), within timeout_ms.
 * Returns SHOP_GW_OK with the id in auth_id; SHOP_GW_REFUSED or SHOP_GW_UNAVAILABLE with
 * the reason in why[cap] (for the log: the gateway's status and error text, or the transport
 * failure). After UNAVAILABLE the gateway may still have authorized (a timeout, a drop): that
 * authorization is never captured and expires at the provider.
 * Blocks: up to timeout_ms. */
int shop_gateway_authorize(const char *base_url, int timeout_ms, long long amount,
                           const char *order_id, const char *traceparent,
                           char auth_id[SHOP_AUTH_ID_MAX + 1], char *why, size_t cap);

/* Void an authorization nobody will capture (its order was not written), best effort, with
 * Idempotency-Key "void-<order_id>", within timeout_ms.
 * Returns SHOP_GW_OK when the gateway confirmed, else as above with why[cap].
 * Blocks: up to timeout_ms. */
int shop_gateway_void(const char *base_url, int timeout_ms, const char *auth_id,
                      const char *order_id, const char *traceparent, char *why, size_t cap);

#endif
