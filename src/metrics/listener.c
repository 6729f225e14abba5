/* listener.c - the per-process /metrics endpoint: a libmicrohttpd daemon with its own thread
 * on a socket bound here (so a bind failure says why), answering GET / HEAD /metrics with
 * the registry's rendering, 404 for other paths and 405 for other methods. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "metrics/metrics_internal.h"
#include "util/error.h"
#include "util/listen_addr.h"
#include "util/printable.h"

#define LISTEN_CONNECTIONS_MAX 16
#define LISTEN_IDLE_TIMEOUT_S 10

struct ferry_metrics_listener {
    struct MHD_Daemon *daemon;
    ferry_metrics *registry;
    int port;
};

#define TEXT_TYPE "text/plain; charset=utf-8"

/* Queue r (destroyed here) as status with its Content-Type (and Allow). A header that cannot
 * be added (out of memory) gives a bare 500 instead, and when even that cannot be built the
 * connection is closed without an answer: never an answer with a wrong or missing type. */
static enum MHD_Result send_answer(struct MHD_Connection *c, unsigned status,
                                   struct MHD_Response *r, const char *type, const char *allow) {
    int ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_YES;
    if (allow) ok = ok && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES;
    if (!ok) {
        static const char failed[] = "the answer could not be built\n";
        MHD_destroy_response(r);
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        r = MHD_create_response_from_buffer(sizeof failed - 1, (void *)failed,
                                            MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, TEXT_TYPE) != MHD_YES) {
            MHD_destroy_response(r);
            return MHD_NO;
        }
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             const char *allow) {
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    return send_answer(c, status, r, TEXT_TYPE, allow);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    (void)version;
    (void)upload_data;
    struct ferry_metrics_listener *l = cls;
    /* a request body (none is expected) is read and dropped before the answer */
    static int first_call;
    if (!*req_cls) {
        *req_cls = &first_call;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0) return reply(c, MHD_HTTP_NOT_FOUND, "not found\n", NULL);
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n", "GET, HEAD");
    char *text;
    size_t len;
    if (ferry_metrics_render(l->registry, &text, &len, NULL) != 0)
        return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot render the metrics\n", NULL);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    return send_answer(c, MHD_HTTP_OK, r, FERRY_METRICS_CONTENT_TYPE, NULL);
}

int ferry_metrics_listen(ferry_metrics *m, const char *addr, ferry_metrics_listener **out,
                         ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "metrics listen: out is NULL");
    *out = NULL;
    if (!m) return ferry__err(err, FERRY_EINVAL, "metrics listen: registry is NULL");
    if (!addr) addr = FERRY_METRICS_LISTEN_DEFAULT;
    struct sockaddr_storage ss;
    socklen_t sl = 0;
    int rc = ferry__listen_addr_parse("metrics listen", addr, &ss, &sl, err);
    if (rc) return rc;
    char shown[FERRY__LISTEN_ADDR_MAX + 16];
    ferryx_printable(addr, shown, sizeof shown);

    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return ferry__err(err, FERRY_EIO, "metrics listen on %s: socket: %s", shown,
                          strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss.ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, LISTEN_CONNECTIONS_MAX) != 0) {
        int e = errno;
        close(fd);
        return ferry__err(err, FERRY_EIO, "metrics listen on %s: %s", shown, strerror(e));
    }
    struct sockaddr_storage bound;
    socklen_t bl = sizeof bound;
    int port = 0;
    if (getsockname(fd, (struct sockaddr *)&bound, &bl) == 0)
        port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port);

    struct ferry_metrics_listener *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        return ferry__err(err, FERRY_ENOMEM, "metrics listen: out of memory");
    }
    l->registry = m;
    l->port = port;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    /* libmicrohttpd's thread takes the signal mask of the thread that starts it: start it with
     * every signal blocked, so that a SIGTERM the program means to handle (on a thread of its
     * own, by sigwait, or by a handler on the main thread) never lands on it */
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    l->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, l, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)LISTEN_CONNECTIONS_MAX,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)LISTEN_IDLE_TIMEOUT_S,
                                 MHD_OPTION_END);
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!l->daemon) {
        /* not closed here: libmicrohttpd closes the socket it was given when it fails past
         * the options (mutexes, its thread), and a second close could hit a descriptor
         * another thread has opened since */
        free(l);
        return ferry__err(err, FERRY_EIO, "metrics listen on %s: the HTTP server did not start",
                          shown);
    }
    *out = l;
    return 0;
}

int ferry_metrics_listener_port(const ferry_metrics_listener *l) {
    return l ? l->port : 0;
}

void ferry_metrics_listener_stop(ferry_metrics_listener *l) {
    if (!l) return;
    MHD_stop_daemon(l->daemon); /* closes the listening socket too */
    free(l);
}
