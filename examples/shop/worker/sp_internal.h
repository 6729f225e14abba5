/* sp_internal.h - what the shop's processors (sp_*.c) share: pooled connections with the
 * outcome to return when none is to be had, outcomes with formatted reasons, provider calls
 * and their failures mapped onto outcomes, duplicates recorded after the fact. Not
 * installed; shop_processors.h is the library's interface. */
#ifndef SP_INTERNAL_H
#define SP_INTERNAL_H

#include "ex_http.h"
#include "shop_messages.h"
#include "shop_processors.h"

#include <libpq-fe.h>

#define SP_URL_MAX 1024
#define SP_REASON_MAX 1024

/* A pooled connection for the job, or NULL with the job's failure set and *out the outcome
 * to return (FERRY_FAILED: no connection now is a transient state). */
PGconn *sp_db(const shop_ctx *c, ferry_job *job, ferry_outcome *out);
/* Give the connection back (a transaction left open is rolled back). NULL accepted. */
void sp_db_put(const shop_ctx *c, PGconn *db);

/* Set the job's failure reason (printf-style) and return FERRY_FAILED_PERMANENT /
 * FERRY_FAILED. */
ferry_outcome sp_permanent(ferry_job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
ferry_outcome sp_transient(ferry_job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* FERRY_FAILED_PERMANENT: `unknown job name "X" on queue Q`. */
ferry_outcome sp_unknown_name(ferry_job *job);

/* The id a duplicate is recorded under: the job's event id, else its job id. */
const char *sp_message_id(const ferry_job *job);
/* Record an absorbed duplicate in shop_duplicates on a connection of its own (best effort:
 * a failure is logged, never returned). Call after the job's own transaction ended. */
void sp_duplicate(const shop_ctx *c, const ferry_job *job, const char *consumer, const char *how);

/* Run a statement with text parameters; the result (TUPLES_OK or COMMAND_OK: caller
 * PQclears), or NULL with "SQLSTATE: message" in err[cap]. */
PGresult *sp_query(PGconn *db, const char *sql, int n, const char *const *params, char *err,
                   size_t cap);
/* 1 when orders has order_id, 0 when not, -1 on a database failure (message in err). */
int sp_order_exists(PGconn *db, const char *order_id, char *err, size_t cap);

/* base + the formatted rest into out[SP_URL_MAX]. Returns 0, -1 when too long. */
int sp_url(char *out, const char *base, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One provider call (JSON body or NULL, idempotency key or NULL) with the context's
 * timeout and the job's trace id as traceparent when it is one. Returns 0 when a response
 * came (any status), -1 when none did. res is always to be freed (ex_http_response_free). */
int sp_call(const shop_ctx *c, const ferry_job *job, const char *method, const char *url,
            const char *body, const char *key, ex_http_response *res);
/* The outcome of a provider call that did not succeed, by ferry_http_classify (no response
 * = transient; 429 = throttled; 5xx/408 = retry later with Retry-After or transient; other
 * 4xx = permanent), with the reason "WHAT: HTTP 503 (injected)" or "WHAT: timeout (...)". */
ferry_outcome sp_call_failed(ferry_job *job, const char *what, const ex_http_response *res);
/* 1 when a response came with a 2xx status. */
int sp_call_ok(const ex_http_response *res);

/* Set the return value {"key": "value"} (value a provider id or a short word). */
void sp_return_str(ferry_job *job, const char *key, const char *value);
/* Set the return value {"key": n}. */
void sp_return_int(ferry_job *job, const char *key, long long n);

#endif
