/* test_conn.c - the Redis connection layer (src/redis/conn.c, transport.c, scripts.c)
 * against the private servers of the `servers` fixture: plain TCP, unix socket, ACL user,
 * TLS with the harness CA, plus local fake peers (silent listener, full backlog, bad
 * replies, an IPv6 proxy) for the failure paths. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "redis/scripts.h"
#include "support/th.h"
#include "util/clock.h"

/* ---- helpers ------------------------------------------------------------------------ */

static ferry_conn *open_ok(const ferry_redis_options *o, const char *name) {
    ferry_conn *c = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_open(o, name, &c, &e);
    if (rc != 0) fail_msg("open %s: %s (%d)", o->url ? o->url : "(default)", e.message, rc);
    assert_non_null(c);
    assert_false(ferry__conn_broken(c));
    return c;
}

/* Open must fail with `code` and a message containing `want`. */
static void open_fails(const ferry_redis_options *o, int code, const char *want, ferry_error *e) {
    ferry_conn *c = (ferry_conn *)1;
    int rc = ferry__conn_open(o, NULL, &c, e);
    if (rc != code) fail_msg("open %s: got %d (%s), want %d", o->url, rc, e->message, code);
    assert_null(c);
    assert_int_equal(e->code, code);
    if (!strstr(e->message, want)) fail_msg("message '%s' lacks '%s'", e->message, want);
}

static void want_status(redisReply *r, const char *s) {
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, s) != 0)
        fail_msg("want status %s, got type %d '%s'", s, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

static void want_str(redisReply *r, const char *s) {
    assert_non_null(r);
    if (r->type != REDIS_REPLY_STRING || strcmp(r->str, s) != 0)
        fail_msg("want string %s, got type %d '%s'", s, r->type, r->str ? r->str : "");
    freeReplyObject(r);
}

static void want_int(redisReply *r, long long v) {
    assert_non_null(r);
    if (r->type != REDIS_REPLY_INTEGER || r->integer != v)
        fail_msg("want integer %lld, got type %d (%lld '%s')", v, r->type, r->integer,
                 r->str ? r->str : "");
    freeReplyObject(r);
}

static void ping(ferry_conn *c) {
    want_status(th_cmd(c, "PING"), "PONG");
}

static char url_buf[8][512];
static int url_n;
/* printf into a rotating static buffer (several URLs can be alive in one test). */
static const char *fmt_url(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt_url(const char *fmt, ...) {
    char *b = url_buf[url_n++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof url_buf[0], fmt, ap);
    va_end(ap);
    return b;
}

static int connect_local(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

/* Big binary value: every byte value, CR/LF and NULs included. */
static char *binary_value(size_t n) {
    char *v = malloc(n);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)((i * 7 + i / 251) & 0xff);
    return v;
}

static void set_get_binary(ferry_conn *c, size_t n) {
    char key[96];
    snprintf(key, sizeof key, "%s:bin", th_prefix());
    char *v = binary_value(n);
    const char *argv[] = {"SET", key, v};
    size_t lens[] = {3, strlen(key), n};
    redisReply *r = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry__conn_command_argv(c, 3, argv, lens, &r, &e), 0);
    want_status(r, "OK");
    assert_int_equal(ferry__conn_command(c, &r, &e, "GET %s", key), 0);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, n);
    assert_memory_equal(r->str, v, n);
    freeReplyObject(r);
    want_int(th_cmd(c, "DEL %s", key), 1);
    free(v);
}

/* ---- plain TCP ---------------------------------------------------------------------- */

static void test_ping(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    ping(c);
    assert_int_equal(ferry__conn_url(c)->kind, FERRY_URL_TCP);
    assert_string_equal(ferry__conn_url(c)->host, "127.0.0.1");
    /* an error reply is a reply, not a failure */
    redisReply *r = th_cmd(c, "NOSUCHCOMMAND x");
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    assert_false(ferry__conn_broken(c));
    ping(c);
    ferry__conn_close(c);
    ferry__conn_close(NULL);
}

static void test_set_get_binary(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    set_get_binary(c, 1000);
    set_get_binary(c, 3 * 1024 * 1024 + 17); /* many reads and partial writes */
    ferry__conn_close(c);
}

static void test_pipeline(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    const char *p = th_prefix();
    char key[96];
    snprintf(key, sizeof key, "%s:ctr", p);
    ferry_error e = {0};
    for (int i = 0; i < 100; i++) {
        const char *argv[] = {"INCRBY", key, "2"};
        assert_int_equal(ferry__conn_append_argv(c, 3, argv, NULL, &e), 0);
    }
    redisReply *replies[100];
    /* a command in the middle of a pipeline, or a wrong count, is refused without harm */
    redisReply *r = NULL;
    assert_int_equal(ferry__conn_command(c, &r, &e, "PING"), FERRY_ESTATE);
    assert_null(r);
    assert_int_equal(ferry__conn_pipeline_read(c, 99, replies, &e), FERRY_EINVAL);
    assert_false(ferry__conn_broken(c));
    assert_int_equal(ferry__conn_pipeline_read(c, 100, replies, &e), 0);
    for (int i = 0; i < 100; i++)
        want_int(replies[i], 2 * (i + 1));
    ping(c);
    assert_int_equal(ferry__conn_pipeline_read(c, 0, NULL, &e), 0);
    want_int(th_cmd(c, "DEL %s", key), 1);
    ferry__conn_close(c);
}

static void test_acl_auth(void **state) {
    (void)state;
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = th_env_require("REDIS_ACL_URL");
    ferry_conn *c = open_ok(&o, NULL);
    want_str(th_cmd(c, "ACL WHOAMI"), th_env_require("REDIS_ACL_USER"));
    ferry__conn_close(c);

    ferry_error e = {0};
    const char *port = th_env_require("REDIS_PORT");
    o.url = fmt_url("redis://ferry:Wr0ngPassw0rd@127.0.0.1:%s", port);
    open_fails(&o, FERRY_EAUTH, "WRONGPASS", &e);
    assert_null(strstr(e.message, "Wr0ngPassw0rd"));

    /* password-only AUTH against a default user that has none */
    o.url = fmt_url("redis://:Wr0ngPassw0rd@127.0.0.1:%s", port);
    open_fails(&o, FERRY_EAUTH, "AUTH refused", &e);
    assert_null(strstr(e.message, "Wr0ngPassw0rd"));

    /* unknown user */
    o.url = fmt_url("redis://nobody%%20here:x@127.0.0.1:%s", port);
    open_fails(&o, FERRY_EAUTH, "AUTH refused", &e);
}

static void test_select_db(void **state) {
    (void)state;
    const char *port = th_env_require("REDIS_PORT");
    ferry_redis_options o = th_redis_options(0);
    o.url = fmt_url("redis://127.0.0.1:%s/3", port);
    ferry_conn *c3 = open_ok(&o, NULL);
    ferry_conn *c0 = th_conn();
    char key[96];
    snprintf(key, sizeof key, "%s:db", th_prefix());
    want_status(th_cmd(c3, "SET %s three", key), "OK");
    want_int(th_cmd(c0, "EXISTS %s", key), 0);
    want_status(th_cmd(c0, "SELECT 3"), "OK");
    want_str(th_cmd(c0, "GET %s", key), "three");
    want_int(th_cmd(c3, "DEL %s", key), 1);
    ferry__conn_close(c0);
    ferry__conn_close(c3);

    ferry_error e = {0};
    o.url = fmt_url("redis://127.0.0.1:%s/99999", port);
    open_fails(&o, FERRY_EAUTH, "SELECT 99999 refused", &e);
}

static void test_client_name(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(0);
    ferry_conn *c = open_ok(&o, "bull:dGVzdA==:w:h1");
    want_str(th_cmd(c, "CLIENT GETNAME"), "bull:dGVzdA==:w:h1");
    ferry__conn_close(c);

    ferry_error e = {0};
    c = (ferry_conn *)1;
    assert_int_equal(ferry__conn_open(&o, "has space", &c, &e), FERRY_EINVAL);
    assert_null(c);
    assert_int_equal(ferry__conn_open(&o, "", &c, &e), FERRY_EINVAL);
}

static void test_unix_socket(void **state) {
    (void)state;
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("unix://%s?db=2", th_env_require("REDIS_UNIX"));
    ferry_conn *cu = open_ok(&o, NULL);
    assert_int_equal(ferry__conn_url(cu)->kind, FERRY_URL_UNIX);
    char key[96];
    snprintf(key, sizeof key, "%s:unix", th_prefix());
    want_status(th_cmd(cu, "SET %s via-unix", key), "OK");
    /* the same server over TCP, db 2, sees it */
    ferry_conn *ct = th_conn();
    want_status(th_cmd(ct, "SELECT 2"), "OK");
    want_str(th_cmd(ct, "GET %s", key), "via-unix");
    want_int(th_cmd(ct, "DEL %s", key), 1);
    set_get_binary(cu, 2 * 1024 * 1024);
    ferry__conn_close(ct);
    ferry__conn_close(cu);

    ferry_error e = {0};
    o.url = "unix:///nonexistent/dir/redis.sock";
    open_fails(&o, FERRY_EIO, "No such file", &e);
}

/* ---- TLS ---------------------------------------------------------------------------- */

static void test_tls_ok(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(1);
    ferry_conn *c = open_ok(&o, NULL);
    assert_int_equal(ferry__conn_url(c)->kind, FERRY_URL_TLS);
    ping(c);
    set_get_binary(c, 2 * 1024 * 1024 + 3);
    ferry__conn_close(c);

    /* client certificate (the server does not require one; it must still load and work) */
    o.tls_cert_file = th_env_require("TLS_CERT");
    o.tls_key_file = th_env_require("TLS_KEY");
    c = open_ok(&o, "tls-client");
    ping(c);
    ferry__conn_close(c);

    /* by IP address: verified against the certificate's IP SAN, no SNI */
    o.url = fmt_url("rediss://127.0.0.1:%s", th_env_require("REDIS_TLS_PORT"));
    c = open_ok(&o, NULL);
    ping(c);
    ferry__conn_close(c);

    /* ACL user over TLS, with a db */
    o.url = fmt_url("rediss://ferry:secret%%40pw@localhost:%s/1", th_env_require("REDIS_TLS_PORT"));
    c = open_ok(&o, NULL);
    want_str(th_cmd(c, "ACL WHOAMI"), "ferry");
    ferry__conn_close(c);
}

static void test_tls_wrong_ca(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(1);
    o.tls_ca_file = th_env_require("TLS_OTHER_CA");
    ferry_error e = {0};
    open_fails(&o, FERRY_ETLS, "certificate verify failed", &e);

    /* verification is on by default: the system store does not know the test CA */
    o.tls_ca_file = NULL;
    open_fails(&o, FERRY_ETLS, "certificate verify failed", &e);

    /* the right CA but another name */
    o = th_redis_options(1);
    o.tls_server_name = "not-the-server.example";
    open_fails(&o, FERRY_ETLS, "hostname mismatch", &e);

    /* IP verification: the certificate has IP 127.0.0.1, not 127.0.0.2 */
    o = th_redis_options(1);
    o.url = fmt_url("rediss://127.0.0.1:%s", th_env_require("REDIS_TLS_PORT"));
    o.tls_server_name = "127.0.0.2";
    open_fails(&o, FERRY_ETLS, "IP address mismatch", &e);

    /* TLS to a plain-text server: Redis waits for the end of an "inline command" that
     * never comes, so the handshake's deadline ends it */
    o = th_redis_options(1);
    o.url = fmt_url("rediss://localhost:%s", th_env_require("REDIS_PORT"));
    o.connect_timeout_ms = 1000;
    open_fails(&o, FERRY_ETIMEDOUT, "TLS handshake: timed out", &e);
}

static void test_tls_insecure(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(1);
    o.tls_ca_file = th_env_require("TLS_OTHER_CA");
    o.tls_server_name = "not-the-server.example";
    o.tls_insecure = 1;
    ferry_conn *c = open_ok(&o, NULL);
    ping(c);
    ferry__conn_close(c);
}

static void test_tls_bad_options(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(1);
    ferry_error e = {0};
    o.tls_ca_file = "/nonexistent/ca.pem";
    open_fails(&o, FERRY_EINVAL, "cannot load CA file '/nonexistent/ca.pem'", &e);
    o = th_redis_options(1);
    o.tls_key_file = th_env_require("TLS_KEY");
    open_fails(&o, FERRY_EINVAL, "tls_key_file given without tls_cert_file", &e);
    o = th_redis_options(1);
    o.tls_cert_file = th_env_require("TLS_CERT");
    o.tls_key_file = th_env_require("TLS_SERVER_KEY");
    open_fails(&o, FERRY_EINVAL, "cannot load client key", &e);
    o = th_redis_options(1);
    o.tls_cert_file = th_env_require("TLS_CERT"); /* its PEM holds no key */
    open_fails(&o, FERRY_EINVAL, "no tls_key_file given, and no client key in the certificate file",
               &e);
}

/* ---- failures and deadlines -------------------------------------------------------- */

static void test_closed_port(void **state) {
    (void)state;
    int port;
    int fd = th_listen_local(AF_INET, 1, &port);
    assert_true(fd >= 0);
    close(fd); /* nothing listens there now */
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("redis://127.0.0.1:%d", port);
    o.connect_timeout_ms = 20000;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    open_fails(&o, FERRY_EIO, "Connection refused", &e);
    /* refused at once, not after the deadline */
    assert_true(ferry__mono_ms() - t0 < 10000);
}

static void test_silent_listener(void **state) {
    (void)state;
    int port;
    int lfd = th_listen_local(AF_INET, 16, &port); /* accepts at TCP level, never answers */
    assert_true(lfd >= 0);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("redis://127.0.0.1:%d", port);
    o.connect_timeout_ms = 1000;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    open_fails(&o, FERRY_ETIMEDOUT, "timed out", &e);
    int64_t took = ferry__mono_ms() - t0;
    assert_true(took >= 990);
    assert_true(took < 3000);

    /* TLS against the same listener: the handshake has the same deadline */
    o.url = fmt_url("rediss://127.0.0.1:%d", port);
    o.tls_insecure = 1;
    t0 = ferry__mono_ms();
    open_fails(&o, FERRY_ETIMEDOUT, "TLS handshake: timed out", &e);
    took = ferry__mono_ms() - t0;
    assert_true(took >= 990);
    assert_true(took < 3000);
    close(lfd);
}

static void test_connect_deadline(void **state) {
    (void)state;
    /* backlog 0 holds one connection: once the filler is queued the kernel drops further
     * SYNs, so the next connect() hangs in the TCP handshake itself */
    int port;
    int lfd = th_listen_local(AF_INET, 0, &port);
    assert_true(lfd >= 0);
    int filler = connect_local(port);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("redis://127.0.0.1:%d", port);
    o.connect_timeout_ms = 1000;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    open_fails(&o, FERRY_ETIMEDOUT, "connect: timed out", &e);
    int64_t took = ferry__mono_ms() - t0;
    assert_true(took >= 990);
    assert_true(took < 3000);
    close(filler);
    close(lfd);
}

static void test_command_deadline(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    ferry__conn_set_timeout(c, 1000);
    char key[96];
    snprintf(key, sizeof key, "%s:never", th_prefix());
    redisReply *r = NULL;
    ferry_error e = {0};
    int64_t t0 = ferry__mono_ms();
    assert_int_equal(ferry__conn_command(c, &r, &e, "BLPOP %s 30", key), FERRY_ETIMEDOUT);
    int64_t took = ferry__mono_ms() - t0;
    assert_null(r);
    assert_true(took >= 990);
    assert_true(took < 3000);
    assert_non_null(strstr(e.message, "timed out"));
    assert_true(ferry__conn_broken(c));
    /* a broken connection refuses further use until the caller reconnects */
    assert_int_equal(ferry__conn_command(c, &r, &e, "PING"), FERRY_EIO);
    assert_non_null(strstr(e.message, "broken"));
    const char *argv[] = {"PING"};
    assert_int_equal(ferry__conn_append_argv(c, 1, argv, NULL, &e), FERRY_EIO);
    ferry__conn_close(c);

    /* set_timeout(0) restores the opened default, long enough for a 1 s block */
    c = th_conn();
    ferry__conn_set_timeout(c, 100);
    ferry__conn_set_timeout(c, 0);
    assert_int_equal(ferry__conn_command(c, &r, &e, "BLPOP %s 1", key), 0);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
    ferry__conn_close(c);
}

/* The server drops us: the next command fails with FERRY_EIO, never with SIGPIPE. */
static void killed_connection(ferry_redis_options *o) {
    ferry_conn *victim = open_ok(o, NULL);
    ferry_conn *admin = open_ok(o, NULL);
    long long id = th_cmd_int(victim, "CLIENT ID");
    want_int(th_cmd(admin, "CLIENT KILL ID %lld", id), 1);
    ferry__conn_close(admin);
    /* a large write after the peer closed: send() meets EPIPE / ECONNRESET */
    size_t n = 8 * 1024 * 1024;
    char *v = binary_value(n);
    const char *argv[] = {"SET", "ferry-test-killed", v};
    size_t lens[] = {3, 17, n};
    redisReply *r = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_command_argv(victim, 3, argv, lens, &r, &e);
    assert_int_equal(rc, FERRY_EIO);
    assert_null(r);
    assert_true(ferry__conn_broken(victim));
    free(v);
    ferry__conn_close(victim);
}

static void test_killed_connection(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill this test */
    ferry_redis_options o = th_redis_options(0);
    killed_connection(&o);
    o = th_redis_options(1);
    killed_connection(&o);
}

static void test_bad_options(void **state) {
    (void)state;
    ferry_redis_options o = th_redis_options(0);
    ferry_error e = {0};
    o.connect_timeout_ms = -1;
    open_fails(&o, FERRY_EINVAL, "connect_timeout_ms -1 out of range", &e);
    o = th_redis_options(0);
    o.command_timeout_ms = -5;
    open_fails(&o, FERRY_EINVAL, "command_timeout_ms", &e);
    o = th_redis_options(0);
    o.url = "redis://127.0.0.1:99999";
    open_fails(&o, FERRY_EINVAL, "port out of range", &e);
}

/* ---- fake peers --------------------------------------------------------------------- */

typedef struct fake_peer {
    int lfd;
    const char *reply; /* written after the first request bytes arrive */
} fake_peer;

/* Accept one client, answer its first bytes with `reply` (NULL: end the connection
 * cleanly instead), then drain until it closes. */
static void *fake_peer_main(void *arg) {
    fake_peer *p = arg;
    int fd = accept(p->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    char buf[65536];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0 && p->reply) {
        size_t len = strlen(p->reply);
        if (write(fd, p->reply, len) != (ssize_t)len) {
            close(fd);
            return NULL;
        }
    }
    /* No reply: end our side with a FIN (shutdown) rather than close(), which would send
     * an RST when more request bytes arrived after the first read. Then drain until the
     * client closes. */
    if (!p->reply) shutdown(fd, SHUT_WR);
    while ((n = read(fd, buf, sizeof buf)) > 0) {
    }
    close(fd);
    return NULL;
}

static void fake_open_fails(const char *reply, int code, const char *want) {
    fake_peer p = {.reply = reply};
    int port;
    p.lfd = th_listen_local(AF_INET, 4, &port);
    assert_true(p.lfd >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, fake_peer_main, &p), 0);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("redis://127.0.0.1:%d", port);
    ferry_error e = {0};
    open_fails(&o, code, want, &e);
    pthread_join(th, NULL);
    close(p.lfd);
}

static void test_bad_replies(void **state) {
    (void)state;
    fake_open_fails("*100000000\r\n", FERRY_ETOOBIG, "reply array over");
    fake_open_fails("?what\r\n", FERRY_EPROTO, "bad reply");
    fake_open_fails(NULL, FERRY_EIO, "connection closed by the server");
    /* a server with requirepass answers every handshake command (script loads, or the
     * PING sent when there is nothing else) with NOAUTH */
    size_t n;
    (void)ferry__scripts_all(&n);
    if (n == 0) n = 1;
    static const char noauth[] = "-NOAUTH Authentication required.\r\n";
    char *many = calloc(n, sizeof noauth);
    assert_non_null(many);
    for (size_t i = 0; i < n; i++)
        strcat(many, noauth);
    fake_open_fails(many, FERRY_EAUTH, "NOAUTH");
    free(many);
}

/* ---- IPv6 through a forwarding proxy on [::1] -------------------------------------- */

typedef struct proxy {
    int lfd, upstream_port;
} proxy;

static void *proxy_main(void *arg) {
    proxy *p = arg;
    int a = accept(p->lfd, NULL, NULL);
    if (a < 0) return NULL;
    int b = connect_local(p->upstream_port);
    char buf[65536];
    for (;;) {
        struct pollfd fds[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
        int done = 0;
        for (int i = 0; i < 2 && !done; i++) {
            if (!fds[i].revents) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0 || write(i == 0 ? b : a, buf, (size_t)n) != n) done = 1;
        }
        if (done) break;
    }
    close(a);
    close(b);
    return NULL;
}

static void test_ipv6(void **state) {
    (void)state;
    proxy p = {.upstream_port = atoi(th_env_require("REDIS_PORT"))};
    int port;
    p.lfd = th_listen_local(AF_INET6, 4, &port);
    if (p.lfd < 0) th_skip("test_ipv6: this host has no ::1");
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, proxy_main, &p), 0);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = fmt_url("redis://[::1]:%d/4", port);
    ferry_conn *c = open_ok(&o, NULL);
    assert_string_equal(ferry__conn_url(c)->host, "::1");
    ping(c);
    redisReply *r = th_cmd(c, "CLIENT INFO");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_non_null(strstr(r->str, " db=4 "));
    freeReplyObject(r);
    ferry__conn_close(c);
    pthread_join(th, NULL);
    close(p.lfd);
}

/* ---- scripts ------------------------------------------------------------------------ */

static void sha1_hex(const char *s, char out[41]) {
    unsigned char md[20];
    unsigned int len = 0;
    assert_true(EVP_Digest(s, strlen(s), md, &len, EVP_sha1(), NULL));
    for (int i = 0; i < 20; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static int script_exists(ferry_conn *c, const char *sha) {
    redisReply *r = th_cmd(c, "SCRIPT EXISTS %s", sha);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    int v = (int)r->element[0]->integer;
    freeReplyObject(r);
    return v;
}

static void test_scripts(void **state) {
    (void)state;
    static const char src[] = "return KEYS[1] .. '|' .. ARGV[1] .. '|' .. #ARGV[2]";
    ferry_script s = {.name = "test_echo", .source = src, .source_len = sizeof src - 1};
    char sha[41];
    sha1_hex(src, sha);

    ferry_conn *c = th_conn();
    /* every embedded script is loaded at open, under the sha the registry computed */
    size_t n;
    const ferry_script *all = ferry__scripts_all(&n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(strlen(all[i].sha1), 40);
        assert_ptr_equal(ferry__script_get(all[i].name), &all[i]);
        char want[41];
        char *tmp = strndup(all[i].source, all[i].source_len);
        sha1_hex(tmp, want);
        free(tmp);
        assert_string_equal(all[i].sha1, want);
        assert_int_equal(script_exists(c, all[i].sha1), 1);
    }
    assert_null(ferry__script_get("no-such-script"));
    assert_null(ferry__script_get(NULL));

    want_status(th_cmd(c, "SCRIPT FLUSH"), "OK");
    assert_int_equal(script_exists(c, sha), 0);
    const char *keys[] = {"k1"};
    const char *args[] = {"a\0b", "xyz"};
    size_t lens[] = {3, 3};
    redisReply *r = NULL;
    ferry_error e = {0};
    /* NOSCRIPT: loaded and retried once, transparently */
    assert_int_equal(ferry__conn_evalsha(c, &s, 1, keys, 2, args, lens, &r, &e), 0);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, 8);
    assert_memory_equal(r->str, "k1|a\0b|3", 8);
    freeReplyObject(r);
    assert_int_equal(script_exists(c, sha), 1);
    /* and now straight from the cache */
    assert_int_equal(ferry__conn_evalsha(c, &s, 1, keys, 2, args, lens, &r, &e), 0);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    freeReplyObject(r);

    /* pipelined form: the caller sees NOSCRIPT, reloads the registry, resends */
    want_status(th_cmd(c, "SCRIPT FLUSH"), "OK");
    assert_int_equal(ferry__conn_append_evalsha(c, &s, 1, keys, 2, args, lens, &e), 0);
    assert_int_equal(ferry__conn_append_evalsha(c, &s, 1, keys, 2, args, lens, &e), 0);
    redisReply *two[2];
    assert_int_equal(ferry__conn_pipeline_read(c, 2, two, &e), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(two[i]->type, REDIS_REPLY_ERROR);
        assert_non_null(strstr(two[i]->str, "NOSCRIPT"));
        freeReplyObject(two[i]);
    }
    assert_int_equal(ferry__conn_load_scripts(c, &e), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(script_exists(c, all[i].sha1), 1);

    /* a script error is a reply, not a failure */
    static const char bad[] = "return redis.call('NOSUCHCMD')";
    ferry_script sb = {.name = "test_bad", .source = bad, .source_len = sizeof bad - 1};
    assert_int_equal(ferry__conn_evalsha(c, &sb, 0, NULL, 0, NULL, NULL, &r, &e), 0);
    assert_int_equal(r->type, REDIS_REPLY_ERROR);
    freeReplyObject(r);
    /* a script that does not compile: the reload fails with FERRY_EREDIS */
    static const char broken_src[] = "return (";
    ferry_script sx = {
        .name = "test_syntax", .source = broken_src, .source_len = sizeof broken_src - 1};
    assert_int_equal(ferry__conn_evalsha(c, &sx, 0, NULL, 0, NULL, NULL, &r, &e), FERRY_EREDIS);
    assert_null(r);
    assert_non_null(strstr(e.message, "SCRIPT LOAD test_syntax"));
    assert_false(ferry__conn_broken(c));
    assert_int_equal(ferry__conn_evalsha(c, &s, -1, keys, 0, NULL, NULL, &r, &e), FERRY_EINVAL);
    ping(c);
    ferry__conn_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping),
        cmocka_unit_test(test_set_get_binary),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_acl_auth),
        cmocka_unit_test(test_select_db),
        cmocka_unit_test(test_client_name),
        cmocka_unit_test(test_unix_socket),
        cmocka_unit_test(test_tls_ok),
        cmocka_unit_test(test_tls_wrong_ca),
        cmocka_unit_test(test_tls_insecure),
        cmocka_unit_test(test_tls_bad_options),
        cmocka_unit_test(test_closed_port),
        cmocka_unit_test(test_silent_listener),
        cmocka_unit_test(test_connect_deadline),
        cmocka_unit_test(test_command_deadline),
        cmocka_unit_test(test_killed_connection),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_bad_replies),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_scripts),
    };
    return th_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
