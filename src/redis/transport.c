/* transport.c - our own socket + TLS layer under the RESP connection (see transport.h).
 *
 * Debian's hiredis 0.14 has no TLS and only blocking-with-timeout sockets, so the socket
 * work is here: non-blocking sockets, connect/handshake/read/write as poll loops against
 * an absolute deadline, and OpenSSL driven over a custom BIO whose writes use
 * send(MSG_NOSIGNAL). That BIO is why no SIGPIPE can reach the process even when the
 * server drops a TLS connection: OpenSSL's stock socket BIO uses write(2). */
#include "redis/transport.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "redis/resolve.h"
#include "util/clock.h"
#include "util/error.h"

#define ENDPOINT_MAX 300

struct ferry_transport {
    int fd;
    SSL_CTX *ctx;
    SSL *ssl;
    int tls_ok;         /* handshake done and no fatal TLS error since: close_notify allowed */
    int eof;            /* the peer closed its side (seen by the BIO) */
    int sys_errno;      /* last socket errno seen by the BIO, for SSL_ERROR_SYSCALL */
    int verify;         /* the server certificate is verified (not tls_insecure) */
    int has_cert;       /* a client certificate is configured */
    int cert_requested; /* the server asked for a client certificate we do not have */
    char endpoint[ENDPOINT_MAX];
};

/* ---- waiting ---------------------------------------------------------------------- */

/* Wait until fd has `events` or the deadline passes. POLLERR/POLLHUP count as ready:
 * the following I/O call reports the actual error. */
static int wait_fd(int fd, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - ferry__mono_ms();
        if (left < 0) left = 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (r > 0) return 0;
        if (r == 0) return FERRY_ETIMEDOUT;
        if (errno != EINTR) return FERRY_EIO;
    }
}

static int wait_err(ferry_transport *t, int rc, const char *op, ferry_error *err) {
    if (rc == FERRY_ETIMEDOUT)
        return ferry__err(err, rc, "redis %s: %s: timed out", t->endpoint, op);
    return ferry__err(err, rc, "redis %s: %s: poll: %s", t->endpoint, op, strerror(errno));
}

/* ---- BIO over our non-blocking socket ---------------------------------------------- */

static int bio_write_ex(BIO *b, const char *data, size_t len, size_t *written) {
    ferry_transport *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n;
    do
        n = send(t->fd, data, len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n >= 0) {
        *written = (size_t)n;
        return 1;
    }
    t->sys_errno = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(b);
    *written = 0;
    return 0;
}

static int bio_read_ex(BIO *b, char *buf, size_t cap, size_t *readbytes) {
    ferry_transport *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    *readbytes = 0;
    ssize_t n;
    do
        n = recv(t->fd, buf, cap, 0);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        *readbytes = (size_t)n;
        return 1;
    }
    if (n == 0) {
        t->eof = 1;
        return 0;
    }
    t->sys_errno = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(b);
    return 0;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
    (void)num;
    (void)ptr;
    ferry_transport *t = BIO_get_data(b);
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1; /* send() does not buffer */
    case BIO_CTRL_EOF:
        return t ? t->eof : 0;
    default:
        return 0;
    }
}

static int bio_create(BIO *b) {
    BIO_set_init(b, 1);
    return 1;
}

static int bio_destroy(BIO *b) {
    (void)b; /* the socket belongs to the transport */
    return 1;
}

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

/* Created once, never freed: it lives as long as the process, like OpenSSL's own. */
static void bio_method_init(void) {
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "ferry socket");
    if (!m) return;
    if (!BIO_meth_set_write_ex(m, bio_write_ex) || !BIO_meth_set_read_ex(m, bio_read_ex) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create) ||
        !BIO_meth_set_destroy(m, bio_destroy)) {
        BIO_meth_free(m);
        return;
    }
    bio_method = m;
}

/* ---- connecting --------------------------------------------------------------------- */

/* Latency and dead-peer detection only: failing to set these is not worth failing the
 * connection over. */
static void tune_tcp(int fd) {
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
}

static int connect_retry_eintr(int fd, const struct sockaddr *sa, socklen_t salen) {
    int r;
    do
        r = connect(fd, sa, salen);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Start a non-blocking connect on a new socket and wait for it. Returns the fd, or -1
 * with *sys_err = errno (0 and *timed_out = 1 when the deadline passed). */
static int connect_one(int family, int proto, const struct sockaddr *sa, socklen_t salen,
                       int64_t deadline_ms, int *sys_err, int *timed_out) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
    if (fd < 0) {
        *sys_err = errno;
        return -1;
    }
    int r = connect_retry_eintr(fd, sa, salen);
    /* A unix socket whose listen backlog is full does not queue the connect as TCP does:
     * a non-blocking connect fails at once with EAGAIN. The server is busy, not gone, so
     * try again, backing off from 1 ms to 50 ms, until the deadline. */
    for (long pause_ms = 1; r < 0 && family == AF_UNIX && errno == EAGAIN;) {
        int64_t left = deadline_ms - ferry__mono_ms();
        if (left <= 0) {
            *sys_err = 0;
            *timed_out = 1;
            close(fd);
            return -1;
        }
        long ms = left < pause_ms ? (long)left : pause_ms;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
        (void)nanosleep(&ts, NULL);
        pause_ms = pause_ms * 2 > 50 ? 50 : pause_ms * 2;
        r = connect_retry_eintr(fd, sa, salen);
    }
    if (r == 0) return fd;
    if (errno != EINPROGRESS) {
        *sys_err = errno;
        close(fd);
        return -1;
    }
    int rc = wait_fd(fd, POLLOUT, deadline_ms);
    if (rc != 0) {
        *sys_err = rc == FERRY_ETIMEDOUT ? 0 : errno;
        *timed_out = rc == FERRY_ETIMEDOUT;
        close(fd);
        return -1;
    }
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0) soerr = errno;
    if (soerr != 0) {
        *sys_err = soerr;
        close(fd);
        return -1;
    }
    return fd;
}

static int connect_tcp(ferry_transport *t, const ferry_redis_url *u, int64_t deadline_ms,
                       ferry_error *err) {
    char what[ENDPOINT_MAX + 8];
    snprintf(what, sizeof what, "redis %s", t->endpoint);
    struct addrinfo *res = NULL;
    int rc = ferry__resolve(u->host, u->port, deadline_ms, what, &res, err);
    if (rc != 0) return rc;
    int sys_err = 0, timed_out = 0;
    for (struct addrinfo *ai = res; ai && !timed_out; ai = ai->ai_next) {
        int fd = connect_one(ai->ai_family, ai->ai_protocol, ai->ai_addr, ai->ai_addrlen,
                             deadline_ms, &sys_err, &timed_out);
        if (fd >= 0) {
            freeaddrinfo(res);
            t->fd = fd;
            tune_tcp(fd);
            return 0;
        }
    }
    freeaddrinfo(res);
    if (timed_out)
        return ferry__err(err, FERRY_ETIMEDOUT, "redis %s: connect: timed out", t->endpoint);
    return ferry__err(err, FERRY_EIO, "redis %s: connect: %s", t->endpoint, strerror(sys_err));
}

static int connect_unix(ferry_transport *t, const ferry_redis_url *u, int64_t deadline_ms,
                        ferry_error *err) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(u->path);
    if (len >= sizeof sa.sun_path)
        return ferry__err(err, FERRY_EINVAL, "redis: unix socket path longer than %zu bytes",
                          sizeof sa.sun_path - 1);
    memcpy(sa.sun_path, u->path, len + 1);
    int sys_err = 0, timed_out = 0;
    int fd = connect_one(AF_UNIX, 0, (const struct sockaddr *)&sa, sizeof sa, deadline_ms, &sys_err,
                         &timed_out);
    if (fd < 0 && timed_out)
        return ferry__err(err, FERRY_ETIMEDOUT, "redis %s: connect: timed out", t->endpoint);
    if (fd < 0)
        return ferry__err(err, FERRY_EIO, "redis %s: connect: %s", t->endpoint, strerror(sys_err));
    t->fd = fd;
    return 0;
}

/* ---- TLS ---------------------------------------------------------------------------- */

/* An encrypted key would make OpenSSL prompt on the terminal; a library must not. */
static int no_password_cb(char *buf, int size, int rwflag, void *userdata) {
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)userdata;
    return 0;
}

static const char *ssl_errstr(char *buf, size_t cap) {
    unsigned long e = ERR_peek_last_error();
    if (!e) return "unknown TLS error";
    ERR_error_string_n(e, buf, cap);
    return buf;
}

/* Why a TLS error happened, when it is an alert the server sent: the option that most
 * likely fixes it, or "". */
static const char *alert_hint(const ferry_transport *t, unsigned long e) {
    int reason = ERR_GET_REASON(e);
    if (!e || ERR_GET_LIB(e) != ERR_LIB_SSL || reason < SSL_AD_REASON_OFFSET) return "";
    int alert = reason - SSL_AD_REASON_OFFSET;
    if (!t->has_cert && (t->cert_requested || alert == SSL_AD_CERTIFICATE_REQUIRED))
        return " (the server requires a client certificate: set tls_cert_file and tls_key_file)";
    if (t->has_cert &&
        (alert == SSL_AD_BAD_CERTIFICATE || alert == SSL_AD_UNSUPPORTED_CERTIFICATE ||
         alert == SSL_AD_CERTIFICATE_REVOKED || alert == SSL_AD_CERTIFICATE_EXPIRED ||
         alert == SSL_AD_CERTIFICATE_UNKNOWN || alert == SSL_AD_UNKNOWN_CA ||
         alert == SSL_AD_ACCESS_DENIED))
        return " (the server refused the client certificate of tls_cert_file)";
    return "";
}

/* A fatal alert received from the server (OpenSSL reports one as reason 1000 + alert). */
static int is_peer_alert(unsigned long e) {
    return e && ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) >= SSL_AD_REASON_OFFSET;
}

/* Only called when the server asks for a client certificate and none is configured. */
static int client_cert_cb(SSL *ssl, X509 **x509, EVP_PKEY **pkey) {
    (void)x509;
    (void)pkey;
    ferry_transport *t = SSL_get_app_data(ssl);
    if (t) t->cert_requested = 1;
    return 0; /* send none: the server decides whether that is acceptable */
}

static int is_ip_literal(const char *s) {
    unsigned char a[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

static int tls_context(ferry_transport *t, const ferry_redis_options *o, ferry_error *err) {
    char ebuf[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return ferry__err(err, FERRY_ENOMEM, "TLS: cannot create context: %s",
                          ssl_errstr(ebuf, sizeof ebuf));
    t->ctx = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_default_passwd_cb(ctx, no_password_cb);
    SSL_CTX_set_client_cert_cb(ctx, client_cert_cb);
    t->verify = !o->tls_insecure;
    t->has_cert = o->tls_cert_file != NULL;
    if (o->tls_insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (o->tls_ca_file || o->tls_ca_dir) {
            if (!SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir))
                return ferry__err(err, FERRY_EINVAL, "TLS: cannot load CA %s '%s': %s",
                                  o->tls_ca_file ? "file" : "directory",
                                  o->tls_ca_file ? o->tls_ca_file : o->tls_ca_dir,
                                  ssl_errstr(ebuf, sizeof ebuf));
        } else if (!SSL_CTX_set_default_verify_paths(ctx)) {
            return ferry__err(err, FERRY_ETLS, "TLS: cannot load the system CA store: %s",
                              ssl_errstr(ebuf, sizeof ebuf));
        }
    }
    if (o->tls_key_file && !o->tls_cert_file)
        return ferry__err(err, FERRY_EINVAL, "TLS: tls_key_file given without tls_cert_file");
    if (o->tls_cert_file) {
        /* A key may sit in the certificate's PEM file, as curl allows. */
        const char *key = o->tls_key_file ? o->tls_key_file : o->tls_cert_file;
        if (SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1)
            return ferry__err(err, FERRY_EINVAL, "TLS: cannot load client certificate '%s': %s",
                              o->tls_cert_file, ssl_errstr(ebuf, sizeof ebuf));
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
            return o->tls_key_file
                       ? ferry__err(err, FERRY_EINVAL, "TLS: cannot load client key '%s': %s", key,
                                    ssl_errstr(ebuf, sizeof ebuf))
                       : ferry__err(err, FERRY_EINVAL,
                                    "TLS: no tls_key_file given, and no client key in the "
                                    "certificate file '%s': %s",
                                    key, ssl_errstr(ebuf, sizeof ebuf));
        if (SSL_CTX_check_private_key(ctx) != 1)
            return ferry__err(err, FERRY_EINVAL, "TLS: client key '%s' does not match '%s'", key,
                              o->tls_cert_file);
    }
    return 0;
}

static int tls_handshake_error(ferry_transport *t, int ssl_err, ferry_error *err) {
    char ebuf[256];
    unsigned long e = ERR_peek_last_error();
    /* The verify result says why verification failed, but only when it ran and is what
     * failed: without verification it still holds the unchecked chain's first problem. */
    long v = SSL_get_verify_result(t->ssl);
    if (t->verify && ERR_GET_LIB(e) == ERR_LIB_SSL &&
        ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED && v != X509_V_OK)
        return ferry__err(err, FERRY_ETLS, "redis %s: TLS handshake: certificate verify failed: %s",
                          t->endpoint, X509_verify_cert_error_string(v));
    if (e)
        return ferry__err(err, FERRY_ETLS, "redis %s: TLS handshake: %s%s", t->endpoint,
                          ssl_errstr(ebuf, sizeof ebuf), alert_hint(t, e));
    if (ssl_err == SSL_ERROR_SYSCALL && !t->eof && t->sys_errno)
        return ferry__err(err, FERRY_ETLS, "redis %s: TLS handshake: %s", t->endpoint,
                          strerror(t->sys_errno));
    return ferry__err(err, FERRY_ETLS, "redis %s: TLS handshake: connection closed by the server",
                      t->endpoint);
}

static int tls_connect(ferry_transport *t, const ferry_redis_url *u, const ferry_redis_options *o,
                       int64_t deadline_ms, ferry_error *err) {
    ERR_clear_error();
    pthread_once(&bio_once, bio_method_init);
    if (!bio_method) return ferry__err(err, FERRY_ENOMEM, "TLS: cannot create the socket BIO");
    int rc = tls_context(t, o, err);
    if (rc != 0) return rc;
    char ebuf[256];
    t->ssl = SSL_new(t->ctx);
    BIO *bio = t->ssl ? BIO_new(bio_method) : NULL;
    if (!bio)
        return ferry__err(err, FERRY_ENOMEM, "TLS: cannot create session: %s",
                          ssl_errstr(ebuf, sizeof ebuf));
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio);
    SSL_set_app_data(t->ssl, t);
    SSL_set_connect_state(t->ssl);

    const char *name = o->tls_server_name ? o->tls_server_name : u->host;
    if (is_ip_literal(name)) {
        /* SNI must not carry an address (RFC 6066); verify the certificate's IP SAN. */
        if (!o->tls_insecure && !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name))
            return ferry__err(err, FERRY_EINVAL, "TLS: bad server address '%s'", name);
    } else {
        if (!SSL_set_tlsext_host_name(t->ssl, name))
            return ferry__err(err, FERRY_EINVAL, "TLS: bad server name '%s': %s", name,
                              ssl_errstr(ebuf, sizeof ebuf));
        if (!o->tls_insecure) {
            SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            if (!SSL_set1_host(t->ssl, name))
                return ferry__err(err, FERRY_EINVAL, "TLS: bad server name '%s'", name);
        }
    }

    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(t->ssl);
        if (r == 1) break;
        int e = SSL_get_error(t->ssl, r);
        short ev;
        if (e == SSL_ERROR_WANT_READ)
            ev = POLLIN;
        else if (e == SSL_ERROR_WANT_WRITE)
            ev = POLLOUT;
        else
            return tls_handshake_error(t, e, err);
        if ((rc = wait_fd(t->fd, ev, deadline_ms)) != 0)
            return wait_err(t, rc, "TLS handshake", err);
    }
    t->tls_ok = 1;
    return 0;
}

int ferry__transport_connect(const ferry_redis_url *u, const ferry_redis_options *o,
                             const char *endpoint, int64_t deadline_ms, ferry_transport **out,
                             ferry_error *err) {
    *out = NULL;
    ferry_redis_options defaults;
    if (!o) {
        ferry_redis_options_init(&defaults);
        o = &defaults;
    }
    ferry_transport *t = calloc(1, sizeof *t);
    if (!t) return ferry__err(err, FERRY_ENOMEM, "redis: out of memory");
    t->fd = -1;
    snprintf(t->endpoint, sizeof t->endpoint, "%s", endpoint);
    int rc = u->kind == FERRY_URL_UNIX ? connect_unix(t, u, deadline_ms, err)
                                       : connect_tcp(t, u, deadline_ms, err);
    if (rc == 0 && u->kind == FERRY_URL_TLS) rc = tls_connect(t, u, o, deadline_ms, err);
    if (rc != 0) {
        ferry__transport_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

void ferry__transport_close(ferry_transport *t) {
    if (!t) return;
    if (t->ssl) {
        /* One non-blocking attempt at close_notify; a broken session must not get one. */
        if (t->tls_ok) {
            ERR_clear_error();
            (void)SSL_shutdown(t->ssl);
        }
        SSL_free(t->ssl);
    }
    SSL_CTX_free(t->ctx);
    ERR_clear_error();
    if (t->fd >= 0) close(t->fd);
    free(t);
}

/* ---- I/O ---------------------------------------------------------------------------- */

static int tls_alert_error(ferry_transport *t, const char *op, ferry_error *err) {
    char ebuf[256];
    unsigned long e = ERR_peek_last_error();
    return ferry__err(err, FERRY_ETLS, "redis %s: %s: TLS: %s%s", t->endpoint, op,
                      ssl_errstr(ebuf, sizeof ebuf), alert_hint(t, e));
}

/* The connection was reset or closed under a read or write: a fatal alert the server sent
 * just before may be waiting unread, and it is the real reason. A TLS 1.3 server checks
 * the client certificate only after the client has finished its handshake, so a missing one
 * shows first as a reset under our first write. Reads what is there without waiting
 * (application data before the alert is discarded: the connection is lost anyway).
 * FERRY_ETLS with the alert, or 0 when there is none. */
static int tls_pending_alert(ferry_transport *t, const char *op, ferry_error *err) {
    char scratch[4096];
    int rc = 0;
    for (int i = 0; i < 64; i++) { /* bounded: at most 256 KiB of data ahead of it */
        size_t n = 0;
        ERR_clear_error();
        int r = SSL_read_ex(t->ssl, scratch, sizeof scratch, &n);
        if (r == 1) continue;
        if (SSL_get_error(t->ssl, r) == SSL_ERROR_SSL && is_peer_alert(ERR_peek_last_error()))
            rc = tls_alert_error(t, op, err);
        break;
    }
    ERR_clear_error();
    return rc;
}

/* Turn a failed SSL_read_ex/SSL_write_ex into a ferry error, or 0 with *ev = what to wait
 * for. A fatal alert from the server is FERRY_ETLS (it will say the same next time: a
 * configuration problem, not a lost connection); other failures are FERRY_EIO. */
static int tls_io_result(ferry_transport *t, int r, const char *op, short *ev, ferry_error *err) {
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ) {
        *ev = POLLIN;
        return 0;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
        *ev = POLLOUT;
        return 0;
    }
    t->tls_ok = 0;
    char ebuf[256];
    if (e == SSL_ERROR_SSL && is_peer_alert(ERR_peek_last_error()))
        return tls_alert_error(t, op, err);
    int reset = e == SSL_ERROR_SYSCALL && (t->sys_errno == ECONNRESET || t->sys_errno == EPIPE);
    if (reset || (e != SSL_ERROR_ZERO_RETURN && t->eof)) {
        int saved_errno = t->sys_errno, saved_eof = t->eof;
        int rc = tls_pending_alert(t, op, err);
        if (rc != 0) return rc;
        t->sys_errno = saved_errno;
        t->eof = saved_eof;
    }
    if (e == SSL_ERROR_ZERO_RETURN || t->eof)
        return ferry__err(err, FERRY_EIO, "redis %s: %s: connection closed by the server",
                          t->endpoint, op);
    if (e == SSL_ERROR_SYSCALL && t->sys_errno)
        return ferry__err(err, FERRY_EIO, "redis %s: %s: %s", t->endpoint, op,
                          strerror(t->sys_errno));
    return ferry__err(err, FERRY_EIO, "redis %s: %s: %s", t->endpoint, op,
                      ssl_errstr(ebuf, sizeof ebuf));
}

int ferry__transport_write(ferry_transport *t, const char *buf, size_t len, int64_t deadline_ms,
                           ferry_error *err) {
    while (len > 0) {
        short ev = POLLOUT;
        if (t->ssl) {
            size_t n = 0;
            ERR_clear_error();
            t->sys_errno = 0;
            int r = SSL_write_ex(t->ssl, buf, len, &n);
            if (r == 1) {
                buf += n;
                len -= n;
                continue;
            }
            int rc = tls_io_result(t, r, "write", &ev, err);
            if (rc != 0) return rc;
        } else {
            ssize_t n = send(t->fd, buf, len, MSG_NOSIGNAL);
            if (n >= 0) {
                buf += n;
                len -= (size_t)n;
                continue;
            }
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return ferry__err(err, FERRY_EIO, "redis %s: write: %s", t->endpoint,
                                  strerror(errno));
        }
        int rc = wait_fd(t->fd, ev, deadline_ms);
        if (rc != 0) return wait_err(t, rc, "write", err);
    }
    return 0;
}

int ferry__transport_read(ferry_transport *t, char *buf, size_t cap, size_t *got,
                          int64_t deadline_ms, ferry_error *err) {
    *got = 0;
    for (;;) {
        short ev = POLLIN;
        if (t->ssl) {
            /* OpenSSL may hold decrypted bytes the socket no longer signals: read first. */
            size_t n = 0;
            ERR_clear_error();
            t->sys_errno = 0;
            int r = SSL_read_ex(t->ssl, buf, cap, &n);
            if (r == 1) {
                *got = n;
                return 0;
            }
            int rc = tls_io_result(t, r, "read", &ev, err);
            if (rc != 0) return rc;
        } else {
            /* A reply is rarely there right after the request: wait first, then read. */
            int rc = wait_fd(t->fd, POLLIN, deadline_ms);
            if (rc != 0) return wait_err(t, rc, "read", err);
            ssize_t n = recv(t->fd, buf, cap, 0);
            if (n > 0) {
                *got = (size_t)n;
                return 0;
            }
            if (n == 0)
                return ferry__err(err, FERRY_EIO, "redis %s: read: connection closed by the server",
                                  t->endpoint);
            if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
                return ferry__err(err, FERRY_EIO, "redis %s: read: %s", t->endpoint,
                                  strerror(errno));
            continue;
        }
        int rc = wait_fd(t->fd, ev, deadline_ms);
        if (rc != 0) return wait_err(t, rc, "read", err);
    }
}

int ferry__transport_peer_closed(ferry_transport *t) {
    if (!t || t->eof) return 1;
    struct pollfd p = {.fd = t->fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLERR | POLLNVAL)) return 1;
    char b;
    if (t->ssl) {
        /* The bytes waiting may be TLS records that are no reply: a TLS 1.3 session ticket,
         * or the close_notify alert a server sends as it closes (a peek at the socket would
         * take that for data). SSL_peek processes such records and leaves application data
         * where it is. */
        ERR_clear_error();
        t->sys_errno = 0;
        int r = SSL_peek(t->ssl, &b, 1);
        if (r > 0) return 0;
        int e = SSL_get_error(t->ssl, r);
        if ((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) && !t->eof) return 0;
        if (e != SSL_ERROR_ZERO_RETURN) t->tls_ok = 0; /* no close_notify on a failed session */
        ERR_clear_error();
        return 1;
    }
    ssize_t r = recv(t->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0) return 1; /* FIN: the server (or its host) closed the connection */
    if (r < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    return 0;
}
