/* test_serve.c - `ferry serve`'s HTTP framework over real HTTP against the real binary and
 * the fixture's Redis: /healthz, /readyz with Redis up and with a Redis that does not answer
 * (503 within the deadline), the answer's headers (JSON, X-Request-Id, no-store, nosniff),
 * 404 and 405 with Allow, HEAD, the request id and the traceparent in the access log (and
 * no query string there), bad percent-encoding, NUL and invalid UTF-8 in a segment, "%2F"
 * kept inside a segment, duplicate query parameters, malformed JSON (line and column),
 * bodies over the bound by Content-Length and chunked, a body on GET, with the queue left
 * unchanged by every refused action; 20 concurrent requests; the 65th connection refused
 * while 64 are open; SIGTERM with a request in
 * flight (answered, exit 0) and with one longer than --stop-timeout (not waited for past
 * it, exit 0); a port already taken (exit 3); /metrics. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/sv.h"

static const char *prefix;

/* A queue with a meta key under the test's prefix, for the routes that need one. */
static void make_queue(const char *name) {
    ferry_queue *q = th_queue_open(prefix, name, NULL, 0);
    ferry_queue_close(q);
}

static int queue_paused(const char *name) {
    ferry_conn *c = th_conn();
    long long n = th_cmd_int(c, "HEXISTS %s:%s:meta paused", prefix, name);
    ferry__conn_close(c);
    return (int)n;
}

static void test_health_and_headers(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r;
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "status"), "ok");
    char *ct = sv_header(&r, "Content-Type"), *rid = sv_header(&r, "X-Request-Id"),
         *cc = sv_header(&r, "Cache-Control"), *xc = sv_header(&r, "X-Content-Type-Options");
    assert_string_equal(ct, "application/json; charset=utf-8");
    assert_non_null(rid);
    assert_int_equal(strlen(rid), 36); /* a UUID of ours */
    assert_string_equal(cc, "no-store");
    assert_string_equal(xc, "nosniff");
    assert_null(sv_header(&r, "Set-Cookie"));
    free(ct);
    free(rid);
    free(cc);
    free(xc);
    sv_resp_free(&r);

    /* a client's plain request id is echoed; one with odd characters is replaced */
    sv_request(&s, "GET", "/healthz", SV_HEADERS("X-Request-Id: abc-123.x"), NULL, &r);
    rid = sv_header(&r, "X-Request-Id");
    assert_string_equal(rid, "abc-123.x");
    free(rid);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/healthz", SV_HEADERS("X-Request-Id: a b\"c"), NULL, &r);
    rid = sv_header(&r, "X-Request-Id");
    assert_int_equal(strlen(rid), 36);
    free(rid);
    sv_resp_free(&r);

    sv_request(&s, "HEAD", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_int_equal(r.body_len, 0);
    sv_resp_free(&r);

    sv_request(&s, "GET", "/nothing/here", NULL, NULL, &r);
    SV_EXPECT(r, 404);
    assert_non_null(strstr(sv_json_str(&r, "error"), "no such endpoint"));
    sv_resp_free(&r);

    sv_request(&s, "DELETE", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 405);
    char *allow = sv_header(&r, "Allow");
    assert_string_equal(allow, "GET, HEAD");
    free(allow);
    ct = sv_header(&r, "Content-Type");
    assert_string_equal(ct, "application/json; charset=utf-8");
    free(ct);
    sv_resp_free(&r);

    /* known path of the API, other method: 405 naming what is allowed */
    sv_request(&s, "PUT", "/api/queues/q1/pause", NULL, "{}", &r);
    SV_EXPECT(r, 405);
    allow = sv_header(&r, "Allow");
    assert_string_equal(allow, "POST");
    free(allow);
    sv_resp_free(&r);
    sv_stop(&s);
}

static void test_access_log(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--log-format", "json"));
    sv_resp r;
    sv_request(&s, "GET", "/healthz?secret=hunter2-in-the-query",
               SV_HEADERS("traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "X-Request-Id: req-log-1"),
               NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    /* an invalid traceparent is ignored, not an error */
    sv_request(&s, "GET", "/healthz", SV_HEADERS("traceparent: zz-nope", "X-Request-Id: req-log-2"),
               NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_stop(&s);
    char *log = sv_log(&s);
    assert_null(strstr(log, "hunter2"));
    /* find the access line of req-log-1 and check its members */
    int seen1 = 0, seen2 = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) fail_msg("not a JSON line: %s", line);
        const char *ev = json_string_value(json_object_get(j, "event"));
        const char *rid = json_string_value(json_object_get(j, "request_id"));
        if (ev && !strcmp(ev, "serve.request") && rid && !strcmp(rid, "req-log-1")) {
            seen1 = 1;
            assert_string_equal(json_string_value(json_object_get(j, "method")), "GET");
            assert_string_equal(json_string_value(json_object_get(j, "path")), "/healthz");
            assert_int_equal(json_integer_value(json_object_get(j, "status")), 200);
            assert_string_equal(json_string_value(json_object_get(j, "trace_id")),
                                "4bf92f3577b34da6a3ce929d0e0e4736");
            assert_string_equal(json_string_value(json_object_get(j, "actor")), "anonymous");
            assert_non_null(strstr(json_string_value(json_object_get(j, "remote")), "127.0.0.1:"));
            assert_true(json_is_number(json_object_get(j, "duration_ms")));
            assert_non_null(json_object_get(j, "time"));
        }
        if (ev && !strcmp(ev, "serve.request") && rid && !strcmp(rid, "req-log-2")) {
            seen2 = 1;
            assert_null(json_object_get(j, "trace_id"));
        }
        json_decref(j);
    }
    assert_true(seen1 && seen2);
    free(log);
}

static void test_readyz(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r;
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "status"), "ready");
    json_t *redis = json_object_get(json_object_get(r.json, "checks"), "redis");
    assert_true(json_is_true(json_object_get(redis, "ok")));
    sv_resp_free(&r);
    sv_stop(&s);

    /* a "Redis" that accepts connections but never answers: 503 within the deadline */
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    assert_true(fd >= 0);
    char url[64], deadline[16] = "300";
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--redis", url, "--ready-timeout", deadline));
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 503);
    assert_string_equal(sv_json_str(&r, "status"), "unready");
    redis = json_object_get(json_object_get(r.json, "checks"), "redis");
    assert_true(json_is_false(json_object_get(redis, "ok")));
    assert_non_null(json_string_value(json_object_get(redis, "error")));
    sv_resp_free(&r);
    /* /healthz is still fine: the process runs */
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_stop(&s);
    close(fd);
}

static void test_malformed_requests(void **state) {
    (void)state;
    make_queue("mq");
    make_queue("a/b");
    make_queue("h\xc3\xa0ng");
    sv_server s;
    /* actions enabled with a token, so a refusal below is about the request itself */
    const char *tf = sv_token_file(
        "tokens-m", "ops read,act,redrive 0123456789abcdef0123456789abcdef-ops\n", 0600);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", tf));
    const char *auth = "Authorization: Bearer 0123456789abcdef0123456789abcdef-ops";
    sv_resp r;

    /* malformed JSON: 400 naming line and column; the queue stays unpaused */
    sv_request(&s, "POST", "/api/queues/mq/pause", SV_HEADERS(auth), "{\n  \"a\": tru }", &r);
    SV_EXPECT(r, 400);
    assert_non_null(strstr(sv_json_str(&r, "error"), "line 2 column"));
    sv_resp_free(&r);
    assert_int_equal(queue_paused("mq"), 0);
    sv_request(&s, "POST", "/api/queues/mq/pause", SV_HEADERS(auth), "[1,2]", &r);
    SV_EXPECT(r, 400);
    sv_resp_free(&r);
    sv_request(&s, "POST", "/api/queues/mq/pause", SV_HEADERS(auth), "{\"a\":1,\"a\":2}", &r);
    SV_EXPECT(r, 400);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("mq"), 0);

    /* a body over the bound, announced by Content-Length: 413 before it is read */
    size_t big = 64 * 1024 + 1; /* the server's bound (FERRY__ADMIN_BODY_MAX) + 1 */
    char *body = malloc(big + 1);
    memset(body, ' ', big);
    body[0] = '{';
    body[big - 1] = '}';
    body[big] = '\0';
    sv_request_len(&s, "POST", "/api/queues/mq/pause", SV_HEADERS(auth), body, big, &r);
    SV_EXPECT(r, 413);
    sv_resp_free(&r);
    /* refused from the headers alone: the 413 comes though no byte of the body is sent */
    char lonely[512];
    int ln = snprintf(lonely, sizeof lonely,
                      "POST /api/queues/mq/pause HTTP/1.1\r\nHost: x\r\n%s\r\n"
                      "Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n",
                      auth);
    int lonely_status = 0;
    char *lonely_ans = sv_raw(&s, lonely, (size_t)ln, &lonely_status);
    if (lonely_status != 413) fail_msg("Content-Length 1e8: %d\n%s", lonely_status, lonely_ans);
    assert_non_null(strstr(lonely_ans, "X-Request-Id: "));
    free(lonely_ans);
    /* the same, chunked (no Content-Length): 413 once the bound is passed */
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST /api/queues/mq/pause HTTP/1.1\r\nHost: x\r\nConnection: close\r\n%s\r\n"
                      "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
                      auth);
    size_t chunk = 16384, nchunks = big / chunk + 2;
    size_t cap = (size_t)hn + nchunks * (chunk + 16) + 16, len = 0;
    char *raw = malloc(cap);
    memcpy(raw, head, (size_t)hn);
    len = (size_t)hn;
    for (size_t i = 0; i < nchunks; i++) {
        len += (size_t)sprintf(raw + len, "%zx\r\n", chunk);
        memset(raw + len, ' ', chunk);
        if (i == 0) raw[len] = '{';
        len += chunk;
        memcpy(raw + len, "\r\n", 2);
        len += 2;
    }
    memcpy(raw + len, "0\r\n\r\n", 5);
    len += 5;
    int status = 0;
    char *ans = sv_raw(&s, raw, len, &status);
    if (status != 413) fail_msg("chunked oversized body: %d\n%s", status, ans);
    free(ans);
    free(raw);
    free(body);
    assert_int_equal(queue_paused("mq"), 0);

    /* a body on GET is refused */
    sv_request(&s, "GET", "/healthz", NULL, "{}", &r);
    SV_EXPECT(r, 400);
    sv_resp_free(&r);

    /* bad percent-encoding, NUL, invalid UTF-8 in a segment: 400 */
    const char *bad_paths[] = {"/api/queues/m%zzq/pause", "/api/queues/m%0/pause",
                               "/api/queues/m%00q/pause", "/api/queues/m%ffq/pause",
                               "/api/queues/m%c3%28/pause"};
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        sv_request(&s, "POST", bad_paths[i], SV_HEADERS(auth), NULL, &r);
        if (r.status != 400) fail_msg("%s: HTTP %ld, want 400\n%s", bad_paths[i], r.status, r.body);
        sv_resp_free(&r);
    }
    /* duplicate query parameters: 400 naming the parameter */
    sv_request(&s, "GET", "/api/queues/mq/jobs?state=failed&state=wait", NULL, NULL, &r);
    SV_EXPECT(r, 400);
    assert_non_null(strstr(sv_json_str(&r, "error"), "\"state\""));
    sv_resp_free(&r);
    /* "%2F" stays inside its segment: the queue "a/b" (not the path /a/b) is asked for */
    sv_request(&s, "GET", "/api/queues/a%2Fb", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "name"), "a/b");
    sv_resp_free(&r);
    /* a decoded segment in UTF-8 reaches the handler as such */
    sv_request(&s, "GET", "/api/queues/h%C3%A0ng", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "name"), "h\xc3\xa0ng");
    sv_resp_free(&r);
    sv_request(&s, "GET", "/api/queues/a/b", NULL, NULL, &r);
    SV_EXPECT(r, 404);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("mq"), 0);

    /* and the same action, well-formed, does pause it */
    sv_request(&s, "POST", "/api/queues/mq/pause", SV_HEADERS(auth), NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("mq"), 1);
    sv_stop(&s);
}

typedef struct conc_arg {
    const sv_server *s;
    long status;
} conc_arg;

/* A chunked body past the drain bound (1 MiB) is not answered: the connection is closed.
 * The request still leaves its access record (status 413) and, on an action route, its
 * audit record, so a refused action is never invisible. */
static void test_huge_chunked_body_logged(void **state) {
    (void)state;
    make_queue("hq");
    sv_server s;
    const char *tf =
        sv_token_file("tokens-h", "ops read,act 0123456789abcdef0123456789abcdef-ops\n", 0600);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", tf, "--log-format", "json"));
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST /api/queues/hq/pause HTTP/1.1\r\nHost: x\r\n"
                      "Authorization: Bearer 0123456789abcdef0123456789abcdef-ops\r\n"
                      "X-Request-Id: req-huge-1\r\nContent-Type: application/json\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n");
    size_t chunk = 64 * 1024, nchunks = 40; /* 2.5 MiB */
    size_t cap = (size_t)hn + nchunks * (chunk + 16) + 16, len = (size_t)hn;
    char *raw = malloc(cap);
    memcpy(raw, head, (size_t)hn);
    for (size_t i = 0; i < nchunks; i++) {
        len += (size_t)sprintf(raw + len, "%zx\r\n", chunk);
        memset(raw + len, ' ', chunk);
        len += chunk;
        memcpy(raw + len, "\r\n", 2);
        len += 2;
    }
    memcpy(raw + len, "0\r\n\r\n", 5);
    len += 5;
    int status = 0;
    char *ans = sv_raw(&s, raw, len, &status);
    free(raw);
    free(ans);
    assert_int_equal(queue_paused("hq"), 0);
    sv_stop(&s);
    char *log = sv_log(&s);
    int access = 0, audit = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) fail_msg("not a JSON line: %s", line);
        const char *ev = json_string_value(json_object_get(j, "event"));
        const char *rid = json_string_value(json_object_get(j, "request_id"));
        if (ev && rid && !strcmp(rid, "req-huge-1")) {
            if (!strcmp(ev, "serve.request") &&
                json_integer_value(json_object_get(j, "status")) == 413)
                access = 1;
            if (!strcmp(ev, "serve.audit") &&
                json_integer_value(json_object_get(j, "status")) == 413)
                audit = 1;
        }
        json_decref(j);
    }
    if (!access || !audit) fail_msg("access %d audit %d in the log:\n%s", access, audit, log);
    free(log);
}

/* Framing two parties could read differently is refused and the connection closed, so
 * nothing can be smuggled in after the request: a repeated Content-Length, one beside
 * Transfer-Encoding, a coding other than chunked; a repeated Authorization (a proxy adding
 * its own would make the caller ambiguous). The queue stays unpaused throughout. */
static void test_ambiguous_framing(void **state) {
    (void)state;
    make_queue("fq");
    sv_server s;
    const char *tf = sv_token_file("tokens-f",
                                   "ops read,act 0123456789abcdef0123456789abcdef-ops\n"
                                   "ro read 0123456789abcdef0123456789abcdef-ro1\n",
                                   0600);
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", tf));
    const char *auth = "Authorization: Bearer 0123456789abcdef0123456789abcdef-ops";
    static const char smuggled[] = "GET /api/nope HTTP/1.1\r\nHost: x\r\n\r\n";
    struct {
        const char *headers; /* between the auth line and the blank line */
        const char *body;
        const char *error;
    } cases[] = {
        {"Content-Length: 2\r\nContent-Length: 38\r\n", "{}", "Content-Length is given more"},
        {"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n",
         "Content-Length and Transfer-Encoding"},
        {"Transfer-Encoding: identity, chunked\r\n", "2\r\n{}\r\n0\r\n\r\n", "other than chunked"},
        {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n",
         "Transfer-Encoding is given more"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char req[1024];
        int n = snprintf(req, sizeof req,
                         "POST /api/queues/fq/pause HTTP/1.1\r\nHost: x\r\n%s\r\n"
                         "Content-Type: application/json\r\n%s\r\n%s%s",
                         auth, cases[i].headers, cases[i].body, smuggled);
        int status = 0;
        char *ans = sv_raw(&s, req, (size_t)n, &status);
        if (status != 400 || !strstr(ans, cases[i].error))
            fail_msg("case %zu: %d\n%s", i, status, ans);
        /* one answer only: the bytes after the first request were not served */
        if (strstr(ans, "404") || strstr(strstr(ans, "HTTP/1.1") + 1, "HTTP/1.1"))
            fail_msg("case %zu: a second request was served\n%s", i, ans);
        assert_non_null(strstr(ans, "Connection: close"));
        free(ans);
        assert_int_equal(queue_paused("fq"), 0);
    }
    /* two Authorization headers, whichever comes first: 400, nothing changed */
    const char *ro = "Authorization: Bearer 0123456789abcdef0123456789abcdef-ro1";
    const char *pairs[2][2] = {{auth, ro}, {ro, auth}};
    for (int i = 0; i < 2; i++) {
        sv_resp r;
        sv_request(&s, "POST", "/api/queues/fq/pause", SV_HEADERS(pairs[i][0], pairs[i][1]), "{}",
                   &r);
        SV_EXPECT(r, 400);
        assert_non_null(strstr(sv_json_str(&r, "error"), "Authorization is given more"));
        sv_resp_free(&r);
        assert_int_equal(queue_paused("fq"), 0);
    }
    /* the well-framed request still works */
    sv_resp r;
    sv_request(&s, "POST", "/api/queues/fq/pause", SV_HEADERS(auth), "{}", &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("fq"), 1);
    sv_stop(&s);
}

static void *conc_request(void *p) {
    conc_arg *a = p;
    sv_resp r;
    sv_request(a->s, "GET", "/readyz", NULL, NULL, &r);
    a->status = r.status;
    sv_resp_free(&r);
    return NULL;
}

static void test_concurrent(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    enum { N = 20 };
    pthread_t t[N];
    conc_arg a[N];
    for (int i = 0; i < N; i++) {
        a[i] = (conc_arg){&s, 0};
        assert_int_equal(pthread_create(&t[i], NULL, conc_request, &a[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].status, 200);
    }
    sv_stop(&s);
}

/* A keep-alive connection that has had its answer (so the server holds it, idle). */
static int open_idle_connection(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) fail_msg("connect: %s", strerror(errno));
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    if (write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) fail_msg("write");
    char buf[2048] = "";
    size_t n = 0;
    while (!strstr(buf, "{\"status\":\"ok\"}")) {
        ssize_t r = read(fd, buf + n, sizeof buf - n - 1);
        if (r <= 0) fail_msg("no answer on an idle connection");
        n += (size_t)r;
        buf[n] = '\0';
    }
    return fd;
}

static void test_connection_limit(void **state) {
    (void)state;
    sv_server s;
    /* every connection of this test comes from 127.0.0.1: let one address hold all 64 */
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--connections-per-ip", "64"));
    enum { LIMIT = 64 };
    int fds[LIMIT];
    for (int i = 0; i < LIMIT; i++)
        fds[i] = open_idle_connection(s.port);
    sv_resp r;
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    assert_int_equal(r.status, 0); /* the 65th connection is closed at once */
    sv_resp_free(&r);
    close(fds[0]);
    long long deadline = th_mono_ms() + 10000;
    for (;;) { /* the server sees the close on its next poll */
        sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
        long st = r.status;
        sv_resp_free(&r);
        if (st == 200) break;
        if (th_mono_ms() > deadline) fail_msg("no room after a connection closed");
        th_sleep_ms(10);
    }
    for (int i = 1; i < LIMIT; i++)
        close(fds[i]);
    sv_stop(&s);
}

/* /metrics refreshes the system-wide gauges before it renders: a job added between two
 * scrapes shows in the second. */
static void test_metrics(void **state) {
    (void)state;
    ferry_queue *q = th_queue_open(prefix, "mx", NULL, 0);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r;
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    char *ct = sv_header(&r, "Content-Type");
    assert_string_equal(ct, "text/plain; version=0.0.4; charset=utf-8");
    free(ct);
    assert_non_null(strstr(r.body, "ferry_build_info{"));
    assert_non_null(strstr(r.body, "\nferry_queue_jobs{queue=\"mx\",state=\"wait\"} 0\n"));
    sv_resp_free(&r);
    ferry_job_spec job = {.name = "m", .data_json = "{}"};
    char *id = NULL;
    ferry_error e = {0};
    if (ferry_queue_add(q, &job, &id, &e)) fail_msg("add: %s", e.message);
    free(id);
    ferry_queue_close(q);
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    if (!strstr(r.body, "\nferry_queue_jobs{queue=\"mx\",state=\"wait\"} 1\n"))
        fail_msg("no ferry_queue_jobs 1 for mx:\n%s", r.body);
    sv_resp_free(&r);
    sv_request(&s, "HEAD", "/metrics", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_int_equal(r.body_len, 0);
    sv_resp_free(&r);
    sv_stop(&s);
}

/* A request still running when SIGTERM comes is answered, and the exit status is 0: the
 * request is a /readyz against a Redis that never answers (it takes the whole deadline). */
typedef struct inflight_arg {
    const sv_server *s;
    long status;
} inflight_arg;

static void *slow_request(void *p) {
    inflight_arg *a = p;
    sv_resp r;
    sv_request(a->s, "GET", "/readyz", NULL, NULL, &r);
    a->status = r.status;
    sv_resp_free(&r);
    return NULL;
}

/* The connection the readiness check made to the silent "Redis" (accepted within 10 s),
 * or -1: once it is there, the /readyz handler is running. */
static int accept_within(int fd) {
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return accept(fd, NULL, NULL);
}

static void test_sigterm_in_flight(void **state) {
    (void)state;
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--redis", url, "--ready-timeout", "1500"));
    inflight_arg a = {&s, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_request, &a), 0);
    /* the readiness check has connected to the silent Redis: the request is in flight */
    int conn = accept_within(fd);
    assert_true(conn >= 0);
    sv_stop(&s); /* SIGTERM now; exit 0 */
    pthread_join(t, NULL);
    assert_int_equal(a.status, 503); /* answered (unready), not cut off */
    close(conn);
    close(fd);
}

/* A request longer than --stop-timeout: the stop does not wait for it past the grace, says
 * so, and the exit status is still 0. */
static void test_stop_timeout(void **state) {
    (void)state;
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    assert_true(fd >= 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--redis", url, "--ready-timeout", "3000",
                          "--stop-timeout", "100"));
    inflight_arg a = {&s, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slow_request, &a), 0);
    int conn = accept_within(fd);
    assert_true(conn >= 0);
    sv_stop(&s);
    pthread_join(t, NULL);
    char *log = sv_log(&s);
    if (!strstr(log, "still in progress after 100 ms")) fail_msg("log:\n%s", log);
    free(log);
    close(conn);
    close(fd);
}

static void test_port_taken(void **state) {
    (void)state;
    int port = 0;
    int fd = th_listen_local(AF_INET, 16, &port);
    assert_true(fd >= 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    cli_run r;
    CLI(r, "serve", "--listen", addr, "--redis", cli_url());
    CLI_EXPECT(r, 3);
    assert_non_null(strstr(r.err, "could not start"));
    cli_run_free(&r);
    CLI(r, "serve", "--listen", "example.com:80");
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    close(fd);
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_and_headers),
        cmocka_unit_test(test_access_log),
        cmocka_unit_test(test_readyz),
        cmocka_unit_test(test_malformed_requests),
        cmocka_unit_test(test_ambiguous_framing),
        cmocka_unit_test(test_huge_chunked_body_logged),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_connection_limit),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_sigterm_in_flight),
        cmocka_unit_test(test_stop_timeout),
        cmocka_unit_test(test_port_taken),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
