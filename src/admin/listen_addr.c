/* listen_addr.c - the "HOST:PORT" of `ferry serve --listen` into a bound, listening socket,
 * parsed by src/util/listen_addr.c as the /metrics listener's is. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admin/framework.h"
#include "util/error.h"
#include "util/listen_addr.h"
#include "util/printable.h"

int ferry__admin_listen(const char *addr, int backlog, int *family, int *port, ferry_error *err) {
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    if (ferry__listen_addr_parse("listen", addr, &ss, &sl, err)) return -1;
    char shown[FERRY__LISTEN_ADDR_MAX + 16];
    ferryx_printable(addr, shown, sizeof shown);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ferry__err(err, FERRY_EIO, "listen on %s: socket: %s", shown, strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, backlog) != 0) {
        int e = errno;
        close(fd);
        ferry__err(err, FERRY_EIO, "listen on %s: %s", shown, strerror(e));
        return -1;
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    *port = 0;
    if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0)
        *port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    *family = ss.ss_family;
    return fd;
}
