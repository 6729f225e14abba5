/* ex_httpd.c - the examples' HTTP/1.1 JSON server on libmicrohttpd: a thread per
 * connection (handlers may block), bodies collected up to a bound (413 beyond it, before
 * the handler runs), answers built from ex_httpd_resp, a "drop" answer that closes the
 * connection without a response (the fakes' "the effect happened, the answer was lost"), and
 * a stop that lets the requests in progress finish first. */
#include "ex_httpd.h"

#include "ex_util.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ex_httpd {
    pthread_mutex_t mu;
    pthread_cond_t idle;
    int inflight; /* requests between their first callback and their completion */
    struct MHD_Daemon *d;
    size_t max_body;
    ex_httpd_handler h;
    void *ud;
    int port;
};

/* One request's collected body (MHD's per-request context). */
typedef struct req_ctx {
    char *buf;
    size_t len, cap;
    int too_big, oom;
} req_ctx;

const char *ex_httpd_header(const ex_httpd_req *req, const char *name) {
    return MHD_lookup_connection_value((struct MHD_Connection *)req->internal, MHD_HEADER_KIND,
                                       name);
}

const char *ex_httpd_query(const ex_httpd_req *req, const char *name) {
    return MHD_lookup_connection_value((struct MHD_Connection *)req->internal,
                                       MHD_GET_ARGUMENT_KIND, name);
}

int ex_httpd_reply(ex_httpd_resp *resp, int status, const char *json) {
    free(resp->body);
    resp->body = json ? strdup(json) : NULL;
    if (json && !resp->body) {
        resp->status = 500;
        return -1;
    }
    resp->status = status;
    return 0;
}

/* JSON string escaping into out (always terminated, cut to fit). */
static void json_escape(const char *s, char *out, size_t cap) {
    size_t o = 0;
    for (; s && *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
        } else {
            out[o++] = (char)c;
        }
    }
    out[o] = '\0';
}

int ex_httpd_error(ex_httpd_resp *resp, int status, const char *field, const char *fmt, ...) {
    char msg[1024], emsg[2100], efield[600], body[2900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_escape(msg, emsg, sizeof emsg);
    if (field) {
        json_escape(field, efield, sizeof efield);
        snprintf(body, sizeof body, "{\"error\":\"%s\",\"field\":\"%s\"}", emsg, efield);
    } else {
        snprintf(body, sizeof body, "{\"error\":\"%s\"}", emsg);
    }
    return ex_httpd_reply(resp, status, body);
}

int ex_httpd_add_header(ex_httpd_resp *resp, const char *name, const char *value) {
    if (resp->nheaders >= EX_HTTPD_HEADERS_MAX) return -1;
    snprintf(resp->header_name[resp->nheaders], sizeof resp->header_name[0], "%s", name);
    snprintf(resp->header_value[resp->nheaders], sizeof resp->header_value[0], "%s", value);
    resp->nheaders++;
    return 0;
}

static enum MHD_Result send_resp(struct MHD_Connection *conn, ex_httpd_resp *r) {
    size_t len = r->body ? strlen(r->body) : 0;
    struct MHD_Response *m =
        MHD_create_response_from_buffer(len, r->body ? r->body : (void *)"",
                                        r->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!m) {
        free(r->body);
        r->body = NULL;
        return MHD_NO;
    }
    r->body = NULL; /* MHD frees it with the response */
    MHD_add_response_header(m, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->content_type ? r->content_type : "application/json");
    for (int i = 0; i < r->nheaders; i++)
        MHD_add_response_header(m, r->header_name[i], r->header_value[i]);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)r->status, m);
    MHD_destroy_response(m);
    return rc;
}

static enum MHD_Result too_big(struct MHD_Connection *conn, size_t max) {
    ex_httpd_resp r = {.status = 500};
    ex_httpd_error(&r, 413, NULL, "request body over %zu bytes", max);
    return send_resp(conn, &r);
}

/* Percent-decoding of the path and the query arguments, except what would change their
 * meaning: an encoded NUL would cut the path short ("/healthz%00x" would be "/healthz") and
 * an encoded '/' would make a new path segment ("/orders/ID%2fcancel"), so both stay as
 * written (and match no route). Decodes in place; returns the new length. */
static size_t unescape(void *cls, struct MHD_Connection *conn, char *s) {
    (void)cls;
    (void)conn;
    static const char hex[] = "0123456789abcdef0123456789ABCDEF";
    char *out = s;
    for (const char *p = s; *p; p++) {
        const char *h1 = p[0] == '%' && p[1] ? strchr(hex, p[1]) : NULL;
        const char *h2 = h1 && p[2] ? strchr(hex, p[2]) : NULL;
        if (h1 && h2) {
            int v = (int)((h1 - hex) % 16) * 16 + (int)((h2 - hex) % 16);
            if (v != 0 && v != '/') {
                *out++ = (char)v;
                p += 2;
                continue;
            }
        }
        *out++ = *p;
    }
    *out = '\0';
    return (size_t)(out - s);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)version;
    ex_httpd *s = cls;
    req_ctx *rc = *con_cls;
    if (!rc) { /* headers only: set up, refuse a declared oversize body at once */
        rc = calloc(1, sizeof *rc);
        if (!rc) return MHD_NO;
        *con_cls = rc;
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->max_body) {
            rc->too_big = 1;
            return too_big(conn, s->max_body);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (rc->too_big || rc->oom) return MHD_YES;
        if (rc->len + n > s->max_body) {
            rc->too_big = 1;
            return MHD_YES;
        }
        if (rc->len + n + 1 > rc->cap) {
            size_t cap = rc->cap ? rc->cap : 1024;
            while (cap < rc->len + n + 1)
                cap *= 2;
            char *b = realloc(rc->buf, cap);
            if (!b) {
                rc->oom = 1;
                return MHD_YES;
            }
            rc->buf = b;
            rc->cap = cap;
        }
        memcpy(rc->buf + rc->len, upload_data, n);
        rc->len += n;
        rc->buf[rc->len] = '\0';
        return MHD_YES;
    }
    if (rc->too_big) return too_big(conn, s->max_body);
    ex_httpd_resp r = {.status = 500};
    if (rc->oom) {
        ex_httpd_error(&r, 503, NULL, "out of memory");
        return send_resp(conn, &r);
    }
    /* HEAD is GET without the body (MHD leaves the body out of the answer) */
    ex_httpd_req req = {.method = strcmp(method, "HEAD") == 0 ? "GET" : method,
                        .path = url,
                        .body = rc->buf ? rc->buf : "",
                        .body_len = rc->len,
                        .internal = conn};
    s->h(&req, &r, s->ud);
    if (r.drop) {
        free(r.body);
        return MHD_NO; /* closes the connection without an answer */
    }
    return send_resp(conn, &r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    ex_httpd *s = cls;
    (void)conn;
    (void)toe;
    req_ctx *rc = *con_cls;
    if (rc) {
        free(rc->buf);
        free(rc);
        *con_cls = NULL;
        pthread_mutex_lock(&s->mu);
        if (--s->inflight == 0) pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->mu);
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* what MHD says when a handler answers nothing: only the fakes' "drop" does that */
    if (strstr(msg, "Application reported internal error")) return;
    /* a flood (connection limit reached) says the same thing per connection: once a second */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[512];
    static time_t last_at;
    static long repeats;
    time_t now = time(NULL);
    pthread_mutex_lock(&mu);
    if (strcmp(msg, last) == 0 && now == last_at) {
        repeats++;
        pthread_mutex_unlock(&mu);
        return;
    }
    long skipped = repeats;
    repeats = 0;
    snprintf(last, sizeof last, "%s", msg);
    last_at = now;
    pthread_mutex_unlock(&mu);
    if (skipped) ex_log("http server: (the previous message %ld more times)", skipped);
    ex_log("http server: %s", msg);
}

int ex_httpd_start(const char *listen, size_t max_body, ex_httpd_handler h, void *userdata,
                   ex_httpd **out, char *err, size_t errcap) {
    *out = NULL;
    char host[64];
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon || (size_t)(colon - listen) >= sizeof host || colon == listen) {
        snprintf(err, errcap, "listen address '%s': expected HOST:PORT (e.g. 127.0.0.1:8080)",
                 listen ? listen : "");
        return -1;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = '\0';
    char *end = NULL;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || port < 0 || port > 65535) {
        snprintf(err, errcap, "listen address '%s': the port must be a number from 0 to 65535",
                 listen);
        return -1;
    }
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
        snprintf(err, errcap, "listen address '%s': '%s' is not an IPv4 address", listen, host);
        return -1;
    }
    ex_httpd *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    s->max_body = max_body;
    s->h = h;
    s->ud = userdata;
    s->d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG |
            MHD_USE_ITC,
        (uint16_t)port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
        s, MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)EX_HTTPD_IDLE_S, MHD_OPTION_CONNECTION_LIMIT, (unsigned)EX_HTTPD_CONNECTIONS_MAX,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)(512u << 10), MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, errcap, "cannot listen on %s: %s", listen,
                 errno ? strerror(errno) : "the HTTP server did not start");
        free(s);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? (int)info->port : (int)port;
    *out = s;
    return 0;
}

int ex_httpd_port(const ex_httpd *s) {
    return s ? s->port : 0;
}

int ex_httpd_stop(ex_httpd *s) {
    if (!s) return 0;
    /* stop accepting, let the requests in progress finish and their answers go out (up to
     * 30 s), then close what is left (idle keep-alive connections) */
    MHD_socket fd = MHD_quiesce_daemon(s->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&s->mu);
    while (s->inflight > 0 && pthread_cond_timedwait(&s->idle, &s->mu, &until) == 0) {
    }
    int left = s->inflight;
    pthread_mutex_unlock(&s->mu);
    if (left > 0) {
        /* MHD_stop_daemon would wait for those handlers, perhaps for ever (a database that
         * does not answer): leave them to the process's exit */
        ex_log("http server: %d request(s) still running after 30 s: abandoned", left);
        return -1;
    }
    MHD_stop_daemon(s->d);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return 0;
}
