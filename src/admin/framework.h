/* framework.h - what the files of `ferry serve`'s HTTP framework share among themselves
 * (server.c, request.c, auth.c, audit.c, health.c, resources.c, listen_addr.c): the server
 * handle's layout, the framework's view of one request, and the helpers each file offers
 * the others. The endpoint files (api_*.c) use admin_internal.h only. */
#ifndef FERRY_ADMIN_FRAMEWORK_H
#define FERRY_ADMIN_FRAMEWORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "admin/admin_internal.h"
#include "ferry/admin.h"
#include "pg/pg.h"

struct MHD_Connection;
struct MHD_Daemon;

#define ADMIN_QUERY_PARAMS_MAX 32  /* query parameters of one request */
#define ADMIN_QUERY_VALUE_MAX 4096 /* bytes of one decoded query key or value */
#define ADMIN_PATH_SEGMENTS_MAX 16 /* segments of a path */
#define ADMIN_QUEUE_CACHE_MAX 32   /* idle queue handles kept */
#define ADMIN_QUEUE_IDLE_MS 60000  /* an idle queue handle older than this is closed */
#define ADMIN_PG_POOL_MAX 16       /* PostgreSQL connections open at once */
#define ADMIN_PG_IDLE_MAX 8        /* ... of which kept idle */
#define ADMIN_REQUEST_ID_MAX 64    /* bytes of a request id (ours or the client's) */
#define ADMIN_REMOTE_MAX 64        /* "ADDR:PORT" text */
/* a chunked body past FERRY__ADMIN_BODY_MAX: bytes read and dropped before the 413, past
 * which the connection is closed without an answer */
#define ADMIN_BODY_DRAIN_MAX (1024 * 1024)

/* The token set's layout (auth.c builds it; server.c copies it). */
typedef struct admin_token {
    char name[FERRY_ADMIN_TOKEN_NAME_MAX + 1];
    int scopes;
    unsigned char digest[32]; /* SHA-256 of the secret */
} admin_token;

struct ferry_admin_tokens {
    size_t n;
    admin_token *items;
};

typedef struct admin_cached_queue {
    char *name;
    ferry_queue *q;
    int64_t idle_since_ms; /* monotonic */
} admin_cached_queue;

struct ferry_admin_server {
    /* read-only after start */
    ferry__admin_config cfg;
    ferry_redis_options redis;
    char *redis_strings[6]; /* the copied strings of `redis`, freed at stop */
    char *prefix;
    char *database_url; /* NULL: none */
    char *schema;
    char qschema[FERRY__QSCHEMA_MAX];
    int db_connect_ms, db_statement_ms;
    ferry_admin_tokens *tokens; /* NULL: no token file */
    int require_read_token;
    double slo_s;
    int ready_ms, stop_ms;
    ferry_admin_log_fn log;
    void *log_userdata;
    ferry_metrics *metrics;
    int own_metrics;
    int tls;
    int port;
    struct MHD_Daemon *daemon;
    int listen_fd;

    /* /metrics: one scrape at a time */
    pthread_mutex_t scrape_mu;
    ferry__admin_gauges *gauges;

    /* requests in progress, for the graceful stop */
    pthread_mutex_t mu;
    pthread_cond_t idle_cv;
    int inflight; /* [mu] */
    atomic_uint_fast64_t next_request;

    /* resources.c: idle queue handles and PostgreSQL connections [res_mu] */
    pthread_mutex_t res_mu;
    pthread_cond_t res_cv;
    admin_cached_queue queues[ADMIN_QUEUE_CACHE_MAX];
    size_t nqueues;
    ferry__pgc pg_idle[ADMIN_PG_IDLE_MAX];
    size_t npg_idle;
    int pg_open; /* connections open, idle or borrowed */
};

/* The framework's view of one request: the handler's ferry__admin_req first. */
typedef struct admin_request {
    ferry__admin_req r;
    ferry_admin_server *srv;
    int64_t t0_us; /* monotonic, microseconds */
    char method[8];
    char *path; /* copy of the raw path */
    char *param_store[FERRY__ADMIN_PATH_PARAMS_MAX];
    const ferry__admin_route *route; /* matched, or NULL */
    /* the body as received (NUL-terminated), bounded by FERRY__ADMIN_BODY_MAX */
    char *body;
    size_t body_len;
    int has_body;   /* Content-Length > 0 or chunked */
    int too_big;    /* a body without Content-Length went past the bound */
    size_t dropped; /* bytes of it read and dropped since */
    int done;       /* an answer was queued */
    int close_conn; /* the framing is ambiguous: answer with Connection: close */
    int audited;    /* route of scope ACT / REDRIVE: audit it */
    size_t nquery;
    char *query_keys[ADMIN_QUERY_PARAMS_MAX];
    char *query_values[ADMIN_QUERY_PARAMS_MAX];
    char request_id[ADMIN_REQUEST_ID_MAX + 1];
    char actor[FERRY_ADMIN_TOKEN_NAME_MAX + 1];
    char trace_id[33];
    char remote[ADMIN_REMOTE_MAX];
    char path_shown[512]; /* printable, for logs */
    /* a non-JSON answer (/metrics): sent instead of the handler's json when set */
    char *text_body;
    size_t text_len;
    const char *text_type;
} admin_request;

/* ---- listen_addr.c ---- */

/* A bound, listening socket (close-on-exec) for addr; *port = the bound port. Returns the
 * descriptor, or -1 with FERRY_EINVAL / FERRY_EIO in *err. */
int ferry__admin_listen(const char *addr, int backlog, int *family, int *port, ferry_error *err);

/* ---- request.c ---- */

/* Split the raw path into percent-decoded segments (out[i] malloc'd, caller frees each).
 * Returns the count, or -1 with a message (400) in msg. */
int ferry__admin_split_path(const char *path, char **out, size_t max, char *msg, size_t cap);
/* Percent-decode s[0..n) (plus_space: '+' is a space) into a malloc'd NUL-terminated
 * string that is valid UTF-8 without NUL. NULL with a message in msg when it is not. */
char *ferry__admin_decode(const char *s, size_t n, int plus_space, char *msg, size_t cap);
/* Read the query arguments of the connection into ar (decoded, duplicates refused).
 * Returns 0, or -1 with a message (400) in msg. */
int ferry__admin_read_query(admin_request *ar, struct MHD_Connection *c, char *msg, size_t cap);
/* Match method + segments against the built-in routes and the endpoint tables. Returns the
 * route (params captured into ar), or NULL with *status 404 or 405 (allow[] filled). */
const ferry__admin_route *ferry__admin_match(admin_request *ar, char **segs, size_t nsegs,
                                             int *status, char *allow, size_t cap);
/* The request id (the client's X-Request-Id when it is safe to echo, else a new one), the
 * trace id of a valid traceparent, the remote address text. */
void ferry__admin_request_ids(admin_request *ar, struct MHD_Connection *c);

/* ---- auth.c ---- */

/* Check the Authorization header against the route's scope. Returns 0 (ar->actor set) or
 * the status to refuse with (401 / 403) and its message in msg; *challenge = 1 when the
 * answer needs WWW-Authenticate. */
int ferry__admin_authorize(admin_request *ar, struct MHD_Connection *c, char *msg, size_t cap,
                           int *challenge);
ferry_admin_tokens *ferry__admin_tokens_copy(const ferry_admin_tokens *t);

/* ---- audit.c ---- */

/* Record the audit of an ACT / REDRIVE request (row when a database is configured, and a
 * log record always). */
void ferry__admin_audit(admin_request *ar, int status, const char *summary);

/* ---- health.c ---- */

extern const ferry__admin_route ferry__admin_routes_builtin[];

/* ---- server.c ---- */

/* A log record of kind EVENT. */
void ferry__admin_event(ferry_admin_server *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Answer with a Prometheus text body (the /metrics handler's way out of JSON): the handler
 * sets out->status and returns this; the framework sends `text` (stolen) as is. */
int ferry__admin_text_answer(ferry__admin_req *r, ferry__admin_resp *out, char *text, size_t len,
                             const char *content_type);

/* ---- resources.c ---- */

/* Close every cached queue handle and pooled connection (at stop). */
void ferry__admin_resources_close(ferry_admin_server *s);
/* Borrow / return a pooled connection as a ferry__pgc (for readiness and the audit);
 * connect_ms bounds a new connection (0: the server's connect timeout). */
int ferry__admin_pgc_get(ferry_admin_server *s, int connect_ms, ferry__pgc *out, ferry_error *err);
void ferry__admin_pgc_put(ferry_admin_server *s, ferry__pgc *c, int broken);

#endif
