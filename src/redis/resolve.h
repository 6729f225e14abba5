/* resolve.h - host name resolution bounded by a deadline.
 *
 * getaddrinfo() has no timeout: a dead DNS server holds the caller for the resolver's own
 * retries (tens of seconds), which would break the promise that connects fail within
 * their deadline. Numeric addresses are converted inline; names are resolved on a
 * short-lived detached thread while the caller waits until the deadline. On timeout the
 * caller leaves, and the thread frees everything itself when getaddrinfo returns. */
#ifndef FERRY_REDIS_RESOLVE_H
#define FERRY_REDIS_RESOLVE_H

#include <netdb.h>
#include <stdint.h>

#include "ferry/common.h"

/* Lookups left running by callers that timed out, at most. While that many have not
 * returned (DNS is not answering), a name lookup fails at once with FERRY_EIO instead of
 * leaving yet another thread behind. */
#define FERRY_RESOLVE_ABANDONED_MAX 32

/* Resolve host:port for a TCP stream socket before deadline_ms (ferry__mono_ms clock).
 * `what` names the endpoint in error messages ("redis host:port"). On success *out is a
 * list the caller frees with freeaddrinfo(). Errors: FERRY_EIO (unknown name, resolver
 * failure, thread start failure, too many abandoned lookups), FERRY_ETIMEDOUT,
 * FERRY_ENOMEM. Thread-safe. */
int ferry__resolve(const char *host, int port, int64_t deadline_ms, const char *what,
                   struct addrinfo **out, ferry_error *err);

/* Tests only: resolve names with `fn` instead of getaddrinfo (NULL restores it). Numeric
 * addresses are not affected. Thread-safe; applies to lookups started afterwards. */
typedef int (*ferry__gai_fn)(const char *node, const char *service, const struct addrinfo *hints,
                             struct addrinfo **res);
void ferry__resolve_set_gai(ferry__gai_fn fn);

#endif
