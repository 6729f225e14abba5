/* fakes_http.c - routing shop-fakes' requests (fakes_http.h): match the path and method,
 * apply the operation's injected fault, check the body and headers, call the provider in
 * fakes_state, and write its answer. */
#include "fakes_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ex_util.h"
#include "fakes_requests.h"
#include "fakes_state.h"

#define ID_MAX 100 /* bytes of an id in a path; longer ones cannot exist: 404 */

typedef enum route {
    R_NONE = 0,
    R_HEALTH,
    R_LEDGER,
    R_FAULTS,
    R_AUTHS,
    R_AUTH,
    R_CAPTURE,
    R_VOID,
    R_EXPIRE,
    R_SHIPMENTS,
    R_MESSAGES,
} route;

/* The methods each route takes, as its Allow header. */
static const char *allowed(route r) {
    switch (r) {
    case R_FAULTS:
        return "GET, POST, DELETE";
    case R_SHIPMENTS:
        return "GET, POST";
    case R_HEALTH:
    case R_LEDGER:
    case R_AUTH:
        return "GET";
    default:
        return "POST";
    }
}

static int method_allowed(route r, const char *method) {
    const char *list = allowed(r);
    size_t n = strlen(method);
    for (const char *p = list; (p = strstr(p, method)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

/* Match path; an authorization id goes to id[ID_MAX + 1]. */
static route route_match(const char *path, char id[ID_MAX + 1]) {
    if (strcmp(path, "/healthz") == 0) return R_HEALTH;
    if (strcmp(path, "/ledger") == 0) return R_LEDGER;
    if (strcmp(path, "/faults") == 0) return R_FAULTS;
    if (strcmp(path, "/carrier/shipments") == 0) return R_SHIPMENTS;
    if (strcmp(path, "/mailer/messages") == 0) return R_MESSAGES;
    static const char auths[] = "/gateway/authorizations";
    size_t n = sizeof auths - 1;
    if (strncmp(path, auths, n) != 0) return R_NONE;
    if (path[n] == '\0') return R_AUTHS;
    if (path[n] != '/') return R_NONE;
    const char *start = path + n + 1, *slash = strchr(start, '/');
    size_t len = slash ? (size_t)(slash - start) : strlen(start);
    if (len == 0 || len > ID_MAX) return R_NONE;
    memcpy(id, start, len);
    id[len] = '\0';
    if (!slash) return R_AUTH;
    if (strcmp(slash, "/capture") == 0) return R_CAPTURE;
    if (strcmp(slash, "/void") == 0) return R_VOID;
    if (strcmp(slash, "/expire") == 0) return R_EXPIRE;
    return R_NONE;
}

/* The fault settings a request of (route, method) uses; -1: none (not a provider call). */
static int route_op(route r, const char *method) {
    switch (r) {
    case R_AUTHS:
        return FAKES_OP_GATEWAY_AUTHORIZE;
    case R_AUTH:
        return FAKES_OP_GATEWAY_GET;
    case R_CAPTURE:
        return FAKES_OP_GATEWAY_CAPTURE;
    case R_VOID:
        return FAKES_OP_GATEWAY_VOID;
    case R_SHIPMENTS:
        return strcmp(method, "GET") == 0 ? FAKES_OP_CARRIER_LOOKUP : FAKES_OP_CARRIER_CREATE;
    case R_MESSAGES:
        return FAKES_OP_MAILER_SEND;
    default:
        return -1;
    }
}

/* resp := status + body (taken over). */
static void reply_json(ex_httpd_resp *resp, int status, json_t *body) {
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        ex_httpd_error(resp, 500, NULL, "out of memory");
        return;
    }
    resp->status = status;
    free(resp->body);
    resp->body = text;
}

static void reply_bad(ex_httpd_resp *resp, const fakes_req_error *e) {
    ex_httpd_error(resp, 400, e->field[0] ? e->field : NULL, "%s", e->message);
}

/* An IMF-fixdate (RFC 9110 §5.6.7) at least `seconds` from now. */
static void http_date(long seconds, char *out, size_t cap) {
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    time_t t = ts.tv_sec + seconds + (ts.tv_nsec > 0 ? 1 : 0); /* round up: never early */
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void reply_throttled(ex_httpd_resp *resp, const fakes_fault_decision *d) {
    char value[64];
    if (d->retry_date)
        http_date(d->retry_s, value, sizeof value);
    else
        snprintf(value, sizeof value, "%ld", d->retry_s);
    ex_httpd_error(resp, 429, NULL, "injected: throttled");
    ex_httpd_add_header(resp, "Retry-After", value);
}

/* The provider's part of a request, once faults let it through. */
static void provider_call(fakes_state *s, route r, const char *id, const ex_httpd_req *req,
                          ex_httpd_resp *resp) {
    fakes_req_error e;
    json_t *out = NULL;
    int status;
    const char *key = ex_httpd_header(req, "Idempotency-Key");
    switch (r) {
    case R_AUTHS: {
        fakes_authorize_req a;
        if (fakes_check_key(key, 0, &e) != 0 ||
            fakes_parse_authorize(req->body, req->body_len, &a, &e) != 0)
            return reply_bad(resp, &e);
        status = fakes_gateway_authorize(s, &a, key, &out);
        break;
    }
    case R_AUTH:
        status = fakes_gateway_get(s, id, &out);
        break;
    case R_CAPTURE: {
        fakes_capture_req c;
        if (fakes_check_key(key, 1, &e) != 0 ||
            fakes_parse_capture(req->body, req->body_len, &c, &e) != 0)
            return reply_bad(resp, &e);
        status = fakes_gateway_capture(s, id, &c, key, &out);
        break;
    }
    case R_VOID:
    case R_EXPIRE:
        if ((r == R_VOID && fakes_check_key(key, 0, &e) != 0) ||
            fakes_parse_empty(req->body, req->body_len, &e) != 0)
            return reply_bad(resp, &e);
        status =
            r == R_VOID ? fakes_gateway_void(s, id, key, &out) : fakes_gateway_expire(s, id, &out);
        break;
    case R_SHIPMENTS:
        if (strcmp(req->method, "GET") == 0) {
            const char *ref = ex_httpd_query(req, "reference");
            if (!ref || !*ref) {
                ex_httpd_error(resp, 400, "reference", "the query argument reference is required");
                return;
            }
            status = fakes_carrier_lookup(s, ref, &out);
        } else {
            fakes_shipment_req sh;
            if (fakes_parse_shipment(req->body, req->body_len, &sh, &e) != 0)
                return reply_bad(resp, &e);
            status = fakes_carrier_create(s, &sh, &out);
        }
        break;
    case R_MESSAGES: {
        json_t *msg = NULL;
        if (fakes_check_key(key, 1, &e) != 0 ||
            fakes_parse_message(req->body, req->body_len, &msg, &e) != 0)
            return reply_bad(resp, &e);
        status = fakes_mailer_send(s, msg, key, &out);
        json_decref(msg);
        break;
    }
    default:
        ex_httpd_error(resp, 404, NULL, "no such route");
        return;
    }
    reply_json(resp, status, out);
}

/* /healthz, /ledger, /faults: never faulted. */
static void admin_call(fakes_state *s, route r, const ex_httpd_req *req, ex_httpd_resp *resp) {
    json_t *out = NULL;
    int status;
    if (r == R_HEALTH) {
        ex_httpd_reply(resp, 200, "{\"ok\":true}");
        return;
    }
    if (r == R_LEDGER) {
        char *text = fakes_state_ledger_text(s);
        if (!text) {
            ex_httpd_error(resp, 500, NULL, "out of memory");
            return;
        }
        resp->status = 200;
        free(resp->body);
        resp->body = text;
        return;
    }
    if (strcmp(req->method, "GET") == 0)
        status = fakes_state_faults_get(s, &out);
    else if (strcmp(req->method, "DELETE") == 0)
        status = fakes_state_faults_delete(s, &out);
    else
        status = fakes_state_faults_post(s, req->body, req->body_len, &out);
    if (status == 400 && out) {
        /* name the key: the message starts with it ("gateway.capture.error_rate: ...") */
        const char *msg = json_string_value(json_object_get(out, "error"));
        char field[128] = "";
        const char *colon = msg ? strstr(msg, ": ") : NULL;
        if (colon && strncmp(msg, "malformed JSON", 14) != 0 && strncmp(msg, "the body", 8) != 0 &&
            (size_t)(colon - msg) < sizeof field) {
            memcpy(field, msg, (size_t)(colon - msg));
            field[colon - msg] = '\0';
        }
        ex_httpd_error(resp, 400, field[0] ? field : NULL, "%s", msg ? msg : "bad request");
        json_decref(out);
        return;
    }
    reply_json(resp, status, out);
}

void fakes_http_handle(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata) {
    fakes_state *s = userdata;
    char id[ID_MAX + 1] = "";
    route r = route_match(req->path, id);
    if (r == R_NONE) {
        ex_httpd_error(resp, 404, NULL, "no such route: %s %s", req->method, req->path);
        return;
    }
    if (!method_allowed(r, req->method)) {
        ex_httpd_error(resp, 405, NULL, "%s is not allowed on %s (allowed: %s)", req->method,
                       req->path, allowed(r));
        ex_httpd_add_header(resp, "Allow", allowed(r));
        return;
    }
    int op = route_op(r, req->method);
    if (op < 0 && r != R_EXPIRE) {
        admin_call(s, r, req, resp);
        return;
    }
    fakes_fault_decision d = {0};
    if (op >= 0) d = fakes_state_fault(s, (fakes_op)op);
    if (d.error) {
        ex_log("injected 503 on %s", fakes_op_name(op));
        ex_httpd_error(resp, 503, NULL, "injected");
        return;
    }
    if (d.throttle) {
        ex_log("injected 429 on %s", fakes_op_name(op));
        reply_throttled(resp, &d);
        return;
    }
    if (d.slow) {
        ex_log("injected slow answer (%ld ms) on %s", d.slow_ms, fakes_op_name(op));
        ex_sleep_ms(d.slow_ms);
    }
    provider_call(s, r, id, req, resp);
    if (d.drop) {
        ex_log("injected drop on %s (answer was %d)", fakes_op_name(op), resp->status);
        resp->drop = 1;
    }
}
