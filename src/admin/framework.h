/* framework.h - what the files of `ferry serve`'s HTTP framework share among themselves
 * (server.c, conns.c, request.c, auth.c, audit.c, health.c, resources.c, listen_addr.c):
 * the server handle's layout, the framework's view of one request, and the helpers each
 * file offers the others. The endpoint files (api_*.c) use admin_internal.h only. */
#ifndef FERRY_ADMIN_FRAMEWORK_H
#define FERRY_ADMIN_FRAMEWORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "admin/admin_internal.h"
#include "ferry/admin.h"
#include "pg/pg.h"

#define ADMIN_QUERY_PARAMS_MAX 32      /* query parameters of one request */
#define ADMIN_QUERY_VALUE_MAX 4096     /* bytes of one decoded query key or value */
#define ADMIN_PATH_SEGMENTS_MAX 16     /* segments of a path */
#define ADMIN_QUEUE_CACHE_MAX 32       /* idle queue handles kept */
#define ADMIN_QUEUE_IDLE_MS 60000      /* an idle queue handle older than this is closed */
#define ADMIN_PG_POOL_MAX 16           /* PostgreSQL connections open at once */
#define ADMIN_PG_IDLE_MAX 8            /* ... of which kept idle */
#define ADMIN_REQUEST_ID_MAX 64        /* bytes of a request id (ours or the client's) */
#define ADMIN_REMOTE_MAX 64            /* "ADDR:PORT" text */
#define ADMIN_HISTORY_MAX 60           /* overview samples the server keeps (GET /api/overview) */
#define ADMIN_HISTORY_INTERVAL_MS 5000 /* at most one sample per this many ms */
#define ADMIN_HEADERS_MAX 8            /* extra answer headers a raw answer may carry */
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

/* One sample of the overview's history (api_overview.c); -1 = not known then (no
 * database, or the source could not be read). */
typedef struct admin_history_point {
    long long outbox_unpublished, dead_letters, ready;
} admin_history_point;

/* One file of src/admin/assets, embedded at build time (cmake/embed_assets.cmake writes
 * the table into generated/admin_assets.c). Everything is static. */
typedef struct ferry__admin_asset {
    const char *name;         /* path under assets/, "index.html", "img/logo.svg" */
    const char *content_type; /* from the extension */
    const char *etag;         /* "\"<16 hex digits of the SHA-256 of the bytes>\"" */
    const unsigned char *data;
    size_t len;
} ferry__admin_asset;
extern const ferry__admin_asset ferry__admin_assets[];
extern const size_t ferry__admin_assets_count;

/* What a connection is doing, for its deadline (conns.c). */
enum {
    ADMIN_CONN_NONE,   /* a handler running, or an event stream: no deadline here */
    ADMIN_CONN_HEAD,   /* waiting for a request head: FERRY_ADMIN_HEAD_TIMEOUT_S */
    ADMIN_CONN_BODY,   /* reading a body: FERRY_ADMIN_REQUEST_TIMEOUT_S since the head began */
    ADMIN_CONN_ANSWER, /* sending an answer: FERRY_ADMIN_REQUEST_TIMEOUT_S since queued */
    ADMIN_CONN_PHASES
};

/* One open connection (conns.c) [conns_mu]. */
typedef struct admin_conn {
    struct MHD_Connection *conn; /* NULL: a free slot */
    int fd;                      /* its socket, open until CLOSED is notified */
    int phase;                   /* ADMIN_CONN_* */
    int shut;                    /* shut down past its deadline; waiting for CLOSED */
    int64_t since_ms;            /* monotonic: accepted, or the previous answer sent */
    int64_t deadline_ms;         /* monotonic; 0 = none */
    char remote[ADMIN_REMOTE_MAX];
} admin_conn;

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
    int per_ip; /* connections one client address may hold */
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

    /* tasks.c: server-side background tasks (retry all by selector) */
    struct admin_tasks *tasks;

    /* api_overview.c: the overview's history ring [history_mu] */
    pthread_mutex_t history_mu;
    admin_history_point history[ADMIN_HISTORY_MAX];
    size_t history_n, history_next; /* points held, the slot the next one goes to */
    int64_t history_last_ms;        /* monotonic time of the newest point (0: none) */

    /* stream.c: open event streams; stopping wakes them all [stream_mu] */
    pthread_mutex_t stream_mu;
    pthread_cond_t stream_cv;
    int streams_open;
    int stopping;
    /* the last event a stream built (overview or error), shared by streams for a second.
     * snap_mu is held by the one stream building (taken with trylock under stream_mu only);
     * snap_text and snap_ms are guarded by stream_mu */
    pthread_mutex_t snap_mu;
    char *snap_text;
    int64_t snap_ms; /* monotonic end of its build */

    /* conns.c: open connections, their deadlines, the sweeper that closes late ones
     * [conns_mu] */
    pthread_mutex_t conns_mu;
    pthread_cond_t conns_cv; /* monotonic clock */
    admin_conn conns[FERRY_ADMIN_CONNECTIONS_MAX];
    int64_t sweep_at_ms; /* when the sweeper wakes next; 0 = running, or no deadline */
    int conns_stopping;
    pthread_t sweeper;
    int sweeper_started;
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
    char path_shown[512];        /* printable, for logs */
    struct MHD_Connection *conn; /* the request's connection (headers) */
    /* a non-JSON answer (/metrics, the dashboard's files): sent instead of the handler's
     * json when text_set, for the statuses 200 and 304 */
    int text_set;
    char *text_body;         /* malloc'd (freed by the framework) ... */
    const void *text_static; /* ... or static (never freed) */
    size_t text_len;
    const char *text_type;
    /* static name, value pairs added to that answer; they replace the JSON answer's
     * Cache-Control and Content-Security-Policy */
    const char *text_headers[ADMIN_HEADERS_MAX][2];
    size_t ntext_headers;
    struct admin_stream *stream; /* an event stream's state (stream.c): answered by it */
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

/* The peer's "ADDR:PORT" ("[ADDR]:PORT" for IPv6, "unknown") into out. Cannot fail. */
void ferry__admin_remote_text(struct MHD_Connection *c, char *out, size_t cap);

/* ---- conns.c ---- */

/* Initialise / destroy the connection table's lock and condition (at create / free). */
void ferry__admin_conns_init(ferry_admin_server *s);
void ferry__admin_conns_destroy(ferry_admin_server *s);
/* Start the sweeper thread (with the caller's signal mask). Returns 0 or FERRY_EIO. */
int ferry__admin_conns_start(ferry_admin_server *s, ferry_error *err);
/* Stop and join the sweeper; idempotent, fine when it never started. */
void ferry__admin_conns_stop(ferry_admin_server *s);
/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls = the server): STARTED takes a slot with
 * the head deadline, CLOSED frees it (both on libmicrohttpd's daemon thread). */
void ferry__admin_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                              enum MHD_ConnectionNotificationCode code);
/* The connection c of s moves to phase (ADMIN_CONN_*), which sets its deadline: HEAD after
 * an answer was sent, BODY once the head is in, NONE while the handler runs (and for an
 * event stream), ANSWER once an answer is queued. On c's thread; cannot fail. */
void ferry__admin_conn_phase(ferry_admin_server *s, struct MHD_Connection *c, int phase);
/* As ferry__admin_conn_phase; an ANSWER of answer_bytes gets, on top of its
 * FERRY_ADMIN_REQUEST_TIMEOUT_S, the time to send them at FERRY_ADMIN_ANSWER_MIN_RATE, so a
 * client reading a big answer over a slow link is not cut. */
void ferry__admin_conn_answer_phase(ferry_admin_server *s, struct MHD_Connection *c, int phase,
                                    size_t answer_bytes);

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
/* Answer `status` (200 or 304) with the static bytes data[0..len) of `content_type` and the
 * extra headers (name, value pairs, nheaders <= ADMIN_HEADERS_MAX, static strings) instead
 * of the JSON answer's Cache-Control and Content-Security-Policy. Returns 0. */
int ferry__admin_static_answer(ferry__admin_req *r, ferry__admin_resp *out, int status,
                               const void *data, size_t len, const char *content_type,
                               const char *const (*headers)[2], size_t nheaders);
/* The JSON answer's Content-Security-Policy. */
#define ADMIN_CSP_JSON "default-src 'none'; frame-ancestors 'none'"

/* ---- stream.c ---- */

/* GET /api/stream's route table (one route; request.c tries it with the built-in ones). */
extern const ferry__admin_route ferry__admin_routes_stream[];
/* Make every open stream end now (at stop; new ones are refused). Cannot fail. */
void ferry__admin_streams_stop(ferry_admin_server *s);
/* The MHD response of the request's stream (ar->stream), and the end of the stream's
 * access log; NULL when out of memory. Used by server.c's answer. */
struct MHD_Response *ferry__admin_stream_response(admin_request *ar);
/* Free a stream state that never became a response. */
void ferry__admin_stream_discard(admin_request *ar);

/* ---- api_overview.c ---- */

/* The overview JSON (GET /api/overview's body), from the request's borrowed resources;
 * adds a point to the server's history when the newest is ADMIN_HISTORY_INTERVAL_MS old.
 * Returns the object (caller decrefs), or NULL with *status (503 Redis unreachable, 500)
 * and the message in err. Blocks: over one cached connection, one SCAN per 1000 keys, then
 * ceil(queues/50) pipelined round trips (the overview's one CLIENT LIST in the first; at
 * most 200 queues), and a few PostgreSQL statements with a database. Threads: any (the ring is
 * locked). */
json_t *ferry__admin_overview(ferry__admin_req *r, int *status, ferry_error *err);
/* The access log record of a request (stream.c logs at a stream's end). */
void ferry__admin_access_log(admin_request *ar, int status);

/* ---- tasks.c ---- */

/* Create the server's task registry (s->tasks), reading FERRY_SERVE_TASK_SCAN_MAX.
 * Returns 0, FERRY_EINVAL for a bad FERRY_SERVE_TASK_SCAN_MAX (naming it), or FERRY_ENOMEM. */
int ferry__admin_tasks_create(ferry_admin_server *s, ferry_error *err);
/* Cancel every running task, wait for their threads, free the registry. Idempotent; NULL
 * s->tasks accepted. Blocks: until each task's current chunk ends. */
void ferry__admin_tasks_stop(ferry_admin_server *s);

/* ---- resources.c ---- */

/* Close every cached queue handle and pooled connection (at stop). */
void ferry__admin_resources_close(ferry_admin_server *s);
/* Borrow / return a pooled connection as a ferry__pgc (for readiness and the audit);
 * connect_ms bounds a new connection (0: the server's connect timeout). */
int ferry__admin_pgc_get(ferry_admin_server *s, int connect_ms, ferry__pgc *out, ferry_error *err);
void ferry__admin_pgc_put(ferry_admin_server *s, ferry__pgc *c, int broken);

#endif
