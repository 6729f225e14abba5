/* test_conn_tls_peer.c - TLS servers that refuse the client, and what the caller is told.
 * A server thread of this process (OpenSSL, the harness' server certificate) requires a
 * client certificate, as Redis does by default (tls-auth-clients yes); the fixture's TLS
 * Redis does not. With TLS 1.3 the client finishes its handshake before the server checks
 * for the certificate, so the refusal (a "certificate required" alert, then a close) meets
 * the client's first write: it must still come out as FERRY_ETLS naming the certificate,
 * not as a transient-looking FERRY_EIO "connection reset". With TLS 1.2 it fails inside the
 * handshake, and with tls_insecure it must not be reported as a verification failure. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "support/th.h"

typedef struct tls_peer {
    int lfd;
    int version;           /* TLS1_2_VERSION or TLS1_3_VERSION, the only one offered */
    const char *client_ca; /* CA client certificates must chain to */
    const char *cert, *key;
    int handshakes;   /* out: handshakes that succeeded */
    int refused;      /* out: handshakes the server failed */
    int setup_failed; /* out */
} tls_peer;

/* Serve one connection: handshake requiring a client certificate; on success close with
 * close_notify, on failure (OpenSSL has sent its alert) close at once, as Redis does. */
static void *tls_peer_main(void *arg) {
    tls_peer *p = arg;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, p->cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, p->key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_load_verify_locations(ctx, p->client_ca, NULL) != 1 ||
        !SSL_CTX_set_min_proto_version(ctx, p->version) ||
        !SSL_CTX_set_max_proto_version(ctx, p->version)) {
        p->setup_failed = 1;
        SSL_CTX_free(ctx);
        return NULL;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    struct pollfd pf = {.fd = p->lfd, .events = POLLIN};
    int fd = poll(&pf, 1, 20000) == 1 ? accept(p->lfd, NULL, NULL) : -1;
    SSL *ssl = fd >= 0 ? SSL_new(ctx) : NULL;
    if (ssl && SSL_set_fd(ssl, fd) == 1) {
        if (SSL_accept(ssl) == 1) {
            p->handshakes++;
            (void)SSL_shutdown(ssl);
        } else {
            p->refused++;
        }
    }
    SSL_free(ssl);
    if (fd >= 0) close(fd);
    SSL_CTX_free(ctx);
    ERR_clear_error(); /* this thread's error queue */
    return NULL;
}

typedef struct attempt {
    int version;
    const char *server_trusts; /* CA the server checks client certificates against */
    int with_cert;             /* the client presents the harness' client certificate */
    int insecure;              /* tls_insecure on the client */
} attempt;

/* Open against a fresh refusing server; returns the open's result, the error in *e. */
static int try_open(const attempt *a, ferry_error *e, tls_peer *out) {
    tls_peer p = {.version = a->version,
                  .client_ca = a->server_trusts,
                  .cert = th_env_require("TLS_SERVER_CERT"),
                  .key = th_env_require("TLS_SERVER_KEY")};
    int port;
    p.lfd = th_listen_local(AF_INET, 4, &port);
    assert_true(p.lfd >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, tls_peer_main, &p), 0);
    char url[64];
    snprintf(url, sizeof url, "rediss://localhost:%d", port);
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    o.url = url;
    o.tls_ca_file = th_env_require("TLS_CA");
    o.tls_insecure = a->insecure;
    if (a->with_cert) {
        o.tls_cert_file = th_env_require("TLS_CERT");
        o.tls_key_file = th_env_require("TLS_KEY");
    }
    o.connect_timeout_ms = 10000;
    ferry_conn *c = NULL;
    int rc = ferry__conn_open(&o, NULL, &c, e);
    ferry__conn_close(c);
    pthread_join(th, NULL);
    close(p.lfd);
    assert_false(p.setup_failed);
    *out = p;
    return rc;
}

static void want_refused(const attempt *a, const char *reason, const char *hint) {
    ferry_error e = {0};
    tls_peer p;
    int rc = try_open(a, &e, &p);
    if (rc != FERRY_ETLS) fail_msg("got %d (%s), want FERRY_ETLS", rc, e.message);
    assert_int_equal(p.refused, 1);
    if (!strstr(e.message, reason)) fail_msg("message '%s' lacks '%s'", e.message, reason);
    if (!strstr(e.message, hint)) fail_msg("message '%s' lacks '%s'", e.message, hint);
    if (strstr(e.message, "certificate verify failed"))
        fail_msg("not a verification failure: '%s'", e.message);
}

static const char need_cert[] = "set tls_cert_file and tls_key_file";

static void test_tls13_no_client_cert(void **state) {
    (void)state;
    attempt a = {.version = TLS1_3_VERSION, .server_trusts = th_env_require("TLS_CA")};
    /* whether the write or the read meets the refusal first varies: try a few times */
    for (int i = 0; i < 5; i++)
        want_refused(&a, "alert certificate required", need_cert);
    a.insecure = 1;
    want_refused(&a, "alert certificate required", need_cert);
}

static void test_tls12_no_client_cert(void **state) {
    (void)state;
    attempt a = {.version = TLS1_2_VERSION, .server_trusts = th_env_require("TLS_CA")};
    want_refused(&a, "alert handshake failure", need_cert);
    /* without verification, the verify result (the chain is not trusted by the default
     * store) has nothing to do with the failure */
    a.insecure = 1;
    want_refused(&a, "alert handshake failure", need_cert);
}

/* A certificate the server does not trust: the alert names it. */
static void test_client_cert_not_trusted(void **state) {
    (void)state;
    attempt a = {
        .version = TLS1_3_VERSION, .server_trusts = th_env_require("TLS_OTHER_CA"), .with_cert = 1};
    want_refused(&a, "alert unknown ca", "refused the client certificate of tls_cert_file");
    a.version = TLS1_2_VERSION;
    want_refused(&a, "alert unknown ca", "refused the client certificate of tls_cert_file");
}

/* Control: with the certificate the server wants, the handshake succeeds; the server then
 * closes, which is a lost connection (FERRY_EIO: a reset, a broken pipe or a close,
 * whichever the client meets first), not a TLS refusal. */
static void test_client_cert_accepted(void **state) {
    (void)state;
    attempt a = {
        .version = TLS1_3_VERSION, .server_trusts = th_env_require("TLS_CA"), .with_cert = 1};
    for (int v = 0; v < 2; v++) {
        ferry_error e = {0};
        tls_peer p;
        int rc = try_open(&a, &e, &p);
        assert_int_equal(p.handshakes, 1);
        if (rc != FERRY_EIO) fail_msg("got %d (%s), want FERRY_EIO", rc, e.message);
        a.version = TLS1_2_VERSION;
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tls13_no_client_cert),
        cmocka_unit_test(test_tls12_no_client_cert),
        cmocka_unit_test(test_client_cert_not_trusted),
        cmocka_unit_test(test_client_cert_accepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
