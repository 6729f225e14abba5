/* routes.h - what the relay needs of a parsed routes table beyond the public accessors. */
#ifndef FERRY_OUTBOX_ROUTES_H
#define FERRY_OUTBOX_ROUTES_H

#include "ferry/outbox.h"

/* Index of `topic` (as for ferry_routes_topic), or -1 when it has no route. O(log n);
 * thread-safe on an immutable table. */
long ferry__routes_find(const ferry_routes *r, const char *topic);

/* Deep copy of a parsed table (NULL when out of memory). Free with ferry_routes_free. */
ferry_routes *ferry__routes_clone(const ferry_routes *r);

/* Check an event topic: 1..FERRY_OUTBOX_TOPIC_MAX bytes of UTF-8 without blanks, control
 * characters or '#'. Returns 0 or FERRY_EINVAL. Pure. */
int ferry__topic_check(const char *topic, ferry_error *err);

#endif
