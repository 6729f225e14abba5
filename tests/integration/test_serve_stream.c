/* test_serve_stream.c - GET /api/stream of `ferry serve` (Server-Sent Events) over a plain
 * socket against the real binary and the fixture's Redis: "retry: 3000" and the first
 * "event: overview" (with the overview's JSON on one data line) within 1 s, the next after
 * the interval, a ": keepalive" comment within 5 s when the interval is longer, a bad
 * interval and an unknown query parameter refused (400), a token needed with
 * --require-read-token, the 4th stream from one client address refused with 429 (3 per
 * client) while other addresses still get theirs, the 9th stream refused with 429 while 8
 * are open (and a slot free again once one is closed), SIGTERM with two streams open: the
 * streams end and the server exits 0 well within its stop timeout; the stream's access
 * line is logged when it ends; and, against a private Redis paused with CLIENT PAUSE,
 * streams that wait behind another's slow overview still get their keepalives, every
 * stream gets the error event, and SIGTERM ends the server within one overview's budget. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis/conn.h"
#include "support/sv.h"

static const char *prefix;

#define SECRET "reader-0123456789abcdef0123456789abcdef"

typedef struct sse {
    int fd;
    char *buf;
    size_t n, cap;
    int closed; /* the server closed the connection */
} sse;

/* strstr ignoring ASCII case (header names). */
static const char *find_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0) return hay;
    return NULL;
}

/* A stream request from source address `from` (a 127.x.y.z, NULL: the default). */
static void sse_open_from(sse *c, const sv_server *s, const char *path, const char *auth,
                          const char *from) {
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0) fail_msg("socket: %s", strerror(errno));
    if (from) {
        struct sockaddr_in b = {.sin_family = AF_INET};
        inet_pton(AF_INET, from, &b.sin_addr);
        if (bind(c->fd, (struct sockaddr *)&b, sizeof b))
            fail_msg("bind %s: %s", from, strerror(errno));
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a)) fail_msg("connect: %s", strerror(errno));
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s\r\n", path,
                     auth ? "Authorization: Bearer " : "", auth ? auth : "", auth ? "\r\n" : "");
    if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n) fail_msg("send: %s", strerror(errno));
    c->cap = 1 << 16;
    c->buf = malloc(c->cap);
    c->buf[0] = '\0';
}

static void sse_open(sse *c, const sv_server *s, const char *path, const char *auth) {
    sse_open_from(c, s, path, auth, NULL);
}

static void sse_close(sse *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
}

/* Occurrences of needle in what was read so far. */
static int sse_count(const sse *c, const char *needle) {
    int k = 0;
    for (const char *p = c->buf; (p = strstr(p, needle)); p += strlen(needle))
        k++;
    return k;
}

/* Read until `needle` occurs `want` times or timeout_ms pass (or the server closes).
 * Returns 1 when it did. */
static int sse_wait(sse *c, const char *needle, int want, long long timeout_ms) {
    long long deadline = th_mono_ms() + timeout_ms;
    for (;;) {
        if (sse_count(c, needle) >= want) return 1;
        long long left = deadline - th_mono_ms();
        if (left <= 0 || c->closed) return 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) continue;
        if (c->n + 4097 > c->cap) c->buf = realloc(c->buf, c->cap *= 2);
        ssize_t r = recv(c->fd, c->buf + c->n, 4096, 0);
        if (r <= 0) {
            c->closed = 1;
            continue;
        }
        c->n += (size_t)r;
        c->buf[c->n] = '\0';
    }
}

static void test_events(void **state) {
    (void)state;
    ferry_queue_close(th_queue_open(prefix, "sq", NULL, 0));
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--log-format", "json"));
    sse c;
    long long t0 = th_mono_ms();
    sse_open(&c, &s, "/api/stream?interval=1", NULL);
    if (!sse_wait(&c, "\n\n", 1, 1000)) /* the first event's end (headers end \r\n\r\n) */
        fail_msg("no first event within 1 s:\n%s", c.buf);
    assert_true(th_mono_ms() - t0 <= 1000);
    assert_non_null(strstr(c.buf, "HTTP/1.1 200"));
    assert_non_null(find_ci(c.buf, "Content-Type: text/event-stream"));
    assert_non_null(find_ci(c.buf, "Cache-Control: no-store"));
    char *retry = strstr(c.buf, "retry: 3000\n"), *ev = strstr(c.buf, "event: overview\ndata: ");
    assert_non_null(retry);
    assert_non_null(ev);
    assert_true(retry < ev);
    /* the data line is the overview's JSON */
    char *data = ev + strlen("event: overview\ndata: ");
    char *eol = strchr(data, '\n');
    assert_non_null(eol);
    json_t *j = json_loadb(data, (size_t)(eol - data), 0, NULL);
    if (!j) fail_msg("data is not JSON:\n%s", c.buf);
    assert_non_null(json_object_get(j, "queues"));
    assert_non_null(json_object_get(j, "totals"));
    assert_true(json_is_integer(json_object_get(j, "at")));
    json_decref(j);
    /* the next one after the interval (1 s), not before */
    assert_int_equal(sse_count(&c, "event: overview"), 1);
    if (!sse_wait(&c, "event: overview", 2, 2500)) fail_msg("no second event:\n%s", c.buf);
    long long second = th_mono_ms() - t0;
    assert_true(second >= 900);
    if (!sse_wait(&c, "event: overview", 3, 2500)) fail_msg("no third event:\n%s", c.buf);
    sse_close(&c);

    /* a long interval: keepalive comments keep the connection alive */
    sse_open(&c, &s, "/api/stream?interval=30", NULL);
    if (!sse_wait(&c, "event: overview", 1, 1000)) fail_msg("no first event:\n%s", c.buf);
    t0 = th_mono_ms();
    if (!sse_wait(&c, ": keepalive\n\n", 1, 5500)) fail_msg("no keepalive in 5 s:\n%s", c.buf);
    assert_true(th_mono_ms() - t0 <= 5000);
    assert_int_equal(sse_count(&c, "event: overview"), 1);
    /* past the 10 s idle timeout of a connection, still open */
    if (!sse_wait(&c, ": keepalive\n\n", 3, 12000)) fail_msg("stream ended:\n%s", c.buf);
    assert_false(c.closed);
    sse_close(&c);

    /* bad intervals */
    sv_expect_error(&s, "GET", "/api/stream?interval=0", NULL, NULL, 400, "interval");
    sv_expect_error(&s, "GET", "/api/stream?interval=61", NULL, NULL, 400, "interval");
    sv_expect_error(&s, "GET", "/api/stream?interval=2x", NULL, NULL, 400, "interval");
    sv_expect_error(&s, "GET", "/api/stream?interval=", NULL, NULL, 400, "interval");
    sv_expect_error(&s, "GET", "/api/stream?intervall=2", NULL, NULL, 400,
                    "unknown query parameter \"intervall\"");
    sv_expect_error(&s, "GET", "/api/stream?interval=2&x=1", NULL, NULL, 400,
                    "unknown query parameter \"x\"");
    sv_stop(&s);
    /* one access line per stream, written when it ended */
    char *log = sv_log(&s);
    int lines = 0;
    for (const char *p = log; (p = strstr(p, "\"path\":\"/api/stream\"")); p++)
        if (strstr(p, "\"status\":200")) lines++;
    if (lines < 2) fail_msg("want the streams' access lines:\n%s", log);
    free(log);
}

static void test_token(void **state) {
    (void)state;
    const char *tokens = sv_token_file("tokens", "reader read " SECRET "\n", 0600);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", tokens, "--require-read-token"));
    sv_expect_error(&s, "GET", "/api/stream", NULL, NULL, 401, "needs a token");
    sse c;
    sse_open(&c, &s, "/api/stream", SECRET);
    if (!sse_wait(&c, "event: overview", 1, 1000)) fail_msg("no event:\n%s", c.buf);
    sse_close(&c);
    sv_stop(&s);
}

static void test_limit(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    /* 3 per client address: 127.0.0.1's 4th is refused, with Retry-After */
    static const char *const from[8] = {"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2",
                                        "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"};
    sse c[8];
    for (int i = 0; i < 3; i++) {
        sse_open_from(&c[i], &s, "/api/stream?interval=60", NULL, from[i]);
        if (!sse_wait(&c[i], "event: overview", 1, 3000)) fail_msg("stream %d:\n%s", i, c[i].buf);
    }
    sse x;
    sse_open_from(&x, &s, "/api/stream?interval=60", NULL, "127.0.0.1");
    if (!sse_wait(&x, "}", 1, 3000)) fail_msg("no answer to the 4th stream:\n%s", x.buf);
    assert_non_null(strstr(x.buf, " 429 "));
    assert_non_null(strstr(x.buf, "3 event streams are open from 127.0.0.1"));
    assert_non_null(find_ci(x.buf, "\r\nRetry-After: 30\r\n"));
    sse_close(&x);
    /* other addresses still get theirs, up to 8 in all */
    for (int i = 3; i < 8; i++) {
        sse_open_from(&c[i], &s, "/api/stream?interval=60", NULL, from[i]);
        if (!sse_wait(&c[i], "event: overview", 1, 3000)) fail_msg("stream %d:\n%s", i, c[i].buf);
    }
    sse_open_from(&x, &s, "/api/stream?interval=60", NULL, "127.0.0.4");
    if (!sse_wait(&x, "}", 1, 3000)) fail_msg("no answer to the 9th stream:\n%s", x.buf);
    assert_non_null(strstr(x.buf, " 429 "));
    assert_non_null(strstr(x.buf, "8 event streams are open already"));
    sse_close(&x);
    /* other requests still answer */
    sv_resp r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    /* one closed: the server sees the hang-up while the stream waits (it looks every 250
     * ms), not only at its next keepalive 4 s on, so a second later its slot is free */
    sse_close(&c[0]);
    th_sleep_ms(1000);
    sse n;
    sse_open_from(&n, &s, "/api/stream?interval=60", NULL, "127.0.0.4");
    if (!sse_wait(&n, "event: overview", 1, 3000)) fail_msg("slot not freed:\n%s", n.buf);
    sse_close(&n);
    for (int i = 1; i < 8; i++)
        sse_close(&c[i]);
    sv_stop(&s);
}

static void test_sigterm(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--stop-timeout", "8000"));
    sse a, b;
    sse_open(&a, &s, "/api/stream?interval=60", NULL);
    sse_open(&b, &s, "/api/stream?interval=60", NULL);
    assert_true(sse_wait(&a, "event: overview", 1, 3000));
    assert_true(sse_wait(&b, "event: overview", 1, 3000));
    long long t0 = th_mono_ms();
    int code = sv_stop_code(&s, 8000);
    long long took = th_mono_ms() - t0;
    if (code != 0) {
        char *log = sv_log(&s);
        fail_msg("exit %d after SIGTERM:\n%s", code, log);
    }
    if (took > 2000) fail_msg("the stop took %lld ms with 2 streams open", took);
    /* both streams ended: the last chunk, or the connection closed */
    assert_true(sse_wait(&a, "\r\n0\r\n\r\n", 1, 1000) || a.closed);
    assert_true(sse_wait(&b, "\r\n0\r\n\r\n", 1, 1000) || b.closed);
    sse_close(&a);
    sse_close(&b);
}

/* A private redis-server on a free loopback port (this test pauses it); *pid to kill. */
static char *private_redis(pid_t *pid) {
    int port = 0;
    int fd = th_listen_local(AF_INET, 1, &port);
    if (fd < 0) fail_msg("no free port");
    close(fd);
    char ports[16];
    snprintf(ports, sizeof ports, "%d", port);
    const char *argv[] = {
        "/usr/bin/redis-server", "--port", ports,   "--bind",    "127.0.0.1", "--save", "",
        "--appendonly",          "no",     "--dir", th_tmpdir(), NULL};
    char log[256];
    snprintf(log, sizeof log, "%s/private-redis.log", th_tmpdir());
    char **env = th_env_with(NULL, NULL);
    *pid = th_spawn(argv, env, NULL, log, log, 0);
    free(env);
    static char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    long long deadline = th_mono_ms() + 10000;
    for (;;) {
        ferry_redis_options o;
        ferry_redis_options_init(&o);
        o.url = url;
        ferry_conn *c = NULL;
        ferry_error err = {0};
        if (!ferry__conn_open(&o, NULL, &c, &err)) {
            redisReply *r = th_cmd_ok(c, "PING");
            freeReplyObject(r);
            ferry__conn_close(c);
            return url;
        }
        if (th_mono_ms() > deadline) fail_msg("the private redis did not start: %s", err.message);
        th_sleep_ms(20);
    }
}

static void test_slow_redis(void **state) {
    (void)state;
    pid_t rpid = 0;
    const char *url = private_redis(&rpid);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = url;
    ferry_conn *ctl = NULL;
    ferry_error err = {0};
    if (ferry__conn_open(&o, NULL, &ctl, &err)) fail_msg("connect: %s", err.message);
    freeReplyObject(th_cmd_ok(ctl, "HSET %s:slow:meta version bullmq:6.7.0", prefix));
    /* one overview's budget: --timeout 3000 is connect and command, so 6 s at most */
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix, "--redis", url, "--timeout", "3000", "--stop-timeout",
                          "30000"));
    static const char *const from[3] = {"127.0.0.1", "127.0.0.2", "127.0.0.3"};
    sse c[3];
    for (int i = 0; i < 3; i++) {
        sse_open_from(&c[i], &s, "/api/stream?interval=1", NULL, from[i]);
        if (!sse_wait(&c[i], "event: overview", 1, 3000)) fail_msg("stream %d:\n%s", i, c[i].buf);
    }
    /* Redis stops answering (connections are accepted, commands wait) */
    freeReplyObject(th_cmd_ok(ctl, "CLIENT PAUSE 60000 ALL"));
    long long t0 = th_mono_ms();
    int kept[3] = {0}, errs[3] = {0};
    int base_ka[3];
    for (int i = 0; i < 3; i++)
        base_ka[i] = sse_count(&c[i], ": keepalive");
    /* one stream builds (and waits for Redis); the others keep sending keepalives */
    while (th_mono_ms() - t0 < 5500) {
        for (int i = 0; i < 3; i++) {
            sse_wait(&c[i], "\n\n", 1 << 30, 20);
            kept[i] = sse_count(&c[i], ": keepalive") > base_ka[i];
        }
    }
    int keepalives = kept[0] + kept[1] + kept[2];
    if (keepalives < 2)
        fail_msg("%d of 3 streams got a keepalive within 5.5 s of the pause:\n%s\n%s\n%s",
                 keepalives, c[0].buf, c[1].buf, c[2].buf);
    /* the failed build's error event goes to every stream (shared, not rebuilt by each) */
    for (int i = 0; i < 3; i++) {
        errs[i] = sse_wait(&c[i], "event: error", 1, 9000 - (th_mono_ms() - t0));
        if (!errs[i]) fail_msg("stream %d got no error event within 9 s:\n%s", i, c[i].buf);
    }
    assert_non_null(strstr(c[0].buf, "\"status\":503"));
    /* stop: within one overview's budget (6 s) and some, not one per waiting stream */
    long long t1 = th_mono_ms();
    int code = sv_stop_code(&s, 30000);
    long long took = th_mono_ms() - t1;
    if (code != 0) fail_msg("exit %d after SIGTERM:\n%s", code, sv_log(&s));
    if (took > 7500) fail_msg("the stop took %lld ms with Redis paused", took);
    print_message("paused Redis: %d/3 keepalives within 5.5 s, stop took %lld ms\n", keepalives,
                  took);
    for (int i = 0; i < 3; i++)
        sse_close(&c[i]);
    ferry__conn_close(ctl);
    kill(rpid, SIGKILL);
    waitpid(rpid, NULL, 0);
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events),     cmocka_unit_test(test_token),
        cmocka_unit_test(test_limit),      cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_slow_redis),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
