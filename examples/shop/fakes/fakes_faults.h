/* fakes_faults.h - the fault settings of shop-fakes and the decision "what goes wrong with
 * this request" (examples/shop/PROTOCOL.md, section Faults).
 *
 * Pure: no I/O, no clock, no locks. The settings come from `--fault OP:KEY=VALUE` flags and
 * from the body of POST /faults; the decision draws from a generator seeded by the caller, so
 * a run with the same seed and the same request order injects the same faults. The caller
 * (fakes_state) holds its mutex around every call that takes a non-const fakes_faults. */
#ifndef FAKES_FAULTS_H
#define FAKES_FAULTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The operations that have fault settings of their own. */
typedef enum fakes_op {
    FAKES_OP_GATEWAY_AUTHORIZE = 0,
    FAKES_OP_GATEWAY_GET,
    FAKES_OP_GATEWAY_CAPTURE,
    FAKES_OP_GATEWAY_VOID,
    FAKES_OP_CARRIER_LOOKUP,
    FAKES_OP_CARRIER_CREATE,
    FAKES_OP_MAILER_SEND,
    FAKES_OP_COUNT
} fakes_op;

/* How a 429's Retry-After is written. */
typedef enum fakes_retry_after {
    FAKES_RA_BOTH = 0, /* seconds, then a date, then seconds... (the default) */
    FAKES_RA_SECONDS,
    FAKES_RA_DATE,
} fakes_retry_after;

#define FAKES_SLOW_MS_DEFAULT 3000
#define FAKES_SLOW_MS_MAX 600000L /* 10 minutes */
#define FAKES_RETRY_AFTER_S_DEFAULT 1
#define FAKES_RETRY_AFTER_S_MAX 86400L
#define FAKES_NEXT_MAX 1000000000L

/* One operation's settings. Rates are probabilities in [0, 1]; *_next are counts used up
 * before any rate is drawn. */
typedef struct fakes_op_faults {
    double error_rate, slow_rate, throttle_rate, drop_rate;
    long error_next, slow_next, throttle_next, drop_next;
    long slow_ms;
    fakes_retry_after retry_after;
    long retry_after_s;
    unsigned long throttles; /* 429s answered so far: alternates seconds/date under "both" */
} fakes_op_faults;

typedef struct fakes_faults {
    fakes_op_faults op[FAKES_OP_COUNT];
    uint64_t rng; /* generator state (splitmix64) */
} fakes_faults;

/* What to do to one request. */
typedef struct fakes_fault_decision {
    int error;      /* 1: answer 503 {"error":"injected"}, do nothing */
    int throttle;   /* 1: answer 429 with Retry-After, do nothing */
    int retry_date; /* with throttle: 1 = Retry-After as an HTTP-date, 0 = as seconds */
    long retry_s;   /* with throttle: the delay in seconds */
    int slow;       /* 1: wait slow_ms, then do the operation (may come with drop) */
    long slow_ms;
    int drop; /* 1: do the operation, then close the connection without answering */
} fakes_fault_decision;

/* Reset f to "no faults" with the generator seeded by seed. Cannot fail. */
void fakes_faults_init(fakes_faults *f, uint64_t seed);

/* Clear every operation's settings (DELETE /faults); the generator keeps its state. */
void fakes_faults_clear(fakes_faults *f);

/* The operation named `name` ("gateway.capture"...). Returns its fakes_op, or -1 when the
 * name is unknown ("*" is not an operation: callers handle it). */
int fakes_op_from_name(const char *name);
/* The name of op ("gateway.capture"), "?" for values out of range. Static string. */
const char *fakes_op_name(int op);

/* Apply one flag "OP:KEY=VALUE" (OP an operation name or "*" for all of them), changing
 * only that key of that operation (other keys keep their values).
 * Returns 0; -1 with a message naming the problem in err[cap] (unknown operation or key,
 * value out of range or not a number, no ':' or '='); f is then unchanged. */
int fakes_faults_parse_flag(fakes_faults *f, const char *spec, char *err, size_t cap);

/* Apply the body of POST /faults: a JSON object whose keys are operation names or "*" and
 * whose values are objects of settings. "*" is applied first, then the named operations;
 * each key given replaces that operation's settings as a whole (keys left out get their
 * defaults). Integer keys take JSON integers, rates take numbers in [0, 1], retry_after
 * takes "seconds", "date" or "both".
 * Returns 0; -1 with a message in err[cap] when the text is not such an object; f is then
 * unchanged. When a key is at fault the message starts with it and ": " ("gateway.capture.
 * error_rate: must be a number from 0 to 1"); otherwise it starts with "malformed JSON" or
 * "the body".
 * Ownership: json is borrowed (len bytes, need not be NUL-terminated). */
int fakes_faults_apply_json(fakes_faults *f, const char *json, size_t len, char *err, size_t cap);

/* The settings in force as {"gateway.authorize": {"error_rate": 0, ...}, ...}, every
 * operation with every key. Returns a new reference, NULL on OOM. */
json_t *fakes_faults_to_json(const fakes_faults *f);

/* Decide what goes wrong with the next request of op, using up *_next counts first (in the
 * order error, throttle, then slow and drop together) and, when no count applied, drawing
 * the rates in the same order (error and throttle answer without doing anything, so they
 * exclude slow and drop; slow and drop may come together). Updates the counts and the
 * generator. Returns the decision (all zero: nothing goes wrong). */
fakes_fault_decision fakes_faults_decide(fakes_faults *f, fakes_op op);

/* The next number of the generator in [0, 1). Advances the state. */
double fakes_faults_draw(fakes_faults *f);

#ifdef __cplusplus
}
#endif

#endif
