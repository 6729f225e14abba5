/* request.c - reading one request of `ferry serve` before its handler runs: the path split
 * into percent-decoded segments (a "%2F" stays inside its segment), the query arguments
 * (decoded, each at most once), the route the method and path select (or 404 / 405 with
 * Allow), the request id, the trace id of a W3C traceparent header and the peer's address.
 * Every text that reaches a handler is valid UTF-8 without NUL. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <openssl/rand.h>

#include "admin/framework.h"
#include "envelope/trace.h"
#include "util/clock.h"
#include "util/utf8.h"
#include "util/uuid7.h"

static int utf8_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = ferryx_utf8_seq(u + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *ferry__admin_decode(const char *s, size_t n, int plus_space, char *msg, size_t cap) {
    char *out = malloc(n + 1);
    if (!out) {
        snprintf(msg, cap, "out of memory");
        return NULL;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) {
                snprintf(msg, cap, "bad percent-encoding (%% not followed by two hex digits)");
                free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (plus_space && s[i] == '+') {
            out[o++] = ' ';
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    if (memchr(out, '\0', o)) {
        snprintf(msg, cap, "a NUL byte (%%00) is not allowed");
        free(out);
        return NULL;
    }
    if (!utf8_valid(out, o)) {
        snprintf(msg, cap, "not valid UTF-8 once percent-decoded");
        free(out);
        return NULL;
    }
    return out;
}

int ferry__admin_split_path(const char *path, char **out, size_t max, char *msg, size_t cap) {
    if (path[0] != '/') {
        snprintf(msg, cap, "the path must start with '/'");
        return -1;
    }
    size_t n = 0;
    const char *p = path + 1;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (n == max) {
            snprintf(msg, cap, "the path has more than %zu segments", max);
            goto fail;
        }
        char sub[200];
        out[n] = ferry__admin_decode(p, len, 0, sub, sizeof sub);
        if (!out[n]) {
            snprintf(msg, cap, "path segment %zu: %s", n + 1, sub);
            goto fail;
        }
        n++;
        if (!slash) break;
        p = slash + 1;
    }
    return (int)n;
fail:
    for (size_t i = 0; i < n; i++)
        free(out[i]);
    return -1;
}

typedef struct query_walk {
    admin_request *ar;
    char *msg;
    size_t cap;
    int failed;
} query_walk;

static enum MHD_Result on_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
    (void)kind;
    query_walk *w = cls;
    admin_request *ar = w->ar;
    char sub[200];
    size_t kn = strlen(key), vn = value ? strlen(value) : 0;
    if (kn > ADMIN_QUERY_VALUE_MAX || vn > ADMIN_QUERY_VALUE_MAX) {
        snprintf(w->msg, w->cap, "a query parameter is longer than %d bytes",
                 ADMIN_QUERY_VALUE_MAX);
        goto fail;
    }
    if (ar->nquery == ADMIN_QUERY_PARAMS_MAX) {
        snprintf(w->msg, w->cap, "more than %d query parameters", ADMIN_QUERY_PARAMS_MAX);
        goto fail;
    }
    /* '+' was turned into a space by libmicrohttpd already; "%2B" stays a '+' */
    char *k = ferry__admin_decode(key, kn, 0, sub, sizeof sub);
    if (!k) {
        snprintf(w->msg, w->cap, "query parameter name: %s", sub);
        goto fail;
    }
    char *v = ferry__admin_decode(value ? value : "", vn, 0, sub, sizeof sub);
    if (!v) {
        free(k);
        snprintf(w->msg, w->cap, "query parameter value: %s", sub);
        goto fail;
    }
    for (size_t i = 0; i < ar->nquery; i++) {
        if (strcmp(ar->query_keys[i], k) == 0) {
            char shown[80];
            snprintf(shown, sizeof shown, "%s", k);
            for (char *c = shown; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f || (unsigned char)*c >= 0x80) *c = '?';
            snprintf(w->msg, w->cap, "query parameter \"%s\" is given more than once", shown);
            free(k);
            free(v);
            goto fail;
        }
    }
    ar->query_keys[ar->nquery] = k;
    ar->query_values[ar->nquery] = v;
    ar->nquery++;
    return MHD_YES;
fail:
    w->failed = 1;
    return MHD_NO;
}

int ferry__admin_read_query(admin_request *ar, struct MHD_Connection *c, char *msg, size_t cap) {
    query_walk w = {ar, msg, cap, 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query_arg, &w);
    return w.failed ? -1 : 0;
}

const char *ferry__admin_query(const ferry__admin_req *r, const char *key) {
    const admin_request *ar = r->server;
    for (size_t i = 0; i < ar->nquery; i++)
        if (strcmp(ar->query_keys[i], key) == 0) return ar->query_values[i];
    return NULL;
}

const char *ferry__admin_header(const ferry__admin_req *r, const char *name) {
    const admin_request *ar = r->server;
    return ar->conn ? MHD_lookup_connection_value(ar->conn, MHD_HEADER_KIND, name) : NULL;
}

/* Does pattern match segs? 1 yes (params captured when cap_params), 0 no, -1 a {} segment
 * too long. */
static int pattern_match(const char *pattern, char **segs, size_t nsegs, const char **params,
                         size_t *nparams) {
    const char *p = pattern + 1;
    size_t i = 0, np = 0;
    for (;; i++) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (i == nsegs) return 0;
        if (len == 2 && p[0] == '{' && p[1] == '}') {
            size_t sl = strlen(segs[i]);
            if (sl == 0 || np == FERRY__ADMIN_PATH_PARAMS_MAX) return 0;
            if (sl > FERRY_JOB_ID_MAX)
                return -1; /* a custom job id's bound; queue names
                               are bounded again where opened */
            params[np++] = segs[i];
        } else if (strlen(segs[i]) != len || memcmp(segs[i], p, len) != 0) {
            return 0;
        }
        if (!slash) break;
        p = slash + 1;
    }
    if (i + 1 != nsegs) return 0;
    *nparams = np;
    return 1;
}

static void allow_add(char *allow, size_t cap, const char *method) {
    /* a method once, GET followed by HEAD */
    char word[16];
    snprintf(word, sizeof word, "%s", method);
    size_t wl = strlen(word);
    for (const char *p = allow; (p = strstr(p, word)); p += wl)
        if ((p == allow || p[-1] == ' ') && (p[wl] == ',' || p[wl] == '\0')) return;
    size_t n = strlen(allow);
    snprintf(allow + n, cap - n, "%s%s", n ? ", " : "", word);
    if (strcmp(method, "GET") == 0) allow_add(allow, cap, "HEAD");
}

const ferry__admin_route *ferry__admin_match(admin_request *ar, char **segs, size_t nsegs,
                                             int *status, char *allow, size_t cap) {
    const ferry__admin_route *tables[] = {
        ferry__admin_routes_builtin, ferry__admin_routes_stream,
        ferry__admin_routes_queues,  ferry__admin_routes_deadletters,
        ferry__admin_routes_outbox,  ferry__admin_routes_schedulers,
        ferry__admin_routes_ui,      ferry__admin_routes_overview,
        ferry__admin_routes_tasks,   ferry__admin_routes_trace};
    const char *method = strcmp(ar->method, "HEAD") == 0 ? "GET" : ar->method;
    allow[0] = '\0';
    int path_known = 0, too_long = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        if (!tables[t]) continue;
        for (const ferry__admin_route *rt = tables[t]; rt->method; rt++) {
            const char *params[FERRY__ADMIN_PATH_PARAMS_MAX];
            size_t np = 0;
            int m = pattern_match(rt->pattern, segs, nsegs, params, &np);
            if (m < 0) too_long = 1;
            if (m <= 0) continue;
            if (strcmp(rt->method, method) == 0) {
                for (size_t i = 0; i < np; i++)
                    ar->r.params[i] = params[i];
                ar->r.nparams = np;
                return rt;
            }
            path_known = 1;
            allow_add(allow, cap, rt->method);
        }
    }
    *status = path_known ? 405 : too_long ? 400 : 404;
    return NULL;
}

/* A client's request id is echoed when it is short and plain; else one of ours. */
static int request_id_safe(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > ADMIN_REQUEST_ID_MAX) return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == ':'))
            return 0;
    }
    return 1;
}

void ferry__admin_request_ids(admin_request *ar, struct MHD_Connection *c) {
    const char *rid = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");
    if (rid && request_id_safe(rid)) {
        snprintf(ar->request_id, sizeof ar->request_id, "%s", rid);
    } else {
        uint8_t rnd[8] = {0};
        if (RAND_bytes(rnd, sizeof rnd) != 1) {
            uint64_t x = (uint64_t)ferry__mono_ms() * 0x9E3779B97F4A7C15ull;
            memcpy(rnd, &x, sizeof rnd);
        }
        uint64_t seq = atomic_fetch_add(&ar->srv->next_request, 1);
        char id[37];
        ferry__uuid7_format((uint64_t)ferry__now_ms(), (uint16_t)(seq & 0xfff), rnd, id);
        snprintf(ar->request_id, sizeof ar->request_id, "%s", id);
    }
    ar->trace_id[0] = '\0';
    const char *tp = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent");
    ferry__traceparent parsed;
    if (tp && strlen(tp) <= 512 && ferry__traceparent_parse(tp, strlen(tp), &parsed, NULL) == 0)
        snprintf(ar->trace_id, sizeof ar->trace_id, "%s", parsed.trace_id);
    ferry__admin_remote_text(c, ar->remote, sizeof ar->remote);
}

void ferry__admin_remote_text(struct MHD_Connection *c, char *out, size_t cap) {
    snprintf(out, cap, "unknown");
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr) {
        char host[INET6_ADDRSTRLEN] = "";
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET) {
            const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            snprintf(out, cap, "%s:%u", host, ntohs(a->sin_port));
        } else if (sa->sa_family == AF_INET6) {
            const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            snprintf(out, cap, "[%s]:%u", host, ntohs(a->sin6_port));
        }
    }
}
