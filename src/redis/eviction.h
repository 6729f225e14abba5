/* eviction.h - what the server will do when it reaches maxmemory. A queue needs
 * `noeviction`: under any other policy Redis may delete job hashes, locks or the wait list
 * to make room, silently losing jobs. The worker and the relay read it at start and warn. */
#ifndef FERRY_REDIS_EVICTION_H
#define FERRY_REDIS_EVICTION_H

#include <stddef.h>

#include "redis/conn.h"

/* Read the server's maxmemory policy (INFO memory's maxmemory_policy) into policy[cap].
 * Returns 0 with the policy set; 1 when the server does not say (INFO refused, e.g. by an
 * ACL without +info, or no such field: policy is ""); a FERRY_E* code for a transport
 * failure (err set). Blocking: one round trip within the connection's command timeout. */
int ferry__redis_eviction_policy(ferry_conn *c, char *policy, size_t cap, ferry_error *err);

/* The warning to log when policy is not "noeviction", written into msg[cap]; returns 1 when
 * there is one, 0 when the policy is fine or unknown ("" policy). Pure. */
int ferry__redis_eviction_warning(const char *policy, char *msg, size_t cap);

#endif
