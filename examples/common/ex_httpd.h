/* ex_httpd.h - a small HTTP/1.1 JSON server for the examples (libmicrohttpd underneath).
 *
 * shop-api, shop-fakes and taskflow-api answer through it. One thread per connection, so a
 * handler may block (a database transaction, a provider call, an injected slow answer)
 * without holding up other clients. Bodies are bounded; a request over the bound gets 413
 * before the handler sees it. */
#ifndef EX_HTTPD_H
#define EX_HTTPD_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EX_HTTPD_HEADERS_MAX 4 /* extra response headers per answer */
#define EX_HTTPD_HEADER_VALUE_MAX 256
#define EX_HTTPD_CONNECTIONS_MAX 4096 /* connections at once; more are refused */
#define EX_HTTPD_IDLE_S 30            /* a connection silent this long is closed */

typedef struct ex_httpd ex_httpd;

/* A request as the handler sees it. Valid only during the handler call. A HEAD request
 * reaches the handler as GET (the answer goes out without its body). The path is
 * percent-decoded except for %00 and %2F, which stay as written. */
typedef struct ex_httpd_req {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* the URL path without the query, e.g. "/orders/1234" (decoded) */
    const char *body;   /* the body, NUL-terminated ("" when none) */
    size_t body_len;
    void *internal; /* for ex_httpd_header / ex_httpd_query */
} ex_httpd_req;

/* What the handler fills in. Starts as status 500, no body. */
typedef struct ex_httpd_resp {
    int status;
    char *body;               /* malloc'd; taken over (freed) by the server; NULL = empty */
    const char *content_type; /* NULL = "application/json" */
    int nheaders;
    char header_name[EX_HTTPD_HEADERS_MAX][64];
    char header_value[EX_HTTPD_HEADERS_MAX][EX_HTTPD_HEADER_VALUE_MAX];
    int drop; /* 1 = close the connection without answering (fault injection) */
} ex_httpd_resp;

/* The request handler. Threads: called on the connection's own thread; several run at once
 * on different connections. Must fill in resp; may block. */
typedef void (*ex_httpd_handler)(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata);

/* A request header by name (case-insensitive), NULL when absent. Valid during the call. */
const char *ex_httpd_header(const ex_httpd_req *req, const char *name);
/* A query argument by name (decoded), NULL when absent. Valid during the call. */
const char *ex_httpd_query(const ex_httpd_req *req, const char *name);

/* Set resp to `status` with `json` as the body (JSON text, copied). Returns 0, -1 on OOM
 * (resp is then a 500 without a body). */
int ex_httpd_reply(ex_httpd_resp *resp, int status, const char *json);
/* Set resp to `status` with {"error": MESSAGE} and, when field is not NULL, "field": FIELD.
 * The message is formatted printf-style; both are JSON-escaped. */
int ex_httpd_error(ex_httpd_resp *resp, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Add a response header (name and value copied, cut to the fields' sizes). Returns 0, -1
 * when EX_HTTPD_HEADERS_MAX are already set. */
int ex_httpd_add_header(ex_httpd_resp *resp, const char *name, const char *value);

/* Start listening on listen ("HOST:PORT"; HOST an IPv4 address, PORT 0 = any free port)
 * with handler h. Requests whose body is over max_body bytes get 413 {"error":...};
 * unparsable or oversized headers get MHD's own 4xx.
 * Returns: 0 and the server in *out; -1 with a message in err[errcap] (bad address, port
 *   taken, ...). Threads: the server's threads call h; any thread may call ex_httpd_stop. */
int ex_httpd_start(const char *listen, size_t max_body, ex_httpd_handler h, void *userdata,
                   ex_httpd **out, char *err, size_t errcap);

/* The port the server is bound to (the one chosen when listen asked for port 0). */
int ex_httpd_port(const ex_httpd *s);

/* Stop accepting (the listening socket is closed at once), let the requests in progress
 * finish and their answers go out (waiting up to 30 s), then close what is left (idle
 * keep-alive connections) and free.
 * Returns: 0; -1 when requests were still running after 30 s: they are abandoned to the
 *   process's exit (the server is then not freed), and a log line says how many.
 * NULL accepted (returns 0). Blocks: up to 30 s plus MHD's own shutdown. Threads: not from a
 * handler. */
int ex_httpd_stop(ex_httpd *s);

#ifdef __cplusplus
}
#endif

#endif
