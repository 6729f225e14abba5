/* listen_addr.h - the one parser of a listener's "HOST:PORT" (src/metrics/listener.c and
 * `ferry serve`). Pure: no I/O, no name lookup. */
#ifndef FERRY_UTIL_LISTEN_ADDR_H
#define FERRY_UTIL_LISTEN_ADDR_H

#include <sys/socket.h>

#include "ferry/common.h"

/* Longest address text accepted. */
#define FERRY__LISTEN_ADDR_MAX 80

/* Parse addr ("HOST:PORT": an IPv4 literal, "[IPv6 literal]" or "localhost"; PORT
 * 0..65535) into *ss / *sl. `what` starts every message ("metrics listen", "listen").
 * Returns: 0. Errors: FERRY_EINVAL naming the part that is wrong (the address shown
 *   escaped). Blocks: no. Threads: any. */
int ferry__listen_addr_parse(const char *what, const char *addr, struct sockaddr_storage *ss,
                             socklen_t *sl, ferry_error *err);

#endif
