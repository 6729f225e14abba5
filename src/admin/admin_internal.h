/* admin_internal.h - what `ferry serve`'s HTTP framework (server.c and its neighbours) and
 * its endpoint files (api_*.c) share: the request a handler sees, the answer it gives, the
 * route tables, and the resources (queues, a PostgreSQL connection) it borrows.
 *
 * The framework owns the connection: it reads and bounds the body, parses it as JSON,
 * checks the token and its scope against the route's, matches the route, calls the handler
 * on one of libmicrohttpd's threads, writes the answer, the access log line and, for every
 * route of scope ACT or REDRIVE, the audit row. A handler only reads the request and fills
 * the answer; it never writes to the socket, never logs payloads, never blocks without a
 * deadline (the queue and PostgreSQL connections it borrows carry the server's timeouts).
 *
 * Threads: handlers run concurrently (one per request, up to the server's connection
 * limit). Everything reachable from a request is safe to use from its handler's thread for
 * the duration of the call; a borrowed resource is used by that thread only until it is
 * released. */
#ifndef FERRY_ADMIN_INTERNAL_H
#define FERRY_ADMIN_INTERNAL_H

#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "ferry/common.h"
#include "ferry/metrics.h"
#include "ferry/outbox.h"
#include "ferry/queue.h"
#include "ferry/redis.h"

/* What a route needs from the caller's token. A token holds a set of these; READ is implied
 * by holding any. */
enum {
    FERRY__ADMIN_SCOPE_NONE = 0,    /* open (health, readiness) */
    FERRY__ADMIN_SCOPE_READ = 1,    /* GET endpoints (open unless the server requires tokens
                                       for reads) */
    FERRY__ADMIN_SCOPE_ACT = 2,     /* queue and job actions: pause, retry, clean, ... */
    FERRY__ADMIN_SCOPE_REDRIVE = 4, /* dead-letter redrive and purge (dry runs included) */
    /* any valid token, even when reads are open (GET /api/whoami); not an action */
    FERRY__ADMIN_SCOPE_TOKEN = 8,
};

/* Bounds every handler may rely on (the framework enforces them before the handler runs). */
#define FERRY__ADMIN_BODY_MAX (64 * 1024) /* bytes of a request body */
#define FERRY__ADMIN_PATH_PARAMS_MAX 4    /* {} segments of a route pattern */
#define FERRY__ADMIN_LIST_MAX 1000        /* items one list endpoint returns at most */

/* How every JSON answer is written: compact, ASCII only, and reals with 15 significant digits,
 * so 174.525 reads 174.525 and not 174.52500000000001. */
#define FERRY__ADMIN_JSON_FLAGS (JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(15))
#define FERRY__ADMIN_TASKS_RUNNING_MAX 4  /* server-side tasks running at once (/api/info) */

/* The server's configuration as handlers see it (read-only, lives as long as the server). */
typedef struct ferry__admin_config {
    const ferry_redis_options *redis; /* where the queues are */
    const char *prefix;               /* key prefix, "bull" unless told otherwise */
    int has_database;                 /* 0 when no --database-url: PostgreSQL endpoints 503 */
    const char *schema;               /* PostgreSQL schema of the ferry tables */
    const ferry_routes *routes;       /* outbox routes when given, else NULL */
    ferry_metrics *metrics;           /* the server's registry (/metrics renders it) */
    int read_only;                    /* 1: ACT / REDRIVE routes are refused (403) before
                                         their handler runs */
} ferry__admin_config;

typedef struct ferry__admin_req ferry__admin_req;

/* One request, valid during the handler call only. */
struct ferry__admin_req {
    const ferry__admin_config *cfg;
    void *server;       /* the framework's; pass the request to the functions below */
    const char *method; /* "GET", "POST", "PUT", "DELETE" (HEAD arrives as GET) */
    const char *path;   /* as received, still percent-encoded, without the query */
    /* the {} segments of the route pattern, percent-decoded, in order (so "%2F" in a queue
     * name is a '/' here); each is valid UTF-8 without NUL, 1..FERRY_JOB_ID_MAX bytes (a queue name
     * longer than FERRY_QUEUE_NAME_MAX is refused when the queue is opened) */
    const char *params[FERRY__ADMIN_PATH_PARAMS_MAX];
    size_t nparams;
    /* the body parsed as JSON: NULL when the request had none. A body that is not JSON, or
     * over FERRY__ADMIN_BODY_MAX, never reaches a handler (400 / 413). */
    json_t *body;
    const char *actor;      /* the token's name ("anonymous" on an open read) */
    const char *request_id; /* for log lines and the answer's X-Request-Id */
};

/* The query parameter `key` (percent-decoded), or NULL when absent. A parameter given twice
 * is refused by the framework (400) before the handler runs. Cannot fail. */
const char *ferry__admin_query(const ferry__admin_req *r, const char *key);

/* The request header `name` (case-insensitive; the first when repeated), as received, or
 * NULL when absent. Valid during the handler call. Cannot fail. */
const char *ferry__admin_header(const ferry__admin_req *r, const char *name);

/* The answer a handler fills. status 0 is taken as 200. */
typedef struct ferry__admin_resp {
    int status;
    json_t *json;        /* the body; stolen by the framework (json_decref'd after sending);
                            NULL = {} */
    char *audit_summary; /* malloc'd, optional: one line for the audit row ("retried 12
                            jobs", "dry run: 3 rows"); never payloads or secrets */
} ferry__admin_resp;

/* A handler: fill *out. Returns 0 (the status is out->status); a handler that cannot
 * answer returns -1 with out->status and out->json set by ferry__admin_fail. */
typedef int (*ferry__admin_handler)(ferry__admin_req *r, ferry__admin_resp *out);

/* One route: a method and a pattern of literal segments and "{}" (one path segment,
 * captured into params). "/api/queues/{}/jobs/{}/retry". */
typedef struct ferry__admin_route {
    const char *method;
    const char *pattern;
    int scope; /* FERRY__ADMIN_SCOPE_*: what the token must hold */
    ferry__admin_handler fn;
} ferry__admin_route;

/* The tables the endpoint files define, each ended by an entry with method NULL. The
 * framework tries them in this order; the first match wins. */
extern const ferry__admin_route ferry__admin_routes_queues[];      /* api_queues.c, api_jobs.c */
extern const ferry__admin_route ferry__admin_routes_deadletters[]; /* api_deadletters.c */
extern const ferry__admin_route ferry__admin_routes_outbox[];      /* api_outbox.c */
extern const ferry__admin_route ferry__admin_routes_schedulers[];  /* api_schedulers.c */
extern const ferry__admin_route ferry__admin_routes_ui[];          /* ui.c: the dashboard */
extern const ferry__admin_route ferry__admin_routes_overview[];    /* api_overview.c */
extern const ferry__admin_route ferry__admin_routes_tasks[];       /* api_tasks.c */
extern const ferry__admin_route ferry__admin_routes_trace[];       /* api_trace.c */

/* Set out to {"error": "<formatted text>"} with `status`; returns -1 (so `return
 * ferry__admin_fail(out, 400, ...)`). The text must already be printable (names from the
 * request pass through ferryx_printable first). */
int ferry__admin_fail(ferry__admin_resp *out, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Set out from a library error: FERRY_EINVAL 400, FERRY_ENOTFOUND 404, FERRY_ESTATE 409,
 * FERRY_ETOOBIG 413, connection and timeout errors 503, anything else 500; the body's
 * "error" is err's message (library messages never hold secrets). Returns -1. */
int ferry__admin_fail_err(ferry__admin_resp *out, const ferry_error *err);

/* Borrow an open queue handle for `name` (a queue under cfg->prefix). The handle is the
 * caller's until ferry__admin_queue_release, and may be a cached one: do not close it.
 * Returns: 0 and *q. Errors: as ferry_queue_open (FERRY_EINVAL for a bad name, a Redis
 *   connection error). Blocks: a connect when no cached handle is free. */
int ferry__admin_queue(ferry__admin_req *r, const char *name, ferry_queue **q, ferry_error *err);
void ferry__admin_queue_release(ferry__admin_req *r, ferry_queue *q);

/* Borrow an idle PostgreSQL connection (from the server's pool; statement_timeout set).
 * Returns: 0 and *conn. Errors: FERRY_ESTATE when no database is configured; FERRY_EIO /
 *   FERRY_EDB when none can be had. Release it with `broken` 1 after a connection error (it
 *   is then closed, not reused). */
int ferry__admin_pg(ferry__admin_req *r, PGconn **conn, ferry_error *err);
void ferry__admin_pg_release(ferry__admin_req *r, PGconn *conn, int broken);

/* ---- system-wide gauges (gauges.c), rendered by the server's /metrics ---------------- */

typedef struct ferry__admin_gauges ferry__admin_gauges;

/* Register the system-wide gauge families in m (ferry_queue_jobs, ferry_queue_oldest_*,
 * ferry_queue_paused, ferry_outbox_*, ferry_dead_letters*). Returns 0 and *out; errors as
 * ferry_metrics_register. Free with ferry__admin_gauges_destroy (NULL accepted) before m. */
int ferry__admin_gauges_create(ferry_metrics *m, ferry__admin_gauges **out, ferry_error *err);

/* Recompute every gauge now: the queues under cfg->prefix (bounded), and, when conn is not
 * NULL, the outbox and the dead letters. Blocks: a bounded number of Redis commands per
 * queue and a few statements (docs/metrics.md states how many). Threads: one refresh at a
 * time per gauges object (the caller serializes). Returns 0, or an error when a source
 * could not be read (the gauges of that source keep their last values). */
int ferry__admin_gauges_refresh(ferry__admin_gauges *g, const ferry__admin_config *cfg,
                                PGconn *conn, ferry_error *err);
void ferry__admin_gauges_destroy(ferry__admin_gauges *g);

#endif
