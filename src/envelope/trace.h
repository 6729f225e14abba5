/* trace.h - checking the trace id an event carries: a W3C traceparent (Trace Context,
 * level 1) or an opaque id. Pure, thread-safe. */
#ifndef FERRY_ENVELOPE_TRACE_H
#define FERRY_ENVELOPE_TRACE_H

#include <stddef.h>

#include "ferry/common.h"

/* The parts of a valid traceparent (NUL-terminated lower-case hex). */
typedef struct ferry__traceparent {
    char version[3];
    char trace_id[33];
    char parent_id[17];
    char flags[3];
} ferry__traceparent;

/* Parse s[0..len) as a traceparent: "vv-<32 hex>-<16 hex>-<2 hex>", lower-case hex,
 * version not "ff", trace and parent ids not all zeros; version 00 must be exactly 55
 * characters, a later version may continue after a '-' (forward compatibility). Returns
 * 0 (with *out filled when non-NULL) or FERRY_EINVAL with the reason in *err. */
int ferry__traceparent_parse(const char *s, size_t len, ferry__traceparent *out, ferry_error *err);

/* The one trace id rule, shared by the outbox and the worker's job log: s[0..n) is 1..
 * FERRY_OUTBOX_TRACE_ID_MAX bytes of printable ASCII (0x21..0x7e; '"', '\\' and '=' too).
 * Every id ferry__trace_id_check accepts passes (a traceparent is one such id), and the
 * job log shows every id that passes (ferry_job_log_format quotes and escapes it when it
 * holds '"', '\\' or '='), so a trace id appended to the outbox always reaches the job's
 * log line. 1 when it passes, else 0. Pure, thread-safe. */
int ferry__trace_id_valid(const char *s, size_t n);

/* Check an event's trace id: when it starts like a traceparent (two hex digits and '-')
 * it must parse as one; otherwise it must pass ferry__trace_id_valid. NULL is valid (no trace id).
 * Returns 0 or FERRY_EINVAL naming the problem. */
int ferry__trace_id_check(const char *s, ferry_error *err);

#endif
