/* test_conn_fake.c - the connection layer's limits and connect retries, against a fake
 * Redis served from a thread of this process (it decodes requests with hiredis' reader,
 * answers SCRIPT LOAD with the script's SHA-1 and PING with PONG, and sends crafted replies
 * to the commands below) and, for the request limit, the fixture's real Redis:
 * - the decoded-memory budget of one reply (many tiny elements, nested arrays, reset
 *   between replies);
 * - a request over 512 MiB refused before hiredis encodes it (its 0.14 formatter counts
 *   lengths in an int, so an argument near 4 GiB would overflow the heap);
 * - a unix socket whose listen backlog is full: the connect waits for room until the
 *   deadline instead of failing at once. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "redis/scripts.h"
#include "support/th.h"
#include "util/clock.h"

#define ACCEPT_WAIT_MS 20000

/* ---- the fake server ---------------------------------------------------------------- */

typedef struct fake_redis {
    int lfd;
    int fillers;         /* connections queued ahead of the client: accepted and closed */
    int accept_delay_ms; /* wait this long before accepting anything */
    int served;          /* out: client connections served */
} fake_redis;

static int send_all(int fd, const char *p, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL); /* the client may be gone: no SIGPIPE */
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* `count` copies of the empty status reply "+\r\n" after a header, in one buffer. */
static int send_tiny_elements(int fd, const char *header, long count) {
    size_t hlen = strlen(header), len = hlen + 3 * (size_t)count;
    char *b = malloc(len);
    if (!b) return -1;
    memcpy(b, header, hlen);
    for (long i = 0; i < count; i++)
        memcpy(b + hlen + 3 * (size_t)i, "+\r\n", 3);
    int rc = send_all(fd, b, len);
    free(b);
    return rc;
}

static int arg_is(const redisReply *cmd, size_t i, const char *s) {
    return cmd->elements > i && cmd->element[i]->type == REDIS_REPLY_STRING &&
           strcasecmp(cmd->element[i]->str, s) == 0;
}

static long arg_long(const redisReply *cmd, size_t i) {
    return cmd->elements > i ? strtol(cmd->element[i]->str, NULL, 10) : 0;
}

/* TINY n: an array of n empty statuses. NESTED k n: an array of k such arrays. */
static int answer(int fd, const redisReply *cmd) {
    if (arg_is(cmd, 0, "SCRIPT") && cmd->elements == 3) {
        ferry_script s = {
            .name = "fake", .source = cmd->element[2]->str, .source_len = cmd->element[2]->len};
        char sha[41], out[64];
        if (ferry__script_sha1(&s, sha) != 0) return -1;
        snprintf(out, sizeof out, "$40\r\n%s\r\n", sha);
        return send_all(fd, out, strlen(out));
    }
    if (arg_is(cmd, 0, "PING")) return send_all(fd, "+PONG\r\n", 7);
    char header[32];
    if (arg_is(cmd, 0, "TINY")) {
        snprintf(header, sizeof header, "*%ld\r\n", arg_long(cmd, 1));
        return send_tiny_elements(fd, header, arg_long(cmd, 1));
    }
    if (arg_is(cmd, 0, "NESTED")) {
        long k = arg_long(cmd, 1), n = arg_long(cmd, 2);
        snprintf(header, sizeof header, "*%ld\r\n", k);
        if (send_all(fd, header, strlen(header)) != 0) return -1;
        snprintf(header, sizeof header, "*%ld\r\n", n);
        for (long i = 0; i < k; i++)
            if (send_tiny_elements(fd, header, n) != 0) return -1;
        return 0;
    }
    return send_all(fd, "-ERR fake: unknown command\r\n", 28);
}

/* Answer every command of one connection until the client closes it. */
static void serve(int fd) {
    redisReader *rd = redisReaderCreate();
    char buf[65536];
    ssize_t n;
    while (rd && (n = recv(fd, buf, sizeof buf, 0)) > 0) {
        if (redisReaderFeed(rd, buf, (size_t)n) != REDIS_OK) break;
        void *cmd = NULL;
        int ok = 1;
        while (ok && redisReaderGetReply(rd, &cmd) == REDIS_OK && cmd) {
            ok = answer(fd, cmd) == 0;
            freeReplyObject(cmd);
        }
        if (!ok) break;
    }
    if (rd) redisReaderFree(rd);
    close(fd);
}

static int accept_within(int lfd, int ms) {
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0) return -1;
    return accept(lfd, NULL, NULL);
}

/* Serve one client (after closing the fillers queued ahead of it). */
static void *fake_main(void *arg) {
    fake_redis *f = arg;
    if (f->accept_delay_ms) {
        struct timespec ts = {.tv_sec = f->accept_delay_ms / 1000,
                              .tv_nsec = (long)(f->accept_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < f->fillers; i++) {
        int fd = accept_within(f->lfd, ACCEPT_WAIT_MS);
        if (fd < 0) return NULL;
        close(fd);
    }
    int fd = accept_within(f->lfd, ACCEPT_WAIT_MS);
    if (fd < 0) return NULL;
    serve(fd);
    f->served++;
    return NULL;
}

static ferry_conn *open_url(const char *url, int connect_timeout_ms) {
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = connect_timeout_ms;
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(&o, NULL, &c, &e) != 0) fail_msg("open %s: %s", url, e.message);
    return c;
}

/* A fake on 127.0.0.1 serving one connection, opened by *c. */
typedef struct fake_session {
    fake_redis f;
    pthread_t th;
    ferry_conn *c;
} fake_session;

static void fake_start(fake_session *s, size_t reply_memory_max) {
    memset(s, 0, sizeof *s);
    int port;
    s->f.lfd = th_listen_local(AF_INET, 4, &port);
    assert_true(s->f.lfd >= 0);
    assert_int_equal(pthread_create(&s->th, NULL, fake_main, &s->f), 0);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    s->c = open_url(url, 10000);
    ferry__conn_set_reply_memory_max(s->c, reply_memory_max);
}

static void fake_end(fake_session *s) {
    ferry__conn_close(s->c);
    pthread_join(s->th, NULL);
    close(s->f.lfd);
    assert_int_equal(s->f.served, 1);
}

static void want_too_big(ferry_conn *c, const char *cmd) {
    redisReply *r = (redisReply *)1;
    ferry_error e = {0};
    int rc = ferry__conn_command(c, &r, &e, cmd);
    if (rc != FERRY_ETOOBIG) fail_msg("%s: got %d (%s), want FERRY_ETOOBIG", cmd, rc, e.message);
    assert_null(r);
    if (!strstr(e.message, "once decoded")) fail_msg("%s: message '%s'", cmd, e.message);
    assert_true(ferry__conn_broken(c));
}

/* ---- reply budget ------------------------------------------------------------------- */

/* 100 000 empty statuses are 300 KB on the wire but several MB decoded (a redisReply and a
 * string block each): over a 1 MiB budget, and fine within the default one. */
static void test_reply_budget_tiny_elements(void **state) {
    (void)state;
    fake_session s;
    fake_start(&s, 1 << 20);
    want_too_big(s.c, "TINY 100000");
    fake_end(&s);

    fake_start(&s, 0);
    redisReply *r = th_cmd(s.c, "TINY 100000");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 100000);
    assert_int_equal(r->element[99999]->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    fake_end(&s);
}

/* The budget covers the whole reply: 8 arrays of 40 000 elements each fit a 16 MiB budget
 * (and the per-array element limit) alone, not together. */
static void test_reply_budget_nested(void **state) {
    (void)state;
    fake_session s;
    fake_start(&s, 16 << 20);
    redisReply *r = th_cmd(s.c, "NESTED 1 40000");
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->element[0]->elements, 40000);
    freeReplyObject(r);
    want_too_big(s.c, "NESTED 8 40000");
    fake_end(&s);
}

/* The budget is per reply: two pipelined replies of 150 000 elements each (under 16 MiB
 * each, over it together) both arrive. */
static void test_reply_budget_per_reply(void **state) {
    (void)state;
    fake_session s;
    fake_start(&s, 16 << 20);
    const char *argv[] = {"TINY", "150000"};
    ferry_error e = {0};
    for (int i = 0; i < 2; i++)
        assert_int_equal(ferry__conn_append_argv(s.c, 2, argv, NULL, &e), 0);
    redisReply *r[2];
    if (ferry__conn_pipeline_read(s.c, 2, r, &e) != 0) fail_msg("pipeline: %s", e.message);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r[i]->elements, 150000);
        freeReplyObject(r[i]);
    }
    assert_false(ferry__conn_broken(s.c));
    fake_end(&s);
}

/* ---- request limit ------------------------------------------------------------------ */

/* A read-only mapping of `len` zero bytes that costs no memory until read. */
static char *lazy_zeros(size_t len) {
    void *p = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) /* address space limited (ulimit -v): nothing to test */
        th_skip("request limit: no address space for a lazy mapping (ulimit -v)");
    return p;
}

static long maxrss_mib(void) {
    struct rusage ru;
    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss / 1024;
}

static void want_request_refused(ferry_conn *c, const char *big, size_t len) {
    const char *argv[] = {"SET", "ferry-test-never-set", big};
    size_t lens[] = {3, 20, len};
    redisReply *r = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_command_argv(c, 3, argv, lens, &r, &e);
    if (rc != FERRY_ETOOBIG) fail_msg("%zu-byte argument: got %d (%s)", len, rc, e.message);
    assert_null(r);
    assert_non_null(strstr(e.message, "request over 512 MiB"));
    assert_false(ferry__conn_broken(c));
    /* in a pipeline: the refused append drops what was queued, nothing was sent */
    const char *ping[] = {"PING"};
    assert_int_equal(ferry__conn_append_argv(c, 1, ping, NULL, &e), 0);
    assert_int_equal(ferry__conn_append_argv(c, 3, argv, lens, &e), FERRY_ETOOBIG);
    assert_int_equal(ferry__conn_pipeline_read(c, 0, NULL, &e), 0);
    r = th_cmd(c, "PING");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
}

static void test_request_over_limit(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    /* just over the limit: refused without building a 512 MiB copy of it first */
    size_t just_over = ((size_t)512 << 20) + 1;
    char *big = lazy_zeros(just_over);
    want_request_refused(c, big, just_over);
    assert_true(maxrss_mib() < 384);
    munmap(big, just_over);
    /* near 4 GiB, where hiredis 0.14's int length sum wraps to a small number */
    size_t wraps = ((size_t)1 << 32) - 20;
    big = lazy_zeros(wraps);
    want_request_refused(c, big, wraps);
    munmap(big, wraps);
    ferry__conn_close(c);
}

/* ---- unix socket with a full backlog ------------------------------------------------ */

typedef struct unix_listener {
    char dir[64], path[108];
    int lfd;
    int fillers[64];
    int nfillers;
} unix_listener;

/* listen(0), then queue connections until the kernel refuses more (EAGAIN). */
static void unix_full_backlog(unix_listener *u) {
    snprintf(u->dir, sizeof u->dir, "/tmp/ferry-connXXXXXX");
    assert_non_null(mkdtemp(u->dir));
    snprintf(u->path, sizeof u->path, "%s/s.sock", u->dir);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, u->path, strlen(u->path) + 1);
    u->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(u->lfd >= 0);
    assert_int_equal(bind(u->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(u->lfd, 0), 0);
    u->nfillers = 0;
    for (;;) {
        assert_true(u->nfillers < 64);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            assert_int_equal(errno, EAGAIN);
            close(fd);
            break;
        }
        u->fillers[u->nfillers++] = fd;
    }
    assert_true(u->nfillers > 0);
}

static void unix_close(unix_listener *u) {
    for (int i = 0; i < u->nfillers; i++)
        close(u->fillers[i]);
    close(u->lfd);
    unlink(u->path);
    rmdir(u->dir);
}

static void test_unix_backlog_full_then_accepts(void **state) {
    (void)state;
    unix_listener u;
    unix_full_backlog(&u);
    fake_redis f = {.lfd = u.lfd, .fillers = u.nfillers, .accept_delay_ms = 300};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_main, &f), 0);
    char url[160];
    snprintf(url, sizeof url, "unix://%s", u.path);
    ferry_conn *c = open_url(url, 10000);
    redisReply *r = th_cmd(c, "PING");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    ferry__conn_close(c);
    pthread_join(th, NULL);
    assert_int_equal(f.served, 1);
    unix_close(&u);
}

static void test_unix_backlog_full_never_accepts(void **state) {
    (void)state;
    unix_listener u;
    unix_full_backlog(&u);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    char url[160];
    snprintf(url, sizeof url, "unix://%s", u.path);
    o.url = url;
    o.connect_timeout_ms = 1000;
    ferry_conn *c = (ferry_conn *)1;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    int rc = ferry__conn_open(&o, NULL, &c, &e);
    int64_t took = ferry__mono_ms() - t0;
    if (rc != FERRY_ETIMEDOUT) fail_msg("got %d (%s), want FERRY_ETIMEDOUT", rc, e.message);
    assert_null(c);
    assert_non_null(strstr(e.message, "connect: timed out"));
    assert_true(took >= 990);
    unix_close(&u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_over_limit), /* first: it checks the peak RSS */
        cmocka_unit_test(test_reply_budget_tiny_elements),
        cmocka_unit_test(test_reply_budget_nested),
        cmocka_unit_test(test_reply_budget_per_reply),
        cmocka_unit_test(test_unix_backlog_full_then_accepts),
        cmocka_unit_test(test_unix_backlog_full_never_accepts),
    };
    return th_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
