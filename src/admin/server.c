/* server.c - the HTTP server of `ferry serve` on libmicrohttpd: start (options checked and
 * copied, the address bound here so a bind failure says why, TLS files checked), one
 * request's life (route, bounds, token, body, handler, audit, answer, access log) and the
 * graceful stop. --read-only refuses every action route here, before its handler; answers
 * are JSON, a handler's text or static bytes (/metrics, the dashboard's files, with their
 * own headers) or an event stream (stream.c), each with the security headers (an answer
 * whose headers cannot all be added is replaced by a 500 that has them, or not sent).
 * Connections are bounded per client address (MHD_OPTION_PER_IP_CONNECTION_LIMIT) and in
 * time (conns.c: the request head, the body, the answer's sending).
 *
 * Threads: libmicrohttpd's thread-per-connection mode. A handler blocks on Redis or
 * PostgreSQL (each call with its deadline), and in the thread-pool mode one blocked
 * handler would stall every connection that pool thread serves; a thread per connection
 * blocks only its own, and FERRY_ADMIN_CONNECTIONS_MAX bounds the threads. Every signal is
 * blocked in those threads (they take the mask of the thread that starts the daemon). */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "admin/framework.h"
#include "admin/tls.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define JSON_TYPE "application/json; charset=utf-8"

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ferry__admin_event(ferry_admin_server *s, int level, const char *fmt, ...) {
    if (!s->log) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ferry_admin_log_record rec = {.kind = FERRY_ADMIN_LOG_EVENT, .level = level, .message = text};
    s->log(&rec, s->log_userdata);
}

int ferry__admin_text_answer(ferry__admin_req *r, ferry__admin_resp *out, char *text, size_t len,
                             const char *content_type) {
    admin_request *ar = r->server;
    free(ar->text_body);
    ar->text_set = 1;
    ar->text_body = text;
    ar->text_static = NULL;
    ar->text_len = len;
    ar->text_type = content_type;
    ar->ntext_headers = 0;
    out->status = 200;
    return 0;
}

int ferry__admin_static_answer(ferry__admin_req *r, ferry__admin_resp *out, int status,
                               const void *data, size_t len, const char *content_type,
                               const char *const (*headers)[2], size_t nheaders) {
    admin_request *ar = r->server;
    free(ar->text_body);
    ar->text_body = NULL;
    ar->text_set = 1;
    ar->text_static = data;
    ar->text_len = len;
    ar->text_type = content_type;
    if (nheaders > ADMIN_HEADERS_MAX) nheaders = ADMIN_HEADERS_MAX;
    for (size_t i = 0; i < nheaders; i++) {
        ar->text_headers[i][0] = headers[i][0];
        ar->text_headers[i][1] = headers[i][1];
    }
    ar->ntext_headers = nheaders;
    out->status = status;
    return 0;
}

void ferry__admin_access_log(admin_request *ar, int status) {
    ferry_admin_server *s = ar->srv;
    if (!s->log) return;
    ferry_admin_log_record rec = {
        .kind = FERRY_ADMIN_LOG_ACCESS,
        .level = status >= 500 ? FERRY_LOG_WARN : FERRY_LOG_INFO,
        .request_id = ar->request_id,
        .method = ar->method,
        .path = ar->path_shown,
        .status = status,
        .duration_ms = (double)(mono_us() - ar->t0_us) / 1000.0,
        .actor = ar->actor,
        .trace_id = ar->trace_id[0] ? ar->trace_id : NULL,
        .remote = ar->remote,
    };
    s->log(&rec, s->log_userdata);
}

/* The answer when its own could not be given its headers. */
#define ANSWER_FAILED_BODY "{\"error\":\"internal error: the answer could not be built\"}\n"

/* Add every header of an answer: Content-Type, X-Request-Id, the request's own static
 * headers (own_headers) or the JSON answer's Cache-Control, CSP and a handler's
 * Retry-After, the security headers,
 * Allow, WWW-Authenticate, Connection: close. Returns 0, or -1 when one could not be added
 * (libmicrohttpd out of memory, or a value it refuses): the caller must not send resp. */
static int add_headers(const admin_request *ar, struct MHD_Response *resp, const char *type,
                       int own_headers, const char *allow, int challenge) {
    int ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_YES;
    ok = ok && MHD_add_response_header(resp, "X-Request-Id", ar->request_id) == MHD_YES;
    if (own_headers) {
        for (size_t i = 0; ok && i < ar->ntext_headers; i++)
            ok = MHD_add_response_header(resp, ar->text_headers[i][0], ar->text_headers[i][1]) ==
                 MHD_YES;
    } else {
        ok = ok &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_YES;
        ok = ok &&
             MHD_add_response_header(resp, "Content-Security-Policy", ADMIN_CSP_JSON) == MHD_YES;
        /* of a handler's own headers a JSON answer carries only Retry-After (a 429's): the
         * others (an asset's ETag, Cache-Control) belong to the text it did not send */
        for (size_t i = 0; ok && i < ar->ntext_headers; i++)
            if (strcmp(ar->text_headers[i][0], "Retry-After") == 0)
                ok =
                    MHD_add_response_header(resp, "Retry-After", ar->text_headers[i][1]) == MHD_YES;
    }
    ok = ok && MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff") == MHD_YES;
    ok = ok && MHD_add_response_header(resp, "X-Frame-Options", "DENY") == MHD_YES;
    ok = ok && MHD_add_response_header(resp, "Referrer-Policy", "no-referrer") == MHD_YES;
    if (allow) ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES;
    if (challenge)
        ok = ok &&
             MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer") == MHD_YES;
    if (ar->close_conn)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    return ok ? 0 : -1;
}

/* Queue the answer: json (stolen; NULL = {}), the request's text body or its stream. */
static enum MHD_Result answer(admin_request *ar, struct MHD_Connection *c, int status, json_t *json,
                              const char *allow, int challenge) {
    struct MHD_Response *resp;
    size_t bytes = 0; /* the body's size, for the time the client has to read it */
    int text = ar->text_set && (status == 200 || status == 304);
    int stream = ar->stream && status == 200;
    if (ar->stream && !stream) ferry__admin_stream_discard(ar);
    if (stream) {
        json_decref(json);
        resp = ferry__admin_stream_response(ar); /* the stream's state is the response's now */
        if (!resp) return MHD_NO;
    } else if (text && ar->text_static) {
        json_decref(json);
        bytes = status == 304 ? 0 : ar->text_len;
        resp =
            MHD_create_response_from_buffer(bytes, (void *)ar->text_static, MHD_RESPMEM_PERSISTENT);
    } else if (text) {
        json_decref(json);
        bytes = status == 304 ? 0 : ar->text_len;
        resp = MHD_create_response_from_buffer(bytes, ar->text_body, MHD_RESPMEM_MUST_FREE);
        if (resp) ar->text_body = NULL;
    } else {
        if (!json) json = json_object();
        char *jtext = json ? json_dumps(json, FERRY__ADMIN_JSON_FLAGS) : NULL;
        json_decref(json);
        size_t n = jtext ? strlen(jtext) : 0;
        char *body = jtext ? realloc(jtext, n + 2) : NULL;
        if (!body) {
            free(jtext);
            return MHD_NO;
        }
        body[n] = '\n';
        body[n + 1] = '\0';
        bytes = n + 1;
        resp = MHD_create_response_from_buffer(n + 1, body, MHD_RESPMEM_MUST_FREE);
        if (!resp) free(body);
    }
    if (!resp) return MHD_NO;
    if (add_headers(ar, resp, (text || stream) && ar->text_type ? ar->text_type : JSON_TYPE,
                    text && ar->ntext_headers, allow, challenge) != 0) {
        /* never an answer without its security headers: a bare 500 with them, or none */
        MHD_destroy_response(resp); /* a stream's state with it (stream.c's free callback) */
        ferry__admin_event(ar->srv, FERRY_LOG_ERROR,
                           "answer: a header could not be added (out of memory?); answering 500 "
                           "(request %s)",
                           ar->request_id);
        ar->text_set = 0;
        ar->ntext_headers = 0;
        stream = 0;
        status = 500;
        resp = MHD_create_response_from_buffer(strlen(ANSWER_FAILED_BODY),
                                               (void *)ANSWER_FAILED_BODY, MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        if (add_headers(ar, resp, JSON_TYPE, 0, NULL, 0) != 0) {
            MHD_destroy_response(resp);
            ar->done = 1;
            ferry__admin_access_log(ar, 500);
            return MHD_NO; /* the connection is closed without an answer */
        }
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    ar->done = 1;
    /* the client has FERRY_ADMIN_REQUEST_TIMEOUT_S (and its size's time) to read it; a stream
     * bounds its own life */
    ferry__admin_conn_answer_phase(ar->srv, c, stream ? ADMIN_CONN_NONE : ADMIN_CONN_ANSWER, bytes);
    if (!stream) ferry__admin_access_log(ar, status); /* a stream's is written at its end */
    return ret;
}

static json_t *error_json(const char *msg) {
    char shown[1024];
    return json_pack("{s:s}", "error",
                     ferryx_printable_clean(msg) ? msg
                                                 : ferryx_printable(msg, shown, sizeof shown));
}

/* An answer the framework gives itself (before or instead of the handler), audited when
 * the route is an action's, with the refusal's message as the row's summary. */
static enum MHD_Result refuse(admin_request *ar, struct MHD_Connection *c, int status,
                              const char *msg, const char *allow, int challenge) {
    if (ar->audited) {
        /* the audit row's write has its own deadlines: the connection's must not cut it */
        ferry__admin_conn_phase(ar->srv, c, ADMIN_CONN_NONE);
        ferry__admin_audit(ar, status, msg);
    }
    return answer(ar, c, status, error_json(msg), allow, challenge);
}

/* How often the headers that frame a request or name its caller appear. */
typedef struct header_counts {
    int content_length, transfer_encoding, authorization;
} header_counts;

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    (void)kind;
    (void)value;
    header_counts *h = cls;
    if (!key) return MHD_YES;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) h->content_length++;
    if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) h->transfer_encoding++;
    if (strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0) h->authorization++;
    return MHD_YES;
}

/* A request whose body length or caller two parties could read differently (RFC 9112
 * 6.3: a repeated Content-Length, one beside Transfer-Encoding, a coding other than
 * chunked; a repeated Authorization) is refused, and its connection closed, so nothing
 * behind a proxy can be smuggled in after it. Returns the message, or NULL when fine. */
static const char *ambiguous_framing(struct MHD_Connection *c) {
    header_counts h = {0, 0, 0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_header, &h);
    if (h.content_length > 1) return "Content-Length is given more than once";
    if (h.transfer_encoding > 1) return "Transfer-Encoding is given more than once";
    if (h.content_length && h.transfer_encoding)
        return "Content-Length and Transfer-Encoding are both given";
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (te && strcasecmp(te, "chunked") != 0)
        return "Transfer-Encoding other than chunked is not accepted";
    if (h.authorization > 1) return "Authorization is given more than once";
    return NULL;
}

/* The token check of the route's scope; FERRY__ADMIN_SCOPE_TOKEN is any valid token, asked
 * for even when reads are open (every token holds READ). Returns 0 or the status. */
static int authorize(admin_request *ar, struct MHD_Connection *c, char *msg, size_t cap,
                     int *challenge) {
    if (ar->route->scope != FERRY__ADMIN_SCOPE_TOKEN)
        return ferry__admin_authorize(ar, c, msg, cap, challenge);
    if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION)) {
        snprintf(ar->actor, sizeof ar->actor, "unknown");
        snprintf(msg, cap, "this endpoint needs a token (Authorization: Bearer TOKEN)");
        *challenge = 1;
        return 401;
    }
    const ferry__admin_route *route = ar->route;
    ferry__admin_route as_read = *route;
    as_read.scope = FERRY__ADMIN_SCOPE_READ;
    ar->route = &as_read;
    int refused = ferry__admin_authorize(ar, c, msg, cap, challenge);
    ar->route = route;
    return refused;
}

/* First call for a request: everything that can be judged from the headers. Returns
 * MHD_YES to go on (the body follows, or the final call), or the result of a refusal. */
static enum MHD_Result begin(admin_request *ar, struct MHD_Connection *c) {
    char msg[700];
    const char *framing = ambiguous_framing(c);
    if (framing) {
        ar->close_conn = 1;
        return refuse(ar, c, 400, framing, NULL, 0);
    }
    char *segs[ADMIN_PATH_SEGMENTS_MAX];
    int nsegs = ferry__admin_split_path(ar->path, segs, ADMIN_PATH_SEGMENTS_MAX, msg, sizeof msg);
    if (nsegs < 0) return refuse(ar, c, 400, msg, NULL, 0);
    /* the {} segments live as long as the request */
    int status = 0;
    char allow[128];
    ar->route = ferry__admin_match(ar, segs, (size_t)nsegs, &status, allow, sizeof allow);
    size_t kept = 0;
    for (int i = 0; i < nsegs; i++) {
        int used = 0;
        for (size_t k = 0; k < ar->r.nparams && ar->route; k++)
            if (ar->r.params[k] == segs[i]) used = 1;
        if (used)
            ar->param_store[kept++] = segs[i];
        else
            free(segs[i]);
    }
    if (!ar->route) {
        if (status == 405) {
            snprintf(msg, sizeof msg, "method %s is not allowed here (allowed: %s)", ar->method,
                     allow);
            return refuse(ar, c, 405, msg, allow, 0);
        }
        if (status == 400)
            return refuse(ar, c, 400, "a path segment is longer than 1024 bytes", NULL, 0);
        snprintf(msg, sizeof msg, "no such endpoint: %s %s", ar->method, ar->path_shown);
        return refuse(ar, c, 404, msg, NULL, 0);
    }
    ar->audited = (ar->route->scope & (FERRY__ADMIN_SCOPE_ACT | FERRY__ADMIN_SCOPE_REDRIVE)) != 0;
    int challenge = 0;
    int refused = authorize(ar, c, msg, sizeof msg, &challenge);
    /* a caller without a valid token learns nothing of the server's mode: the 401 comes
     * first; one with a token (whatever its scopes), or a server without tokens, gets the
     * read-only refusal */
    if (refused == 401) return refuse(ar, c, refused, msg, NULL, challenge);
    if (ar->audited && ar->srv->cfg.read_only)
        return refuse(ar, c, 403,
                      "the server is read-only (ferry serve --read-only): actions are "
                      "refused; reads are unchanged",
                      NULL, 0);
    if (refused) return refuse(ar, c, refused, msg, NULL, challenge);
    if (ferry__admin_read_query(ar, c, msg, sizeof msg)) return refuse(ar, c, 400, msg, NULL, 0);
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    if (cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (*end || end == cl) return refuse(ar, c, 400, "bad Content-Length", NULL, 0);
        if (v > FERRY__ADMIN_BODY_MAX) {
            snprintf(msg, sizeof msg, "the body has %llu bytes; at most %d are accepted", v,
                     FERRY__ADMIN_BODY_MAX);
            return refuse(ar, c, 413, msg, NULL, 0);
        }
        ar->has_body = v > 0;
    }
    if (te) ar->has_body = 1;
    if (ar->has_body && (strcmp(ar->r.method, "GET") == 0 || strcmp(ar->r.method, "DELETE") == 0)) {
        snprintf(msg, sizeof msg, "%s takes no request body", ar->method);
        return refuse(ar, c, 400, msg, NULL, 0);
    }
    return MHD_YES;
}

/* The final call: the body is in, run the handler. */
static enum MHD_Result finish(admin_request *ar, struct MHD_Connection *c) {
    json_t *body = NULL;
    if (ar->body_len) {
        json_error_t je;
        body = json_loadb(ar->body, ar->body_len, JSON_REJECT_DUPLICATES, &je);
        if (!body) {
            char msg[300], text[200];
            ferryx_printable(je.text, text, sizeof text);
            snprintf(msg, sizeof msg, "the body is not valid JSON: line %d column %d: %s", je.line,
                     je.column, text);
            return refuse(ar, c, 400, msg, NULL, 0);
        }
        if (!json_is_object(body)) {
            json_decref(body);
            return refuse(ar, c, 400, "the body must be a JSON object", NULL, 0);
        }
    }
    ar->r.body = body;
    ferry__admin_conn_phase(ar->srv, c, ADMIN_CONN_NONE); /* the handler's calls have theirs */
    if (ar->audited)
        ferry__admin_event(ar->srv, FERRY_LOG_INFO, "action started: %s %s by %s (request %s)",
                           ar->method, ar->path_shown, ar->actor, ar->request_id);
    ferry__admin_resp out = {0};
    int rc = ar->route->fn(&ar->r, &out);
    ar->r.body = NULL;
    json_decref(body);
    int status = out.status ? out.status : rc ? 500 : 200;
    if (status < 100 || status > 599) status = 500;
    if (ar->audited) {
        /* a refused action's row says why (the 400's, 404's, 409's or 429's message) */
        const char *why = out.audit_summary;
        if (!why && status >= 400) why = json_string_value(json_object_get(out.json, "error"));
        ferry__admin_audit(ar, status, why);
    }
    free(out.audit_summary);
    return answer(ar, c, status, out.json, NULL, 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    (void)version;
    ferry_admin_server *s = cls;
    admin_request *ar = *req_cls;
    if (!ar) {
        ar = calloc(1, sizeof *ar);
        if (!ar) return MHD_NO;
        *req_cls = ar;
        ar->srv = s;
        ar->conn = c;
        ar->t0_us = mono_us();
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        snprintf(ar->method, sizeof ar->method, "%s", strlen(method) < 8 ? method : "OTHER");
        ar->path = strdup(url);
        if (!ar->path) return MHD_NO;
        ferryx_printable(url, ar->path_shown, sizeof ar->path_shown);
        snprintf(ar->actor, sizeof ar->actor, "anonymous");
        ferry__admin_request_ids(ar, c);
        ar->r.cfg = &s->cfg;
        ar->r.server = ar;
        ar->r.method = strcmp(ar->method, "HEAD") == 0 ? "GET" : ar->method;
        ar->r.path = ar->path;
        ar->r.actor = ar->actor;
        ar->r.request_id = ar->request_id;
        ferry__admin_conn_phase(s, c, ADMIN_CONN_BODY); /* the head is in */
        return begin(ar, c);
    }
    if (ar->done) { /* answered from the headers; whatever follows is dropped */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (ar->too_big) {
            /* this libmicrohttpd cannot answer in the middle of a body: the rest is read and
             * dropped, up to a bound, then 413; past the bound the connection is closed */
            ar->dropped += n;
            if (ar->dropped <= ADMIN_BODY_DRAIN_MAX) return MHD_YES;
            /* closed without an answer: still logged, and audited on an action route */
            if (ar->audited) ferry__admin_audit(ar, 413, "body over the bound; connection closed");
            ferry__admin_access_log(ar, 413);
            ar->done = 1;
            return MHD_NO;
        }
        if (ar->body_len + n > FERRY__ADMIN_BODY_MAX) {
            ar->too_big = 1;
            ar->dropped = n;
            free(ar->body);
            ar->body = NULL;
            ar->body_len = 0;
            return MHD_YES;
        }
        char *grown = realloc(ar->body, ar->body_len + n + 1);
        if (!grown) return MHD_NO;
        ar->body = grown;
        memcpy(ar->body + ar->body_len, upload_data, n);
        ar->body_len += n;
        ar->body[ar->body_len] = '\0';
        return MHD_YES;
    }
    if (ar->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "the body is longer than %d bytes", FERRY__ADMIN_BODY_MAX);
        return refuse(ar, c, 413, msg, NULL, 0);
    }
    return finish(ar, c);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)toe;
    ferry_admin_server *s = cls;
    /* a kept-alive connection waits for its next request head from now */
    ferry__admin_conn_phase(s, c, ADMIN_CONN_HEAD);
    admin_request *ar = *req_cls;
    if (!ar) return;
    *req_cls = NULL;
    for (size_t i = 0; i < FERRY__ADMIN_PATH_PARAMS_MAX; i++)
        free(ar->param_store[i]);
    for (size_t i = 0; i < ar->nquery; i++) {
        free(ar->query_keys[i]);
        free(ar->query_values[i]);
    }
    free(ar->body);
    free(ar->path);
    free(ar->text_body);
    if (ar->stream) ferry__admin_stream_discard(ar);
    free(ar);
    pthread_mutex_lock(&s->mu);
    s->inflight--;
    pthread_cond_broadcast(&s->idle_cv);
    pthread_mutex_unlock(&s->mu);
}

/* The path is split and decoded by the framework itself (a "%2F" must stay inside its
 * segment), and so are query arguments: libmicrohttpd leaves them as received. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    return strlen(s);
}

void ferry_admin_options_init(ferry_admin_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

static char *dup_or_null(const char *s, int *oom) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *oom = 1;
    return d;
}

static void server_free(ferry_admin_server *s) {
    if (!s) return;
    ferry__admin_tasks_stop(s);
    ferry__admin_resources_close(s);
    ferry__admin_gauges_destroy(s->gauges);
    if (s->own_metrics) ferry_metrics_destroy(s->metrics);
    for (size_t i = 0; i < sizeof s->redis_strings / sizeof s->redis_strings[0]; i++)
        free(s->redis_strings[i]);
    free(s->prefix);
    free(s->database_url);
    free(s->schema);
    ferry_admin_tokens_free(s->tokens);
    pthread_mutex_destroy(&s->scrape_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->idle_cv);
    pthread_mutex_destroy(&s->res_mu);
    pthread_cond_destroy(&s->res_cv);
    pthread_mutex_destroy(&s->history_mu);
    pthread_mutex_destroy(&s->stream_mu);
    pthread_cond_destroy(&s->stream_cv);
    pthread_mutex_destroy(&s->snap_mu);
    ferry__admin_conns_stop(s);
    ferry__admin_conns_destroy(s);
    free(s->snap_text);
    free(s);
}

/* Copy what the server keeps of the options. */
static int server_config(ferry_admin_server *s, const ferry_admin_options *o, ferry_error *err) {
    int oom = 0;
    if (o->redis)
        s->redis = *o->redis;
    else
        ferry_redis_options_init(&s->redis);
    const char **strs[] = {&s->redis.url,          &s->redis.tls_ca_file,
                           &s->redis.tls_ca_dir,   &s->redis.tls_cert_file,
                           &s->redis.tls_key_file, &s->redis.tls_server_name};
    for (size_t i = 0; i < 6; i++) {
        s->redis_strings[i] = dup_or_null(*strs[i], &oom);
        *strs[i] = s->redis_strings[i];
    }
    s->prefix = dup_or_null(o->prefix ? o->prefix : "bull", &oom);
    s->database_url = dup_or_null(o->database_url, &oom);
    s->schema = dup_or_null(o->schema ? o->schema : "public", &oom);
    if (oom) return ferry__err(err, FERRY_ENOMEM, "serve: out of memory");
    if (!*s->prefix || strlen(s->prefix) > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "serve: the prefix must be 1..%d bytes",
                          FERRY_QUEUE_NAME_MAX);
    int rc = ferry__pg_quote_schema(s->schema, s->qschema, err);
    if (rc) return rc;
    if (o->tokens && !(s->tokens = ferry__admin_tokens_copy(o->tokens)))
        return ferry__err(err, FERRY_ENOMEM, "serve: out of memory");
    if (o->require_read_token && !o->tokens)
        return ferry__err(err, FERRY_EINVAL,
                          "serve: require_read_token needs tokens (a token file)");
    if (o->ready_timeout_ms < 0 || o->ready_timeout_ms > 60000 || o->stop_timeout_ms < 0 ||
        o->stop_timeout_ms > 3600000 || o->db_connect_timeout_ms < 0 ||
        o->db_connect_timeout_ms > 3600000 || o->db_statement_timeout_ms < 0 ||
        o->db_statement_timeout_ms > 3600000)
        return ferry__err(err, FERRY_EINVAL, "serve: a timeout is out of range");
    if (!(o->slo_backlog_age_s >= 0) || o->slo_backlog_age_s > 1e9)
        return ferry__err(err, FERRY_EINVAL, "serve: slo_backlog_age_s must be 0..1e9");
    if (o->connections_per_ip < 0 || o->connections_per_ip > FERRY_ADMIN_CONNECTIONS_MAX)
        return ferry__err(err, FERRY_EINVAL, "serve: connections_per_ip must be 0..%d",
                          FERRY_ADMIN_CONNECTIONS_MAX);
    s->per_ip =
        o->connections_per_ip ? o->connections_per_ip : FERRY_ADMIN_CONNECTIONS_PER_IP_DEFAULT;
    s->require_read_token = o->require_read_token;
    s->slo_s = o->slo_backlog_age_s;
    s->ready_ms = o->ready_timeout_ms ? o->ready_timeout_ms : FERRY_ADMIN_READY_TIMEOUT_DEFAULT_MS;
    s->stop_ms = o->stop_timeout_ms ? o->stop_timeout_ms : FERRY_ADMIN_STOP_TIMEOUT_DEFAULT_MS;
    s->db_connect_ms = o->db_connect_timeout_ms ? o->db_connect_timeout_ms : 5000;
    s->db_statement_ms = o->db_statement_timeout_ms ? o->db_statement_timeout_ms : 10000;
    s->log = o->log;
    s->log_userdata = o->log_userdata;
    if (o->metrics) {
        s->metrics = o->metrics;
    } else {
        if ((rc = ferry_metrics_create(NULL, &s->metrics, err))) return rc;
        s->own_metrics = 1;
    }
    if (!ferry_metrics_family_find(s->metrics, "ferry_build_info") &&
        (rc = ferry_metrics_build_info(s->metrics, err)))
        return rc;
    if ((rc = ferry__admin_gauges_create(s->metrics, &s->gauges, err))) return rc;
    if ((rc = ferry__admin_tasks_create(s, err))) return rc;
    s->cfg.redis = &s->redis;
    s->cfg.prefix = s->prefix;
    s->cfg.has_database = s->database_url != NULL;
    s->cfg.schema = s->schema;
    s->cfg.routes = o->routes;
    s->cfg.metrics = s->metrics;
    s->cfg.read_only = o->read_only != 0;
    return 0;
}

int ferry_admin_start(const ferry_admin_options *o, ferry_admin_server **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "serve: out is NULL");
    *out = NULL;
    if (!o) return ferry__err(err, FERRY_EINVAL, "serve: options are NULL");
    ferry_admin_server *s = calloc(1, sizeof *s);
    if (!s) return ferry__err(err, FERRY_ENOMEM, "serve: out of memory");
    pthread_mutex_init(&s->scrape_mu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    pthread_mutex_init(&s->res_mu, NULL);
    pthread_cond_init(&s->res_cv, NULL);
    pthread_mutex_init(&s->history_mu, NULL);
    pthread_mutex_init(&s->stream_mu, NULL);
    pthread_mutex_init(&s->snap_mu, NULL);
    pthread_condattr_t ca; /* streams wait with monotonic deadlines */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->stream_cv, &ca);
    pthread_condattr_destroy(&ca);
    ferry__admin_conns_init(s);
    s->listen_fd = -1;
    int rc = server_config(s, o, err);
    admin_tls tls = {0};
    if (!rc) rc = ferry__admin_tls_load(o->tls_cert_file, o->tls_key_file, &tls, err);
    if (rc) {
        server_free(s);
        return rc;
    }
    s->tls = tls.cert != NULL;
    int family = 0;
    const char *addr = o->listen ? o->listen : FERRY_ADMIN_LISTEN_DEFAULT;
    int fd = ferry__admin_listen(addr, FERRY_ADMIN_CONNECTIONS_MAX, &family, &s->port, err);
    if (fd < 0) {
        ferry__admin_tls_free(&tls);
        server_free(s);
        return err ? err->code : FERRY_EIO;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC;
    if (family == AF_INET6) flags |= MHD_USE_IPv6;
    if (s->tls) flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls_opts[] = {
        {s->tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, tls.key},
        {s->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, tls.cert},
        {MHD_OPTION_END, 0, NULL},
    };
    /* libmicrohttpd's threads take the signal mask of the thread that starts them */
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    s->daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, fd,
                         MHD_OPTION_CONNECTION_LIMIT, (unsigned)FERRY_ADMIN_CONNECTIONS_MAX,
                         MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->per_ip,
                         MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)FERRY_ADMIN_CONNECTION_TIMEOUT_S,
                         MHD_OPTION_NOTIFY_CONNECTION, ferry__admin_conn_notify, s,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_UNESCAPE_CALLBACK,
                         no_unescape, NULL, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
    /* the sweeper of late connections (conns.c), with every signal blocked too */
    int swept = s->daemon ? ferry__admin_conns_start(s, err) : 0;
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (swept) {
        MHD_stop_daemon(s->daemon);
        ferry__admin_tls_free(&tls);
        server_free(s);
        return swept;
    }
    ferry__admin_tls_free(&tls); /* libmicrohttpd copied what it needs */
    if (!s->daemon) {
        /* libmicrohttpd closes a socket it was given once it fails past the options */
        int with_tls = s->tls;
        server_free(s);
        return ferry__err(err, with_tls ? FERRY_ETLS : FERRY_EIO,
                          "serve: the HTTP server did not start%s",
                          with_tls ? " (TLS: check the certificate and key)" : "");
    }
    *out = s;
    return 0;
}

int ferry_admin_port(const ferry_admin_server *s) {
    return s ? s->port : 0;
}

void ferry_admin_stop(ferry_admin_server *s) {
    if (!s) return;
    /* stop accepting; requests in progress (and on open connections) go on */
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    ferry__admin_streams_stop(s); /* open event streams end now, not at their 300 s */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += s->stop_ms / 1000;
    until.tv_nsec += (long)(s->stop_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&s->mu);
    int left = 0;
    while (s->inflight > 0)
        if (pthread_cond_timedwait(&s->idle_cv, &s->mu, &until) != 0) {
            left = s->inflight;
            break;
        }
    pthread_mutex_unlock(&s->mu);
    if (left)
        ferry__admin_event(s, FERRY_LOG_WARN,
                           "stop: %d request(s) still in progress after %d ms; closing their "
                           "connections",
                           left, s->stop_ms);
    ferry__admin_tasks_stop(s); /* before the daemon: tasks borrow the server's resources */
    MHD_stop_daemon(s->daemon); /* every connection's CLOSED notified */
    ferry__admin_conns_stop(s);
    server_free(s);
}
