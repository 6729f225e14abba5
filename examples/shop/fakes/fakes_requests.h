/* fakes_requests.h - the request bodies and headers shop-fakes accepts, parsed and checked
 * (examples/shop/PROTOCOL.md). Pure: no I/O, no state, so they can be fuzzed alone. Every
 * failure names the field at fault, for a 400 {"error": ..., "field": ...}. */
#ifndef FAKES_REQUESTS_H
#define FAKES_REQUESTS_H

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKES_AMOUNT_MAX 1000000000000000LL /* 10^15: any order fits */
#define FAKES_REFERENCE_MAX 200             /* bytes */
#define FAKES_KEY_MAX 255                   /* bytes of an Idempotency-Key */
#define FAKES_ITEMS_MAX 1000000
#define FAKES_TO_MAX 320       /* bytes of an email address */
#define FAKES_TEMPLATE_MAX 100 /* bytes of a template name */

/* Why a request was refused: the field ("amount", "Idempotency-Key", "" for the body as a
 * whole) and a sentence. */
typedef struct fakes_req_error {
    char field[64];
    char message[256];
} fakes_req_error;

typedef struct fakes_authorize_req {
    long long amount;
    char reference[FAKES_REFERENCE_MAX + 1];
} fakes_authorize_req;

typedef struct fakes_capture_req {
    int has_amount; /* 0: capture the whole authorized amount */
    long long amount;
} fakes_capture_req;

typedef struct fakes_shipment_req {
    char reference[FAKES_REFERENCE_MAX + 1];
    long items;
} fakes_shipment_req;

/* Each parser: body[len] is the request body (need not be NUL-terminated).
 * Returns 0 and fills *out; -1 with *e filled in (malformed JSON, not an object, a field
 * missing, of the wrong type or out of range). Unknown fields are ignored. */

/* POST /gateway/authorizations: {"amount": 1..10^15, "reference": 1..200 bytes}. */
int fakes_parse_authorize(const char *body, size_t len, fakes_authorize_req *out,
                          fakes_req_error *e);
/* POST /gateway/authorizations/{id}/capture: empty, or {"amount": 1..10^15} (optional). */
int fakes_parse_capture(const char *body, size_t len, fakes_capture_req *out, fakes_req_error *e);
/* A body that carries nothing (void, expire): empty, or any JSON object. */
int fakes_parse_empty(const char *body, size_t len, fakes_req_error *e);
/* POST /carrier/shipments: {"reference": 1..200 bytes, "items": 1..10^6}. */
int fakes_parse_shipment(const char *body, size_t len, fakes_shipment_req *out, fakes_req_error *e);
/* POST /mailer/messages: {"to": 1..320 bytes, "template": 1..100 bytes, "reference":
 * optional string up to 200 bytes, "data": optional object}. On success *out is a new
 * object holding exactly those fields ("reference" "" and "data" {} when absent), the
 * caller's to json_decref; it is what a replay's body is compared with. */
int fakes_parse_message(const char *body, size_t len, json_t **out, fakes_req_error *e);

/* Check an Idempotency-Key header value (NULL = absent). required: absence is an error.
 * Returns 0 when acceptable (absent and not required, or 1..255 visible ASCII bytes), -1
 * with *e filled in (field "Idempotency-Key"). */
int fakes_check_key(const char *key, int required, fakes_req_error *e);

#ifdef __cplusplus
}
#endif

#endif
