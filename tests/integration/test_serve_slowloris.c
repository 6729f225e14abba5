/* test_serve_slowloris.c - `ferry serve` against slow clients, over real sockets against the
 * real binary:
 *  - 64 connections from 127.0.0.1 that each trickle a header line a second: only 32 (the
 *    per-address limit) are held, the rest closed at once; /healthz from 127.0.0.2 answers
 *    meanwhile; the 32 are closed about 10 s after they connected (the request head's
 *    deadline, whatever the idle timeout says), and the log says so;
 *  - with --connections-per-ip 64 the tricklers fill the server, and the head deadline alone
 *    frees it within about 10 s;
 *  - a request that passes its head and trickles its body a byte a second is closed about
 *    30 s after the connection began;
 *  - a kept-alive connection that trickles its second request head is closed about 10 s
 *    after its first answer. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ferry/admin.h"
#include "support/sv.h"

#define TRICKLERS 64
#define OPS_SECRET "ops-0123456789abcdef0123456789abcdef"

/* A connection to the server from the loopback address `from` ("127.0.0.2"), or -1 when the
 * connect failed. */
static int connect_from(const sv_server *s, const char *from) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct sockaddr_in src = {.sin_family = AF_INET};
    inet_pton(AF_INET, from, &src.sin_addr);
    if (bind(fd, (struct sockaddr *)&src, sizeof src))
        fail_msg("bind %s: %s", from, strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_all(int fd, const char *text) {
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = send(fd, text + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) return; /* closed by the server: the caller finds out by reading */
        off += (size_t)w;
    }
}

/* 1 when the server has closed fd (end of file or reset), 0 while it is open. Reads and
 * drops whatever answer bytes came. Does not block. */
static int peer_closed(int fd) {
    char buf[4096];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) return 1;
        if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
    }
}

/* Read what an event stream sent so far without blocking: adds the "event: overview" lines
 * seen to *events (an event split over two reads may be missed; the callers want several);
 * returns 1 when the server has closed the stream. */
static int stream_drain(int fd, int *events) {
    char buf[8192];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
        if (r == 0) return 1;
        if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : 1;
        buf[r] = 0;
        for (const char *p = buf; (p = strstr(p, "event: overview")); p++)
            (*events)++;
    }
}

/* GET /healthz from `from` on a connection of its own: the status, 0 when no answer came
 * within timeout_ms. */
static int healthz_from(const sv_server *s, const char *from, int timeout_ms) {
    int fd = connect_from(s, from);
    if (fd < 0) return 0;
    send_all(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    char buf[4096];
    size_t n = 0;
    long long until = th_mono_ms() + timeout_ms;
    while (n < sizeof buf - 1) {
        long long left = until - th_mono_ms();
        if (left <= 0) break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)left) <= 0) break;
        ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) status = 0;
    return status;
}

typedef struct tricklers {
    int fd[TRICKLERS];
    long long closed_at[TRICKLERS]; /* ms since t0 the server closed it; 0 = open */
    long long t0;
    int n;
} tricklers;

/* Open n connections from 127.0.0.1 that send a request line and then nothing whole. */
static void tricklers_open(tricklers *t, const sv_server *s, int n) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->t0 = th_mono_ms();
    for (int i = 0; i < n; i++) {
        t->fd[i] = connect_from(s, "127.0.0.1");
        if (t->fd[i] < 0) fail_msg("connect %d: %s", i, strerror(errno));
        send_all(t->fd[i], "GET /healthz HTTP/1.1\r\nHost: t\r\n");
    }
}

/* One header line on every open connection; note the ones the server closed. */
static void tricklers_step(tricklers *t) {
    long long now = th_mono_ms() - t->t0;
    for (int i = 0; i < t->n; i++) {
        if (t->closed_at[i]) continue;
        if (peer_closed(t->fd[i])) {
            t->closed_at[i] = now ? now : 1;
            continue;
        }
        send_all(t->fd[i], "X-Slow: 1\r\n");
    }
}

static int tricklers_open_count(tricklers *t) {
    int open = 0;
    for (int i = 0; i < t->n; i++)
        if (!t->closed_at[i]) open++;
    return open;
}

static void tricklers_close(tricklers *t) {
    for (int i = 0; i < t->n; i++)
        close(t->fd[i]);
}

static void test_per_ip_limit_and_head_deadline(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix()));
    /* sv_start's own /healthz connections count for 127.0.0.1 until libmicrohttpd has
     * cleaned them up (its daemon thread, at once after they close) */
    th_sleep_ms(500);
    tricklers t;
    tricklers_open(&t, &s, TRICKLERS);
    th_sleep_ms(1000);
    tricklers_step(&t);
    th_sleep_ms(200);
    tricklers_step(&t);
    /* one address holds 32; the others were closed at once */
    int held = tricklers_open_count(&t);
    printf("# held by one address: %d of %d\n", held, TRICKLERS);
    assert_int_equal(held, FERRY_ADMIN_CONNECTIONS_PER_IP_DEFAULT);
    /* another client is served meanwhile, and promptly */
    long long t1 = th_mono_ms();
    int st = healthz_from(&s, "127.0.0.2", 3000);
    if (st != 200) fail_msg("GET /healthz from 127.0.0.2 during the attack: %d", st);
    printf("# /healthz from 127.0.0.2 during the attack: %lld ms\n", th_mono_ms() - t1);
    /* trickle on: the head deadline closes each about 10 s after it connected */
    while (tricklers_open_count(&t) && th_mono_ms() - t.t0 < 20000) {
        th_sleep_ms(500);
        tricklers_step(&t);
    }
    long long first = 0, last = 0;
    for (int i = 0; i < t.n; i++) {
        if (t.closed_at[i] < 1500) continue; /* the ones over the per-address limit */
        if (!first || t.closed_at[i] < first) first = t.closed_at[i];
        if (t.closed_at[i] > last) last = t.closed_at[i];
    }
    printf("# tricklers closed between %lld and %lld ms after connecting\n", first, last);
    assert_int_equal(tricklers_open_count(&t), 0);
    if (first < FERRY_ADMIN_HEAD_TIMEOUT_S * 1000 - 500)
        fail_msg("a trickler was closed after %lld ms, before its deadline", first);
    if (last > FERRY_ADMIN_HEAD_TIMEOUT_S * 1000 + 2500)
        fail_msg("a trickler lived %lld ms, past its deadline", last);
    tricklers_close(&t);
    /* the server is free again */
    assert_int_equal(healthz_from(&s, "127.0.0.1", 3000), 200);
    sv_stop(&s);
    char *log = sv_log(&s);
    if (!strstr(log, "whose request head took over 10 s") || !strstr(log, "127.0.0.1:"))
        fail_msg("no log record of the closed connections:\n%s", log);
    free(log);
}

static void test_head_deadline_frees_a_full_server(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix(), "--connections-per-ip", "64"));
    tricklers t;
    tricklers_open(&t, &s, TRICKLERS);
    th_sleep_ms(1000);
    tricklers_step(&t);
    assert_int_equal(tricklers_open_count(&t), TRICKLERS); /* every slot taken */
    /* no other client gets in while they hold them ... */
    assert_int_equal(healthz_from(&s, "127.0.0.2", 1500), 0);
    /* ... but only until their heads' deadline */
    while (tricklers_open_count(&t) && th_mono_ms() - t.t0 < 20000) {
        th_sleep_ms(500);
        tricklers_step(&t);
    }
    assert_int_equal(tricklers_open_count(&t), 0);
    long long t1 = th_mono_ms();
    int st = healthz_from(&s, "127.0.0.2", 5000);
    if (st != 200) fail_msg("GET /healthz after the tricklers were closed: %d", st);
    printf("# server free %lld ms after the attack began\n", th_mono_ms() - t.t0);
    (void)t1;
    tricklers_close(&t);
    sv_stop(&s);
}

static void test_body_deadline(void **state) {
    (void)state;
    const char *tokens = sv_token_file("tokens", "ops read,act " OPS_SECRET "\n", 0600);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix(), "--token-file", tokens));
    /* an event stream open meanwhile has no deadline: it outlives the 30 s */
    int sfd = connect_from(&s, "127.0.0.3");
    assert_true(sfd >= 0);
    send_all(sfd, "GET /api/stream?interval=1 HTTP/1.1\r\nHost: t\r\n\r\n");
    int events = 0;
    int fd = connect_from(&s, "127.0.0.1");
    assert_true(fd >= 0);
    long long t0 = th_mono_ms();
    send_all(fd, "POST /api/queues/slowbody/retry HTTP/1.1\r\nHost: t\r\n"
                 "Authorization: Bearer " OPS_SECRET "\r\n"
                 "Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n{");
    long long closed = 0;
    while (th_mono_ms() - t0 < 45000) {
        th_sleep_ms(1000);
        if (stream_drain(sfd, &events)) fail_msg("the event stream was closed");
        if (peer_closed(fd)) {
            closed = th_mono_ms() - t0;
            break;
        }
        send_all(fd, " ");
    }
    close(fd);
    /* 3 s more past the 30 s (the stream began before t0): events still come */
    events = 0;
    for (int i = 0; i < 3; i++) {
        th_sleep_ms(1000);
        if (stream_drain(sfd, &events)) fail_msg("the event stream was closed past 30 s");
    }
    close(sfd);
    if (events < 1) fail_msg("no event on the stream past 30 s");
    printf("# body trickler closed after %lld ms\n", closed);
    if (!closed) fail_msg("a body trickled a byte a second was not closed within 45 s");
    if (closed < FERRY_ADMIN_REQUEST_TIMEOUT_S * 1000 - 1000 ||
        closed > FERRY_ADMIN_REQUEST_TIMEOUT_S * 1000 + 3000)
        fail_msg("closed after %lld ms, want about %d s", closed, FERRY_ADMIN_REQUEST_TIMEOUT_S);
    sv_stop(&s);
    char *log = sv_log(&s);
    if (!strstr(log, "whose request took over 30 s")) fail_msg("no log record:\n%s", log);
    free(log);
}

static void test_kept_alive_head_deadline(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix()));
    int fd = connect_from(&s, "127.0.0.1");
    assert_true(fd >= 0);
    /* a whole request first: answered, and the connection kept */
    send_all(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    char buf[2048];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    ssize_t r = recv(fd, buf, sizeof buf - 1, 0);
    assert_true(r > 0);
    buf[r] = '\0';
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    long long t0 = th_mono_ms();
    send_all(fd, "GET /healthz HTTP/1.1\r\n");
    long long closed = 0;
    while (th_mono_ms() - t0 < 20000) {
        th_sleep_ms(500);
        if (peer_closed(fd)) {
            closed = th_mono_ms() - t0;
            break;
        }
        send_all(fd, "X-Slow: 1\r\n");
    }
    close(fd);
    printf("# second request head trickled: closed after %lld ms\n", closed);
    if (!closed || closed < FERRY_ADMIN_HEAD_TIMEOUT_S * 1000 - 1000 ||
        closed > FERRY_ADMIN_HEAD_TIMEOUT_S * 1000 + 2500)
        fail_msg("closed after %lld ms, want about %d s", closed, FERRY_ADMIN_HEAD_TIMEOUT_S);
    sv_stop(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_ip_limit_and_head_deadline),
        cmocka_unit_test(test_head_deadline_frees_a_full_server),
        cmocka_unit_test(test_body_deadline),
        cmocka_unit_test(test_kept_alive_head_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
