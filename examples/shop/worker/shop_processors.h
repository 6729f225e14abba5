/* shop_processors.h - the shop's job handlers, one ferry_handler_fn per queue, as the seed's
 * processors: payments (capture-payment, void-authorization), notifications
 * (order-confirmation), shipping (create-shipment), loyalty (award-points) and maintenance
 * (outbox-cleanup).
 *
 * Every handler is idempotent across a crash at any point (the job is then run again as a
 * stalled job, or retried): it looks for the work already done (its own rows, the
 * provider's state, the inbox) before doing it, provider calls carry idempotency keys
 * derived from the business intent (capture-<orderId>, void-<orderId>, the event id) or are
 * preceded by a lookup (the carrier), and each effect is written with a compare-and-set or
 * an ON CONFLICT. A delivery that finds its work done is a duplicate: it completes, and a
 * row saying how it was absorbed goes to shop_duplicates afterwards (best effort: a failure
 * there is only logged).
 *
 * Outcomes: a bad payload (missing or ill-typed field, unknown order) or an unknown job
 * name is FERRY_FAILED_PERMANENT with a reason naming the problem (never the payload), so
 * it reaches the dead letters; provider answers are mapped with ferry_http_classify
 * (5xx / transport failure: retried with backoff; 429: throttled or retried after
 * Retry-After; other 4xx: permanent), database failures are transient.
 *
 * Library: shop_processors (does not link ferry: the program links the shared library, the
 * tests the static one). */
#ifndef SHOP_PROCESSORS_H
#define SHOP_PROCESSORS_H

#include "ex_util.h"

#include <ferry/worker.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Names of the consumers in shop_duplicates.consumer (and the inbox consumer of loyalty). */
#define SHOP_CONSUMER_CAPTURE "payments.capture"
#define SHOP_CONSUMER_VOID "payments.void"
#define SHOP_CONSUMER_CONFIRMATION "notifications.order-confirmation"
#define SHOP_CONSUMER_SHIPMENT "shipping.create-shipment"
#define SHOP_CONSUMER_POINTS "loyalty.award-points"

/* What the handlers share. Filled by the program (or a test) before the workers start and
 * not changed while they run; the handlers only read it, from any number of threads.
 * Ownership: every pointer is borrowed and must outlive the workers (ferry_worker_close). */
typedef struct shop_ctx {
    ex_pgpool *pool;    /* connections with search_path = schema */
    const char *schema; /* the schema of the shop's and ferry's tables; NULL = "public" */
    const char *gateway_url, *carrier_url, *mailer_url; /* base URLs, e.g.
                                                           http://127.0.0.1:7071/gateway */
    int provider_timeout_ms; /* whole-call deadline of a provider call; 0 = 2000 */
    int pool_wait_ms;        /* longest wait for a pooled connection; 0 = 10000 */
    /* After a carrier create whose outcome is unknown (timed out, dropped), how long to
     * wait before looking the shipment up again (the carrier may still be making it); the
     * job is postponed without spending an attempt. 0 = 5000. */
    int settle_ms;
    int verbose; /* 1 = log every absorbed duplicate to stderr */
} shop_ctx;

/* The handlers (ferry_handler_fn; userdata: a shop_ctx *). Each dispatches on the job
 * name; a name the queue does not serve is FERRY_FAILED_PERMANENT ("unknown job name
 * "X" on queue Q"). Return values (ferry_job_set_return) say what was done:
 *   capture-payment      {"captureId": ...}, or {"skipped": "cancelled"} when the order
 *                        was cancelled first (a no-op, not a failure)
 *   void-authorization   {"voided": true}
 *   order-confirmation   {"messageId": ...} (the mailer's id)
 *   create-shipment      {"trackingNumber": ...}
 *   award-points         {"points": n} (0 when the inbox had the event already)
 *   outbox-cleanup       {"deleted": n}
 * Threads: any handler thread, any number at once (each takes its own pooled connection).
 * Blocks: database statements and provider calls, each bounded by its timeout. */
ferry_outcome shop_payments_handler(ferry_job *job, void *ctx);
ferry_outcome shop_notifications_handler(ferry_job *job, void *ctx);
ferry_outcome shop_shipping_handler(ferry_job *job, void *ctx);
ferry_outcome shop_loyalty_handler(ferry_job *job, void *ctx);
ferry_outcome shop_maintenance_handler(ferry_job *job, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
