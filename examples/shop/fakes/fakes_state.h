/* fakes_state.h - what the three fake providers of shop-fakes hold: the payment gateway's
 * authorizations and captures, the carrier's shipments, the mailer's messages, the
 * idempotency keys each honours, the fault settings in force and the counts of what was
 * injected. In memory for the process's life, behind one mutex.
 *
 * Every operation returns the HTTP status to answer and a JSON body (a new reference the
 * caller json_decrefs; never NULL unless the status is 500) as examples/shop/PROTOCOL.md
 * describes; no HTTP happens here. Threads: every function may be called from any thread
 * at once (they lock); none blocks beyond the mutex. */
#ifndef FAKES_STATE_H
#define FAKES_STATE_H

#include <jansson.h>
#include <stddef.h>

#include "fakes_faults.h"
#include "fakes_requests.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FAKES_LEDGER_MAX_DEFAULT 1000000 /* entries per list (and per idempotency-key space) */

typedef struct fakes_state fakes_state;

/* A new, empty state with the given fault settings (copied) and at most max_entries
 * entries per ledger list and per key space (beyond: 507). Returns NULL on OOM.
 * Free with fakes_state_free. */
fakes_state *fakes_state_new(const fakes_faults *faults, size_t max_entries);
/* Free everything. NULL accepted. No other call may be running. */
void fakes_state_free(fakes_state *s);

/* ---- faults -------------------------------------------------------------------------- */

/* Decide the fault for one request of op (fakes_faults_decide) and count it in the
 * ledger's "faults" (errors, throttled, slow, dropped). */
fakes_fault_decision fakes_state_fault(fakes_state *s, fakes_op op);
/* POST /faults: apply body[len] (fakes_faults_apply_json). Returns 200 and the settings in
 * force, or 400 {"error"} naming the key (settings unchanged). */
int fakes_state_faults_post(fakes_state *s, const char *body, size_t len, json_t **out);
/* GET /faults: 200 and the settings in force. */
int fakes_state_faults_get(fakes_state *s, json_t **out);
/* DELETE /faults: no faults any more; 200 and the (empty) settings. */
int fakes_state_faults_delete(fakes_state *s, json_t **out);

/* ---- ledger -------------------------------------------------------------------------- */

/* GET /ledger as JSON text (malloc'd, the caller frees), NULL on OOM. */
char *fakes_state_ledger_text(fakes_state *s);

/* ---- payment gateway ----------------------------------------------------------------- */

/* key: the Idempotency-Key (NULL = none), already checked with fakes_check_key. */
int fakes_gateway_authorize(fakes_state *s, const fakes_authorize_req *r, const char *key,
                            json_t **out);
int fakes_gateway_get(fakes_state *s, const char *id, json_t **out);
/* key is required (not NULL). */
int fakes_gateway_capture(fakes_state *s, const char *id, const fakes_capture_req *r,
                          const char *key, json_t **out);
int fakes_gateway_void(fakes_state *s, const char *id, const char *key, json_t **out);
int fakes_gateway_expire(fakes_state *s, const char *id, json_t **out);

/* ---- carrier ------------------------------------------------------------------------- */

int fakes_carrier_lookup(fakes_state *s, const char *reference, json_t **out);
int fakes_carrier_create(fakes_state *s, const fakes_shipment_req *r, json_t **out);

/* ---- mailer -------------------------------------------------------------------------- */

/* message: what fakes_parse_message made (borrowed; a copy is kept). key required. */
int fakes_mailer_send(fakes_state *s, const json_t *message, const char *key, json_t **out);

#ifdef __cplusplus
}
#endif

#endif
