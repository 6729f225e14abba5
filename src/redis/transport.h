/* transport.h - byte stream to a Redis server: TCP, unix socket or TLS (OpenSSL 3) over a
 * non-blocking socket, every call bounded by an absolute monotonic deadline.
 *
 * Private to src/redis/ (conn.c is the only user). A transport is used by one thread at a
 * time. Writes never raise SIGPIPE (send with MSG_NOSIGNAL, also under TLS through our own
 * BIO). Any failure leaves the stream in an unknown state: the caller must close it. */
#ifndef FERRY_REDIS_TRANSPORT_H
#define FERRY_REDIS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "ferry/redis.h"
#include "redis/url.h"

typedef struct ferry_transport ferry_transport;

/* Resolve and connect to u (each resolved address in turn), set TCP_NODELAY and
 * SO_KEEPALIVE, and for FERRY_URL_TLS do the handshake with verification per o (NULL =
 * defaults). `deadline_ms` is on the ferry__mono_ms() clock and bounds everything,
 * name resolution included (see resolve.h). A unix socket whose listen backlog is full is
 * retried until the deadline. `endpoint` names the peer in messages. Returns 0 and *out
 * (freed with ferry__transport_close), or FERRY_EINVAL / FERRY_ENOMEM / FERRY_EIO /
 * FERRY_ETIMEDOUT / FERRY_ETLS with a message. */
int ferry__transport_connect(const ferry_redis_url *u, const ferry_redis_options *o,
                             const char *endpoint, int64_t deadline_ms, ferry_transport **out,
                             ferry_error *err);

/* Send a best-effort TLS close_notify (never waits), close the socket, free. NULL is ok. */
void ferry__transport_close(ferry_transport *t);

/* Write all len bytes before the deadline. 0, FERRY_EIO, FERRY_ETIMEDOUT, or FERRY_ETLS
 * when the server sent a fatal TLS alert (read even when the write met the reset that
 * followed it: a TLS 1.3 server refuses a missing client certificate only after our
 * handshake is done), with OpenSSL's reason and a hint about tls_cert_file. */
int ferry__transport_write(ferry_transport *t, const char *buf, size_t len, int64_t deadline_ms,
                           ferry_error *err);

/* On a connection with no request outstanding: has the peer closed it (orderly close, TLS
 * close_notify, reset or socket error already queued)? Never blocks and consumes no
 * application data (TLS records that are none, such as TLS 1.3 session tickets, are
 * processed). 0 when nothing says so. */
int ferry__transport_peer_closed(ferry_transport *t);

/* Read at least one byte (at most cap) into buf before the deadline; *got = count.
 * 0, FERRY_EIO (including orderly close by the peer), FERRY_ETIMEDOUT, or FERRY_ETLS for a
 * fatal TLS alert from the server, as for writes. */
int ferry__transport_read(ferry_transport *t, char *buf, size_t cap, size_t *got,
                          int64_t deadline_ms, ferry_error *err);

#endif
