/* shop_messages.h - the messages shop-worker reads, parsed and checked: the outbox events'
 * payloads (order.placed, order.cancelled, payment.captured), the maintenance job's data,
 * and the providers' answers (payment gateway, carrier, mailer).
 *
 * Pure: no I/O, no global state, so it can be unit-tested and fuzzed alone. Every parser
 * refuses what is missing or ill-typed with a message naming the field and what it should
 * be, never quoting the value (a payload is not a log line). */
#ifndef SHOP_MESSAGES_H
#define SHOP_MESSAGES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHOP_MSG_BYTES_MAX (64u * 1024)    /* largest payload or answer parsed (bytes) */
#define SHOP_REF_MAX 128                   /* a provider's id: authorization, capture, tracking */
#define SHOP_AMOUNT_MAX 1000000000000000LL /* 10^15 in the smallest unit */
#define SHOP_ITEMS_MAX 1000000
#define SHOP_CLEANUP_DAYS_DEFAULT 7
#define SHOP_CLEANUP_DAYS_MAX 36500

/* order.placed, as shop-api writes it (aggregate id = orderId). */
typedef struct shop_order_placed {
    char order_id[37], customer_id[37];
    long long total;
    long long item_count;
    char authorization_id[SHOP_REF_MAX + 1];
} shop_order_placed;

/* order.cancelled, as shop-api writes it. */
typedef struct shop_order_cancelled {
    char order_id[37], customer_id[37];
    char authorization_id[SHOP_REF_MAX + 1];
} shop_order_cancelled;

/* payment.captured, as shop-worker's capture writes it. */
typedef struct shop_payment_captured {
    char order_id[37], customer_id[37];
    long long amount;
    char capture_id[SHOP_REF_MAX + 1];
    long long item_count;
} shop_payment_captured;

/* Parse a payload's JSON text (`json`, NUL-terminated, at most SHOP_MSG_BYTES_MAX bytes):
 * an object with every field of its struct above (ids: canonical UUID text; amounts and
 * counts: integers in 0..SHOP_AMOUNT_MAX / SHOP_ITEMS_MAX; provider ids: 1..SHOP_REF_MAX
 * characters of [A-Za-z0-9_.:-]). Other members are ignored.
 * Returns: 0 with *out filled; -1 with a message in err[cap] such as
 *   `order.placed payload: "total" is missing` or `... "orderId" must be a UUID`.
 * Threads: any. Blocks: no. Ownership: nothing kept. */
int shop_parse_order_placed(const char *json, shop_order_placed *out, char *err, size_t cap);
int shop_parse_order_cancelled(const char *json, shop_order_cancelled *out, char *err, size_t cap);
int shop_parse_payment_captured(const char *json, shop_payment_captured *out, char *err,
                                size_t cap);

/* The outbox-cleanup job's data {"olderThanDays": n}: n an integer in
 * 0..SHOP_CLEANUP_DAYS_MAX; absent (or data "{}") = SHOP_CLEANUP_DAYS_DEFAULT.
 * Returns: 0 with *days; -1 with a message in err[cap]. Threads: any. Blocks: no. */
int shop_parse_cleanup(const char *json, long *days, char *err, size_t cap);

/* Predicate: 1 when s is a provider id as above (1..SHOP_REF_MAX of [A-Za-z0-9_.:-]), so it
 * may go into a URL path unescaped; else 0. NULL = 0. */
int shop_ref_valid(const char *s);

/* The gateway's authorization state (GET /gateway/authorizations/{id}). */
typedef enum shop_auth_status {
    SHOP_AUTH_AUTHORIZED = 0,
    SHOP_AUTH_CAPTURED = 1,
    SHOP_AUTH_VOIDED = 2,
    SHOP_AUTH_EXPIRED = 3,
} shop_auth_status;

/* Parse GET /gateway/authorizations/{id}'s 200 body: "status" one of the four, and
 * "captureId" (a provider id) when captured.
 * Returns: 0 with *status and capture_id (SHOP_REF_MAX + 1 bytes; "" unless captured); -1
 *   with a message in err[cap]. Threads: any. Blocks: no. */
int shop_parse_authorization(const char *json, shop_auth_status *status, char *capture_id,
                             char *err, size_t cap);

/* The id in a provider's answer: "captureId" of a capture, "trackingNumber" of a created
 * shipment, "messageId" of a sent message. `member` names it.
 * Returns: 0 with out (SHOP_REF_MAX + 1 bytes); -1 with a message in err[cap]. */
int shop_parse_answer_id(const char *json, const char *member, char *out, char *err, size_t cap);

/* Parse the carrier's lookup answer {"shipment": {"trackingNumber": ...} | null}.
 * Returns: 1 with tracking (SHOP_REF_MAX + 1 bytes) when a shipment was found, 0 when
 *   "shipment" is null, -1 with a message in err[cap]. */
int shop_parse_lookup(const char *json, char *tracking, char *err, size_t cap);

/* The provider's {"error": "..."} text of an error answer, made printable (control and
 * non-ASCII bytes as '?') and cut to fit out[cap]; "" when the body has none.
 * Returns: out. Threads: any. Blocks: no. */
const char *shop_error_text(const char *json, char *out, size_t cap);

/* Copy s into out[cap] with bytes outside printable ASCII, '"' and '\\' escaped (\xNN),
 * cut to fit; for names from outside (job names) in failure reasons and logs.
 * Returns: out. */
const char *shop_printable(const char *s, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
