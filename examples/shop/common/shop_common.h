/* shop_common.h - what every shop program shares: its names, the relay's routes and job
 * options, and the shop's own tables (examples/shop/sql/shop.sql, embedded).
 *
 * The names and options are the shop's design, stated once here so that shop-worker (which
 * runs the relay and the workers), shop-demo (which reconciles) and the tests agree. */
#ifndef SHOP_COMMON_H
#define SHOP_COMMON_H

#include <libpq-fe.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHOP_PREFIX "shop" /* Redis key prefix of the shop's queues */

/* Queues and job names. */
#define SHOP_Q_PAYMENTS "payments"
#define SHOP_Q_NOTIFICATIONS "notifications"
#define SHOP_Q_SHIPPING "shipping"
#define SHOP_Q_LOYALTY "loyalty"
#define SHOP_Q_MAINTENANCE "maintenance"
#define SHOP_JOB_CAPTURE "capture-payment"
#define SHOP_JOB_VOID "void-authorization"
#define SHOP_JOB_CONFIRMATION "order-confirmation"
#define SHOP_JOB_SHIPMENT "create-shipment"
#define SHOP_JOB_POINTS "award-points"
#define SHOP_JOB_OUTBOX_CLEANUP "outbox-cleanup"

/* Outbox topics. */
#define SHOP_TOPIC_PLACED "order.placed"
#define SHOP_TOPIC_CANCELLED "order.cancelled"
#define SHOP_TOPIC_CAPTURED "payment.captured"

/* The relay's routes (a ferry routes file's text): an event fans out to one job per
 * target, each with the event id as its jobId. */
#define SHOP_ROUTES                                                                                \
    "order.placed      payments:capture-payment  notifications:order-confirmation\n"               \
    "payment.captured  shipping:create-shipment  loyalty:award-points\n"                           \
    "order.cancelled   payments:void-authorization\n"

/* Default JobsOptions of the jobs the relay adds: attempts 8, exponential backoff from 2 s
 * with jitter 0.5, completed jobs kept a day (at most 10,000), failed ones 14 days. */
#define SHOP_DEFAULT_JOB_OPTS                                                                      \
    "{\"attempts\":8,\"backoff\":{\"type\":\"exponential\",\"delay\":2000,\"jitter\":0.5},"        \
    "\"removeOnComplete\":{\"age\":86400,\"count\":10000},"                                        \
    "\"removeOnFail\":{\"age\":1209600}}"
/* The payments queue replaces them as a whole: attempts 12 with the `capped` strategy
 * (shop-worker registers it), completed jobs kept 7 days, failed ones never removed. */
#define SHOP_PAYMENTS_JOB_OPTS                                                                     \
    "{\"attempts\":12,\"backoff\":{\"type\":\"capped\"},"                                          \
    "\"removeOnComplete\":{\"age\":604800},\"removeOnFail\":false}"

/* The shop's SQL (sql/shop.sql), embedded at build time. */
extern const char shop_sql_text[];

/* Make sure the schema is ready for the shop: ferry's tables migrated to this library's
 * version (`ferry migrate` does that; this call does not) and the shop's own tables
 * created (idempotent, under a transaction-scoped advisory lock so that processes starting
 * together do not race). `schema` NULL = "public".
 * Returns: 0, or -1 with a message in err[cap]: ferry's tables missing or older (saying
 *   which `ferry migrate` to run), or the SQL failing (SQLSTATE and PostgreSQL's message).
 * Blocks: a few statements under the session's statement_timeout. Threads: libpq's rule on
 *   c, which must be idle; it is left idle. */
int shop_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
