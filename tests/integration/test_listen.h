/* test_listen.h - a listening TCP socket on the loopback at a free port, for the tests that
 * play a server themselves (silent peers, fake Redis replies, TLS peers). Header-only. */
#ifndef FERRY_TEST_LISTEN_H
#define FERRY_TEST_LISTEN_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* A TCP listener on 127.0.0.1 (or ::1) with the given backlog; *port receives the port.
 * Returns -1 when the address family is unavailable. */
static inline int listen_local(int family, int backlog, int *port) {
    *port = 0;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0) {
        close(fd);
        return -1;
    }
    len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

#endif
