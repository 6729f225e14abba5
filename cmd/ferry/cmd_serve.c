/* cmd_serve.c - `ferry serve`: the admin HTTP server (JSON API, the dashboard, /metrics,
 * /healthz, /readyz) as a daemon: options into ferry_admin_options (ferry/admin.h), the token file
 * read with ferry_admin_tokens_load, the server's log records written as text or JSON lines
 * (logline.h), SIGTERM/SIGINT/SIGHUP = graceful stop and exit 0. docs/serve.md. */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "ferry/admin.h"
#include "ferry/outbox.h"
#include "logline.h"
#include "signals.h"
#include "timetext.h"
#include "util/printable.h"

#define SERVE_EXIT_LISTEN 3 /* the address cannot be bound, the server did not start */
#define SERVE_EXIT_TLS 4    /* the TLS certificate or key is unusable */

typedef struct serve_opts {
    const char *listen;
    const char *routes;
    const char *token_file;
    int require_read_token;
    int read_only;
    const char *tls_cert;
    const char *tls_key;
    const char *slo;
    const char *log_format;
    long long ready_timeout_ms;
    long long stop_timeout_ms;
    long long connections_per_ip;
} serve_opts;

static const opt_def serve_defs[] = {
    {"listen", OPT_STRING, "ADDR:PORT", offsetof(serve_opts, listen), 0, 0,
     "Where to listen: ADDR an IPv4 literal, [IPv6] or localhost, PORT 0 for any free one (the "
     "start-up line says which). Default " FERRY_ADMIN_LISTEN_DEFAULT " (loopback only)."},
    {"token-file", OPT_STRING, "FILE", offsetof(serve_opts, token_file), 0, 0,
     "Tokens, one per line: NAME SCOPES SECRET (scopes: read, act, redrive, comma-separated; "
     "secret 32+ characters; '#' comments; at least one token). Mode 600. Without it every "
     "action is refused (403) and reads are open."},
    {"require-read-token", OPT_FLAG, NULL, offsetof(serve_opts, require_read_token), 0, 0,
     "Reads (GET /api/..., /metrics) need a token too. Needs --token-file."},
    {"read-only", OPT_FLAG, NULL, offsetof(serve_opts, read_only), 0, 0,
     "Refuse every action (queue and job changes, dead-letter redrives and purges, tasks) "
     "with 403, audited like any refused action (a request without a valid token gets the "
     "401 first); reads and the dashboard are unchanged."},
    {"tls-cert", OPT_STRING, "FILE", offsetof(serve_opts, tls_cert), 0, 0,
     "Serve HTTPS with this PEM certificate (chain). With --tls-key."},
    {"tls-key", OPT_STRING, "FILE", offsetof(serve_opts, tls_key), 0, 0,
     "The PEM private key of --tls-cert (no passphrase)."},
    {"routes", OPT_STRING, "FILE", offsetof(serve_opts, routes), 0, 0,
     "The relay's routes file: GET /api/outbox then reports topics without a route."},
    {"slo-backlog-age", OPT_STRING, "DURATION", offsetof(serve_opts, slo), 0, 0,
     "Backlog-age SLO (\"90s\", \"5m\", \"1h\"): /readyz answers \"degraded\" while some "
     "queue's oldest ready job is older. Default: none."},
    {"ready-timeout", OPT_INT, "MS", offsetof(serve_opts, ready_timeout_ms), 1, 60000,
     "Deadline of each /readyz check (Redis, PostgreSQL, backlog). Default 2000."},
    {"stop-timeout", OPT_INT, "MS", offsetof(serve_opts, stop_timeout_ms), 1, 3600000,
     "On SIGTERM, how long requests in progress may take to finish. Default 10000."},
    {"connections-per-ip", OPT_INT, "N", offsetof(serve_opts, connections_per_ip), 1,
     FERRY_ADMIN_CONNECTIONS_MAX,
     "Connections one client address may hold at once (of the server's 64); one past it is "
     "closed without an answer. Default 32, half of them: a browser holds at most 6. Behind a "
     "reverse "
     "proxy every client has the proxy's address: give 64 there."},
    {"log-format", OPT_STRING, "FORMAT", offsetof(serve_opts, log_format), 0, 0,
     "text (default) or json: one JSON object per line (access lines, audit records, "
     "events)."},
};

static const cmd_spec serve_spec = {
    "serve",
    "",
    "Serve the admin JSON API (/api/...), the dashboard, /metrics, /healthz, /readyz over HTTP(S).",
    "Actions (scope act: queue and job changes; scope redrive: dead letters) need a token\n"
    "from --token-file (Authorization: Bearer SECRET); reads too with --require-read-token.\n"
    "The dashboard (GET /, /ui/...) is built into the binary and open; it asks the API for\n"
    "everything with the token the user signs in with (GET /api/stream: live updates).\n"
    "No cookies. With a database every action, refused ones included, is audited in\n"
    "<schema>.admin_audit (`ferry migrate` creates it); without one the audit is the log.\n"
    "Neither Redis nor PostgreSQL needs to be up to start: /readyz tells.\n"
    "Log lines go to stderr: one per request (method, path without the query, status,\n"
    "duration, actor, request id, trace id, remote), never a body, a query or a token.\n"
    "SIGTERM/SIGINT/SIGHUP: stop accepting, let requests in progress finish (up to\n"
    "--stop-timeout), exit 0. A second signal exits at once.\n"
    "Exit status: 0 stopped by a signal, 2 bad arguments, token file or routes file, 3 the\n"
    "address cannot be bound, 4 the TLS certificate or key is unusable, 1 other failures.\n"
    "See docs/serve.md.\n",
    0,
    0,
    0,
    1};

/* The database options with serve's own timeout defaults (the server's pool). */
static const opt_def serve_db_defs[] = {
    {"database", OPT_STRING, "URL", offsetof(db_opts, url), 0, 0, DB_URL_HELP},
    {"database-url-file", OPT_STRING, "FILE", offsetof(db_opts, url_file), 0, 0, DB_URL_FILE_HELP},
    {"schema", OPT_STRING, "NAME", offsetof(db_opts, schema), 0, 0, DB_SCHEMA_HELP},
    {"db-timeout", OPT_INT, "MS", offsetof(db_opts, timeout_ms), 1, 3600000,
     "Database connect and statement timeout in milliseconds (default: connect 5000, "
     "statements 10000)."},
};

typedef struct serve_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    const char *db_url;
    const char *redis_url;
} serve_state;

static serve_state state = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL};

static void on_signal(int sig, int count, void *userdata) {
    serve_state *st = userdata;
    if (count == 1) {
        logline("serve", "%s received: stopping (requests in progress may finish)",
                cli_signame(sig));
        pthread_mutex_lock(&st->mu);
        st->stop = 1;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
    } else {
        logline("serve", "second signal: exiting now");
        _exit(CLI_EXIT_RUNTIME);
    }
}

static const char *or_dash(const char *s) {
    return s && *s ? s : "-";
}

/* The server's log records as lines (ferry/admin.h: every string is printable already). */
static void serve_log(const ferry_admin_log_record *rec, void *userdata) {
    serve_state *st = userdata;
    json_t *f = json_object();
    if (rec->request_id) logline_set_str(f, "request_id", rec->request_id);
    if (rec->method) logline_set_str(f, "method", rec->method);
    if (rec->path) logline_set_str(f, "path", rec->path);
    if (rec->status) logline_set_int(f, "status", rec->status);
    if (rec->actor) logline_set_str(f, "actor", rec->actor);
    if (rec->trace_id) logline_set_str(f, "trace_id", rec->trace_id);
    if (rec->remote) logline_set_str(f, "remote", rec->remote);
    if (rec->kind == FERRY_ADMIN_LOG_ACCESS) {
        json_object_set_new(f, "duration_ms", json_real(rec->duration_ms));
        if (rec->summary) logline_set_str(f, "summary", rec->summary);
        logline_event("serve", rec->level, "serve.request", f,
                      "%s %s %d %.1f ms actor=%s request=%s remote=%s trace=%s%s%s", rec->method,
                      rec->path, rec->status, rec->duration_ms, rec->actor, rec->request_id,
                      rec->remote, or_dash(rec->trace_id), rec->summary ? " " : "",
                      rec->summary ? rec->summary : "");
    } else if (rec->kind == FERRY_ADMIN_LOG_AUDIT) {
        if (rec->summary) logline_set_str(f, "summary", rec->summary);
        char why[FERRY_ERROR_MESSAGE_MAX + 64] = "";
        if (rec->audit_error) {
            snprintf(why, sizeof why, "%s", rec->audit_error);
            logline_mask_url_password(why, sizeof why, st->db_url);
            logline_set_str(f, "audit_error", why);
        }
        logline_event("serve", rec->level, "serve.audit", f,
                      "audit: %s %s -> %d by %s (request %s) summary=%s%s%s", rec->method,
                      rec->path, rec->status, rec->actor, rec->request_id, or_dash(rec->summary),
                      rec->audit_error ? "; the audit row was not written: " : "", why);
    } else {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", rec->message ? rec->message : "");
        logline_mask_url_password(msg, sizeof msg, st->db_url);
        logline_mask_url_password(msg, sizeof msg, st->redis_url);
        logline_event("serve", rec->level, "serve.event", f, "%s", msg);
    }
}

/* A start failure's exit status, from the error. */
static int start_exit(const ferry_error *e) {
    if (e->code == FERRY_ETLS || !strncmp(e->message, "TLS", 3) ||
        !strncmp(e->message, "serve: TLS", 10))
        return SERVE_EXIT_TLS;
    if (e->code == FERRY_EINVAL || e->code == FERRY_ETOOBIG) return CLI_EXIT_USAGE;
    if (e->code == FERRY_EIO) return SERVE_EXIT_LISTEN;
    return CLI_EXIT_RUNTIME;
}

/* The connection options with the Redis TLS ones renamed --redis-tls-*: --tls-cert and
 * --tls-key are the server's own here. */
#define CONN_DEFS_MAX 16
static opt_def conn_defs[CONN_DEFS_MAX];
static char conn_names[CONN_DEFS_MAX][40];

static opt_group serve_conn_group(cli_conn *conn) {
    opt_group g = cli_conn_group(conn, 0);
    size_t n = g.n < CONN_DEFS_MAX ? g.n : CONN_DEFS_MAX;
    for (size_t i = 0; i < n; i++) {
        conn_defs[i] = g.defs[i];
        if (!strncmp(conn_defs[i].name, "tls-", 4)) {
            snprintf(conn_names[i], sizeof conn_names[i], "redis-%s", conn_defs[i].name);
            conn_defs[i].name = conn_names[i];
        }
    }
    g.defs = conn_defs;
    g.n = n;
    return g;
}

static int serve_run(int argc, char **argv, db_opts *d, ferry_admin_tokens **tokens,
                     ferry_routes **routes) {
    cli_conn conn = {0};
    serve_opts o = {0};
    opt_group groups[] = {{"Options", serve_defs, sizeof serve_defs / sizeof serve_defs[0], &o},
                          {"Database options", serve_db_defs, DB_DEFS_COUNT, d},
                          serve_conn_group(&conn)};
    opt_result res;
    int rc = opts_parse(&serve_spec, groups, 3, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    logline_format fmt = LOGLINE_TEXT;
    if (o.log_format && logline_format_parse(o.log_format, &fmt))
        return opts_usage_error(&serve_spec, "--log-format: expected text or json");
    logline_set_format(fmt);
    if (!o.tls_cert != !o.tls_key)
        return opts_usage_error(&serve_spec, "--tls-cert and --tls-key go together");
    if (o.require_read_token && !o.token_file)
        return opts_usage_error(&serve_spec, "--require-read-token needs --token-file");
    double slo = 0;
    if (o.slo) {
        long long v = cli_duration_s(o.slo);
        if (v <= 0)
            return opts_usage_error(&serve_spec,
                                    "--slo-backlog-age: expected a duration such as 90s, 5m, 1h");
        slo = (double)v;
    }
    if ((rc = cli_conn_resolve(&serve_spec, &conn))) return rc;
    int with_db = db_given(d);
    if (with_db && (rc = db_resolve(&serve_spec, d))) return rc;
    state.db_url = with_db ? d->url : NULL;
    state.redis_url = conn.redis.url;

    ferry_error e = {0};
    if (o.token_file && ferry_admin_tokens_load(o.token_file, tokens, &e)) {
        char shown[4 * FERRY_ERROR_MESSAGE_MAX];
        int urc = opts_usage_error(&serve_spec, "--token-file: %s",
                                   ferryx_printable(e.message, shown, sizeof shown));
        return e.code == FERRY_ENOMEM ? CLI_EXIT_RUNTIME : urc;
    }
    if (o.routes && ferry_routes_load(o.routes, routes, &e)) {
        char shown[4 * FERRY_ERROR_MESSAGE_MAX];
        int urc = opts_usage_error(&serve_spec, "--routes: %s",
                                   ferryx_printable(e.message, shown, sizeof shown));
        return e.code == FERRY_ENOMEM ? CLI_EXIT_RUNTIME : urc;
    }

    ferry_admin_options ao;
    ferry_admin_options_init(&ao);
    ao.listen = o.listen;
    ao.redis = &conn.redis;
    ao.prefix = conn.prefix;
    ao.database_url = with_db ? d->url : NULL;
    ao.schema = d->schema;
    ao.db_connect_timeout_ms = (int)d->timeout_ms;
    ao.db_statement_timeout_ms = (int)d->timeout_ms;
    ao.routes = *routes;
    ao.tokens = *tokens;
    ao.require_read_token = o.require_read_token;
    ao.read_only = o.read_only;
    ao.tls_cert_file = o.tls_cert;
    ao.tls_key_file = o.tls_key;
    ao.slo_backlog_age_s = slo;
    ao.ready_timeout_ms = (int)o.ready_timeout_ms;
    ao.stop_timeout_ms = (int)o.stop_timeout_ms;
    ao.connections_per_ip = (int)o.connections_per_ip;
    ao.log = serve_log;
    ao.log_userdata = &state;

    cli_signals_block(); /* before any thread exists: all inherit the mask */
    cli_signals sigs;
    if (cli_signals_start(&sigs, on_signal, &state) != 0) {
        logline("serve", "cannot start the signal thread");
        return CLI_EXIT_RUNTIME;
    }
    ferry_admin_server *srv = NULL;
    if (ferry_admin_start(&ao, &srv, &e)) {
        char shown[4 * FERRY_ERROR_MESSAGE_MAX];
        logline("serve", "could not start: %s", ferryx_printable(e.message, shown, sizeof shown));
        cli_signals_stop(&sigs);
        return start_exit(&e);
    }
    char where[300] = "none", host[4 * sizeof conn.host], prefix[512], addr[200];
    if (with_db) db_display(d, where, sizeof where);
    ferryx_printable(o.listen ? o.listen : FERRY_ADMIN_LISTEN_DEFAULT, addr, sizeof addr);
    char *colon = strrchr(addr, ':');
    if (colon) *colon = '\0';
    size_t ntok = ferry_admin_tokens_count(*tokens);
    json_t *f = json_object();
    logline_set_str(f, "scheme", o.tls_cert ? "https" : "http");
    logline_set_str(f, "host", addr);
    logline_set_int(f, "port", ferry_admin_port(srv));
    logline_set_int(f, "actions_enabled", *tokens != NULL);
    logline_set_int(f, "tokens", (long long)ntok);
    logline_set_int(f, "read_token_required", o.require_read_token);
    logline_set_int(f, "read_only", o.read_only);
    logline_set_str(f, "redis", ferryx_printable(conn.host, host, sizeof host));
    logline_set_str(f, "prefix", ferryx_printable(conn.prefix, prefix, sizeof prefix));
    logline_set_str(f, "database", where);
    logline_event("serve", 1, "serve.start", f,
                  "listening on %s://%s:%d, actions %s, reads %s, redis %s, prefix %s, "
                  "database %s",
                  o.tls_cert ? "https" : "http", addr, ferry_admin_port(srv),
                  o.read_only ? "disabled (--read-only)"
                  : *tokens   ? (ntok ? "enabled (token file)" : "enabled (token file, no token)")
                              : "disabled (no --token-file)",
                  o.require_read_token ? "need a token" : "open", host, prefix, where);

    pthread_mutex_lock(&state.mu);
    while (!state.stop)
        pthread_cond_wait(&state.cv, &state.mu);
    pthread_mutex_unlock(&state.mu);
    ferry_admin_stop(srv);
    logline_event("serve", 1, "serve.stop", NULL, "stopped");
    cli_signals_stop(&sigs);
    return CLI_EXIT_OK;
}

static int serve_main(int argc, char **argv) {
    db_opts d = {0};
    ferry_admin_tokens *tokens = NULL;
    ferry_routes *routes = NULL;
    int rc = serve_run(argc, argv, &d, &tokens, &routes);
    ferry_admin_tokens_free(tokens);
    ferry_routes_free(routes);
    db_opts_free(&d);
    return rc;
}

const cli_setup serve_cmd = {.main = serve_main};
