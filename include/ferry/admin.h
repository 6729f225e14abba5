/* ferry/admin.h - the admin HTTP server of `ferry serve`: the JSON API under /api/, /metrics,
 * /healthz and /readyz, and the dashboard (/, /ui/..., an event stream) on libmicrohttpd, with
 * scoped bearer tokens, an audit of every action and an access log given to a callback (the library
 * never prints). docs/serve.md describes running it; docs/operations.md every endpoint.
 *
 * For every function below unless it says otherwise:
 * Threads: any thread; one server handle is not used by two threads at once, except
 *   ferry_admin_port (any number at once while the server runs).
 * Ownership: strings passed in are copied (or only read during the call). */
#ifndef FERRY_ADMIN_H
#define FERRY_ADMIN_H

#include "common.h"
#include "metrics.h"
#include "outbox.h"
#include "redis.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits; input over one is refused with FERRY_EINVAL (or FERRY_ETOOBIG) naming it. */
#define FERRY_ADMIN_LISTEN_DEFAULT "127.0.0.1:7070" /* loopback unless told otherwise */
#define FERRY_ADMIN_TOKEN_FILE_MAX (64 * 1024)      /* bytes of a token file */
#define FERRY_ADMIN_TOKENS_MAX 256                  /* tokens of a token file */
#define FERRY_ADMIN_TOKEN_NAME_MAX 64               /* bytes of a token's name */
#define FERRY_ADMIN_SECRET_MIN 32                   /* bytes of a secret, at least */
#define FERRY_ADMIN_SECRET_MAX 512                  /* bytes of a secret, at most */
#define FERRY_ADMIN_CONNECTIONS_MAX 64              /* connections served at once */
#define FERRY_ADMIN_CONNECTION_TIMEOUT_S 10         /* idle seconds before a connection ends */
#define FERRY_ADMIN_CONNECTIONS_PER_IP_DEFAULT 32   /* connections of one client address */
#define FERRY_ADMIN_HEAD_TIMEOUT_S 10               /* a request head's time (see options) */
#define FERRY_ADMIN_REQUEST_TIMEOUT_S 30            /* a request's, an answer's (see options) */
#define FERRY_ADMIN_ANSWER_MIN_RATE                                                                \
    (16 * 1024)                                   /* bytes/s: an answer's time grows by its        \
                                                     size at this rate (see options) */
#define FERRY_ADMIN_READY_TIMEOUT_DEFAULT_MS 2000 /* each /readyz check's deadline */
#define FERRY_ADMIN_STOP_TIMEOUT_DEFAULT_MS 10000 /* ferry_admin_stop's grace for requests */
#define FERRY_ADMIN_STREAMS_MAX 8                 /* GET /api/stream open at once (429 past) */
#define FERRY_ADMIN_STREAM_SECONDS 300            /* one event stream's life (then it ends) */

/* Scopes a token may hold (a bit set). "read" is implied by holding any. */
#define FERRY_ADMIN_SCOPE_READ 1
#define FERRY_ADMIN_SCOPE_ACT 2
#define FERRY_ADMIN_SCOPE_REDRIVE 4

/* ---- tokens -------------------------------------------------------------------------- */

/* The tokens of a token file: names, scopes and SHA-256 digests of the secrets (the secrets
 * themselves are not kept: they are wiped from memory once digested). Immutable. */
typedef struct ferry_admin_tokens ferry_admin_tokens;

/* Parse a token file's text: one token per line, "NAME SCOPES SECRET" separated by blanks
 * (spaces or tabs); NAME 1..FERRY_ADMIN_TOKEN_NAME_MAX bytes of [A-Za-z0-9._@-], SCOPES a
 * comma list of read, act, redrive; SECRET FERRY_ADMIN_SECRET_MIN..FERRY_ADMIN_SECRET_MAX
 * bytes of printable ASCII without blanks. Blank lines and lines starting with '#' (after
 * blanks) are skipped. `filename` (may be NULL) names the text in messages.
 * Returns: 0 and *out (freed with ferry_admin_tokens_free); a text without any token gives
 *   an empty set (every action then needs a token none can show).
 * Errors: FERRY_EINVAL naming the file and line number for a malformed line, a bad name, an
 *   unknown scope, a short or long secret, a duplicate name or a duplicate secret; never
 *   the secret itself. FERRY_ETOOBIG past FERRY_ADMIN_TOKEN_FILE_MAX bytes or
 *   FERRY_ADMIN_TOKENS_MAX tokens; FERRY_ENOMEM. Blocks: no (pure). */
FERRY_API int ferry_admin_tokens_parse(const char *text, size_t len, const char *filename,
                                       ferry_admin_tokens **out, ferry_error *err);

/* Read and parse the token file at path. A file that the group or others may read or write
 * (mode & 077) is refused: it holds secrets; so is a file without any token (empty, or
 * only blank and comment lines): a server started with it would refuse every action with
 * no token able to pass, which is never what a token file is given for.
 * Returns, Errors: as ferry_admin_tokens_parse, and FERRY_EIO when it cannot be read (the
 *   reason in the message), FERRY_EINVAL for the mode or a file without a token (the
 *   message names the file, never its content). Blocks: reads the file. */
FERRY_API int ferry_admin_tokens_load(const char *path, ferry_admin_tokens **out, ferry_error *err);

/* How many tokens t holds; 0 for NULL. Cannot fail. */
FERRY_API size_t ferry_admin_tokens_count(const ferry_admin_tokens *t);

/* Free t (its digests are wiped first). NULL accepted. */
FERRY_API void ferry_admin_tokens_free(ferry_admin_tokens *t);

/* ---- log ------------------------------------------------------------------------------ */

typedef enum ferry_admin_log_kind {
    FERRY_ADMIN_LOG_ACCESS = 1, /* one answered request */
    FERRY_ADMIN_LOG_AUDIT = 2,  /* an action's audit record (also when the row could not be
                                   written: then audit_error says why) */
    FERRY_ADMIN_LOG_EVENT = 3,  /* the server's own news: started, stopping, a failure */
} ferry_admin_log_kind;

/* One log record. Every string is one line of printable UTF-8 (text from requests is
 * escaped), never a secret, a token, a query string or a body; NULL when it does not apply.
 * Valid only during the callback. */
typedef struct ferry_admin_log_record {
    int kind;                /* a ferry_admin_log_kind */
    int level;               /* a ferry_log_level */
    const char *message;     /* EVENT: what happened; AUDIT, ACCESS: NULL */
    const char *request_id;  /* the answer's X-Request-Id */
    const char *method;      /* "GET", ... */
    const char *path;        /* the path only (never the query string) */
    int status;              /* HTTP status of the answer */
    double duration_ms;      /* from the request's headers to the answer queued */
    const char *actor;       /* the token's name, "anonymous" (open read), "unknown" (refused) */
    const char *trace_id;    /* the trace id of a valid W3C traceparent header, else NULL */
    const char *remote;      /* "ADDR:PORT" of the peer */
    const char *summary;     /* AUDIT: the handler's one line ("retried 12 jobs"); ACCESS of
                                an event stream: how it ended ("stream ended: client gone",
                                "... max age", "... server stop", "... out of memory");
                                else NULL */
    const char *audit_error; /* AUDIT: why the row was not written, NULL when it was (or when
                                no database is configured: then this record is the audit) */
} ferry_admin_log_record;

/* Receives every log record. Runs on the server's threads, several at once (one per
 * connection): it must be thread-safe and must not block for long. */
typedef void (*ferry_admin_log_fn)(const ferry_admin_log_record *rec, void *userdata);

/* ---- the server ----------------------------------------------------------------------- */

typedef struct ferry_admin_server ferry_admin_server;

typedef struct ferry_admin_options {
    /* "HOST:PORT": HOST an IPv4 literal, "[IPv6]" or "localhost" (no name is resolved), PORT
     * 0..65535 (0 = a free one, see ferry_admin_port). NULL = FERRY_ADMIN_LISTEN_DEFAULT. */
    const char *listen;
    const ferry_redis_options *redis; /* where the queues are; NULL = defaults */
    const char *prefix;               /* key prefix; NULL = "bull" */
    /* PostgreSQL: a URL or conninfo, NULL = no database (the dead-letter and outbox
     * endpoints answer 503, audit records go to the log only). */
    const char *database_url;
    const char *schema;          /* schema of ferry's tables; NULL = "public" */
    int db_connect_timeout_ms;   /* 0 = 5000 */
    int db_statement_timeout_ms; /* 0 = 10000 */
    const ferry_routes *routes;  /* the relay's routes (outbox status); NULL = none.
                                    Borrowed: must outlive the server */
    /* Tokens (copied). NULL = no token file: every action is refused (403). */
    const ferry_admin_tokens *tokens;
    int require_read_token; /* 1 = reads (and /metrics) need a token too */
    /* 1 = read-only: every action route (scope act or redrive: queue and job changes,
     * dead-letter redrives and purges, dry runs included, server-side tasks) answers 403
     * "the server is read-only ..." before its handler runs, audited like any refused
     * action; the token is checked first, so a request without a valid one gets the 401
     * any action would. Reads, /metrics, /healthz, /readyz and the dashboard are
     * unchanged. */
    int read_only;
    /* Connections one client address may hold at once, 1..FERRY_ADMIN_CONNECTIONS_MAX; one
     * past it is closed at once, without an answer. 0 = FERRY_ADMIN_CONNECTIONS_PER_IP_DEFAULT
     * (half the server: a browser holds at most 6, a script running requests in parallel
     * a few more while closed ones are cleaned up). Behind a reverse proxy every connection
     * comes from the proxy's address: set it to FERRY_ADMIN_CONNECTIONS_MAX there (and
     * bound clients at the proxy). Whatever it is, a connection is closed when its request
     * head is not complete within FERRY_ADMIN_HEAD_TIMEOUT_S of its start (or of the
     * previous answer), its head and body within FERRY_ADMIN_REQUEST_TIMEOUT_S, or when
     * the client takes more than FERRY_ADMIN_REQUEST_TIMEOUT_S, plus the answer's size at
     * FERRY_ADMIN_ANSWER_MIN_RATE, to read an answer (an event stream excepted); a handler's own
     * time is bounded by its Redis and PostgreSQL calls. */
    int connections_per_ip;
    const char *tls_cert_file; /* PEM certificate (chain) and key: HTTPS when both */
    const char *tls_key_file;  /*   are set; one without the other is FERRY_EINVAL */
    double slo_backlog_age_s;  /* /readyz says "degraded" past it; 0 = no SLO */
    int ready_timeout_ms;      /* each /readyz check; 0 = 2000 */
    int stop_timeout_ms;       /* ferry_admin_stop's grace; 0 = 10000 */
    /* The registry /metrics renders; NULL = one of the server's own. Borrowed. */
    ferry_metrics *metrics;
    ferry_admin_log_fn log; /* NULL = no log (and no audit without a database) */
    void *log_userdata;
} ferry_admin_options;

/* Zero the options (every default). Cannot fail. */
FERRY_API void ferry_admin_options_init(ferry_admin_options *o);

/* Check the options, read the TLS files, bind the address and start serving on
 * libmicrohttpd's threads (a thread per connection, at most FERRY_ADMIN_CONNECTIONS_MAX;
 * every signal blocked in them). Neither Redis nor PostgreSQL is contacted (see /readyz).
 * Returns: 0 and the server in *out, stopped and freed with ferry_admin_stop.
 * Errors: FERRY_EINVAL for a malformed address, option or TLS file (unreadable, not PEM,
 *   key not matching the certificate: the message names the file); FERRY_ETLS when this
 *   libmicrohttpd has no TLS; FERRY_EIO when the address cannot be bound (the reason in the
 *   message); FERRY_ENOMEM. Nothing is left running on failure.
 * Blocks: no (bind and listen). */
FERRY_API int ferry_admin_start(const ferry_admin_options *o, ferry_admin_server **out,
                                ferry_error *err);

/* The port the server listens on (the chosen one when asked for 0); 0 for NULL. */
FERRY_API int ferry_admin_port(const ferry_admin_server *s);

/* Stop gracefully and free s: stop accepting connections, end every open event stream
 * (GET /api/stream) at once, let requests in progress finish within stop_timeout_ms, then
 * close every connection. NULL accepted.
 * Blocks: up to stop_timeout_ms plus the time a handler past it takes to reach its own
 *   deadline (every Redis and PostgreSQL call a handler makes has one). */
FERRY_API void ferry_admin_stop(ferry_admin_server *s);

#ifdef __cplusplus
}
#endif
#endif
