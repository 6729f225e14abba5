/* ex_http.c - the examples' blocking HTTP client: one libcurl easy handle per call, a
 * whole-call deadline, bounded bodies, and transport failures told apart (no connection,
 * timed out, dropped mid-answer) because a caller decides differently on each. */
#include "ex_http.h"

#include <curl/curl.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ex_http_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

typedef struct body_buf {
    char *data;
    size_t len, cap;
    int too_big;
} body_buf;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud) {
    body_buf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > EX_HTTP_BODY_MAX) {
        b->too_big = 1;
        return 0; /* aborts the transfer */
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return 0;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *ud) {
    ex_http_response *res = ud;
    size_t n = size * nitems;
    static const char name[] = "retry-after:";
    if (n > sizeof name - 1 && strncasecmp(buf, name, sizeof name - 1) == 0) {
        const char *v = buf + sizeof name - 1;
        size_t vl = n - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t')) {
            v++;
            vl--;
        }
        while (vl && isspace((unsigned char)v[vl - 1]))
            vl--;
        if (vl >= sizeof res->retry_after) vl = sizeof res->retry_after - 1;
        memcpy(res->retry_after, v, vl);
        res->retry_after[vl] = '\0';
    }
    return n;
}

static int fail(ex_http_response *res, int transport, const char *what, const char *detail) {
    res->status = 0;
    res->transport = transport;
    snprintf(res->error, sizeof res->error, "%s%s%s", what, detail ? ": " : "",
             detail ? detail : "");
    if (!res->body)
        res->body = calloc(1, 1);
    else
        res->body[0] = '\0';
    res->body_len = 0;
    return -1;
}

int ex_http_do(const ex_http_request *req, ex_http_response *res) {
    memset(res, 0, sizeof *res);
    if (!req || !req->url) return fail(res, EX_HTTP_EOTHER, "no URL", NULL);
    CURL *h = curl_easy_init();
    if (!h) return fail(res, EX_HTTP_EOTHER, "cannot make a libcurl handle", NULL);
    body_buf b = {0};
    struct curl_slist *hdrs = NULL;
    char line[512];
    const char *method = req->method ? req->method : "GET";
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (req->body) hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (req->idempotency_key) {
        snprintf(line, sizeof line, "Idempotency-Key: %s", req->idempotency_key);
        hdrs = curl_slist_append(hdrs, line);
    }
    if (req->traceparent) {
        snprintf(line, sizeof line, "traceparent: %s", req->traceparent);
        hdrs = curl_slist_append(hdrs, line);
    }
    if (req->token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", req->token);
        hdrs = curl_slist_append(hdrs, line);
    }
    long tmo = req->timeout_ms > 0 ? req->timeout_ms : 5000;
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, tmo);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, tmo);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, res);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    if (strcmp(method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body ? req->body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(req->body ? strlen(req->body) : 0));
    }
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    res->body = b.data;
    if (rc != CURLE_OK) {
        const char *what = curl_easy_strerror(rc);
        if (b.too_big) return fail(res, EX_HTTP_ETOOBIG, "response body over 4 MiB", NULL);
        switch (rc) {
        case CURLE_OPERATION_TIMEDOUT:
            return fail(res, EX_HTTP_ETIMEDOUT, "no answer in time", what);
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
            return fail(res, EX_HTTP_ECONNECT, "cannot connect", what);
        case CURLE_GOT_NOTHING:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
            return fail(res, EX_HTTP_EDROPPED, "connection dropped", what);
        default:
            return fail(res, EX_HTTP_EOTHER, what, NULL);
        }
    }
    if (!res->body) res->body = calloc(1, 1);
    if (!res->body) return fail(res, EX_HTTP_EOTHER, "out of memory", NULL);
    res->body_len = b.len;
    res->status = (int)status;
    res->transport = EX_HTTP_OK;
    return 0;
}

void ex_http_response_free(ex_http_response *res) {
    if (!res) return;
    free(res->body);
    res->body = NULL;
    res->body_len = 0;
}

const char *ex_http_transport_name(int transport) {
    switch (transport) {
    case EX_HTTP_OK:
        return "ok";
    case EX_HTTP_ETIMEDOUT:
        return "timeout";
    case EX_HTTP_ECONNECT:
        return "connect";
    case EX_HTTP_EDROPPED:
        return "dropped";
    case EX_HTTP_ETOOBIG:
        return "too big";
    default:
        return "error";
    }
}
