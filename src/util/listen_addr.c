/* listen_addr.c - "HOST:PORT" into a socket address for the listeners (the /metrics
 * listener, `ferry serve`): an IPv4 literal, "[IPv6]" or "localhost", PORT 0..65535; no
 * name is ever resolved, so an address means one socket. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/listen_addr.h"
#include "util/printable.h"

int ferry__listen_addr_parse(const char *what, const char *addr, struct sockaddr_storage *ss,
                             socklen_t *sl, ferry_error *err) {
    char shown[FERRY__LISTEN_ADDR_MAX + 16];
    ferryx_printable(addr, shown, sizeof shown);
    size_t n = strlen(addr);
    if (n == 0 || n > FERRY__LISTEN_ADDR_MAX)
        return ferry__err(err, FERRY_EINVAL, "%s: address \"%s\" is not HOST:PORT", what, shown);
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return ferry__err(err, FERRY_EINVAL, "%s: address \"%s\" has no port (HOST:PORT)", what,
                          shown);
    char host[FERRY__LISTEN_ADDR_MAX + 1];
    size_t hn = (size_t)(colon - addr);
    memcpy(host, addr, hn);
    host[hn] = '\0';
    const char *p = colon + 1;
    long port = 0;
    if (!*p || strlen(p) > 5)
        return ferry__err(err, FERRY_EINVAL, "%s: port of \"%s\" is not 0..65535", what, shown);
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return ferry__err(err, FERRY_EINVAL, "%s: port of \"%s\" is not 0..65535", what, shown);
        port = port * 10 + (*p - '0');
    }
    if (port > 65535)
        return ferry__err(err, FERRY_EINVAL, "%s: port of \"%s\" is not 0..65535", what, shown);
    memset(ss, 0, sizeof *ss);
    if (strcmp(host, "localhost") == 0) snprintf(host, sizeof host, "127.0.0.1");
    if (hn >= 2 && host[0] == '[' && host[hn - 1] == ']') {
        host[hn - 1] = '\0';
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
            return ferry__err(err, FERRY_EINVAL, "%s: \"%s\" is not an IPv6 literal in brackets",
                              what, shown);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *sl = sizeof *a6;
        return 0;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
        return ferry__err(err, FERRY_EINVAL,
                          "%s: host of \"%s\" is not an IPv4 literal, [IPv6] or localhost (no "
                          "name is resolved)",
                          what, shown);
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    *sl = sizeof *a4;
    return 0;
}
