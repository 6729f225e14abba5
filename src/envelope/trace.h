/* trace.h - checking the trace id an event carries: a W3C traceparent (Trace Context,
 * level 1) or an opaque id. Pure, thread-safe. */
#ifndef FERRY_OUTBOX_TRACE_H
#define FERRY_OUTBOX_TRACE_H

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

/* Check an event's trace id: when it starts like a traceparent (two hex digits and '-')
 * it must parse as one; otherwise it is an opaque id of 1..FERRY_OUTBOX_TRACE_ID_MAX
 * printable ASCII characters (0x21..0x7e). NULL is valid (no trace id). Returns 0 or
 * FERRY_EINVAL naming the problem. */
int ferry__trace_id_check(const char *s, ferry_error *err);

#endif
