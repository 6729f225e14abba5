/* resolve.c - getaddrinfo with a deadline (see resolve.h). */
#include "redis/resolve.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "util/clock.h"
#include "util/error.h"

/* Shared between the caller and the resolver thread; the last of the two to let go frees
 * it (refs starts at 2). */
typedef struct lookup {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int done;
    int abandoned; /* the caller timed out and left: counted in `abandoned` below */
    int rc;        /* getaddrinfo result */
    int sys_errno;
    struct addrinfo *res;
    char port[16];
    char host[]; /* flexible: the name to resolve */
} lookup;

/* Lookups whose caller gave up while getaddrinfo still runs. While DNS is dead each
 * connect attempt would leave one more thread behind: past the cap, fail at once. */
static atomic_int abandoned;

static _Atomic(ferry__gai_fn) gai_override; /* tests only (ferry__resolve_set_gai) */

void ferry__resolve_set_gai(ferry__gai_fn fn) {
    atomic_store(&gai_override, fn);
}

static const struct addrinfo stream_hints = {
    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};

static void lookup_release(lookup *l) {
    pthread_mutex_lock(&l->mu);
    int last = --l->refs == 0;
    pthread_mutex_unlock(&l->mu);
    if (!last) return;
    if (l->res) freeaddrinfo(l->res);
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static void *resolver_main(void *arg) {
    lookup *l = arg;
    struct addrinfo *res = NULL;
    ferry__gai_fn gai = atomic_load(&gai_override);
    int rc = (gai ? gai : getaddrinfo)(l->host, l->port, &stream_hints, &res);
    int e = errno;
    pthread_mutex_lock(&l->mu);
    if (l->abandoned) atomic_fetch_sub(&abandoned, 1);
    l->rc = rc;
    l->sys_errno = e;
    l->res = res;
    l->done = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    lookup_release(l);
    return NULL;
}

static int gai_error(const char *what, const char *host, int rc, int sys_errno, ferry_error *err) {
    if (rc == EAI_MEMORY) return ferry__err(err, FERRY_ENOMEM, "%s: out of memory resolving", what);
    return ferry__err(err, FERRY_EIO, "%s: cannot resolve '%s': %s", what, host,
                      rc == EAI_SYSTEM ? strerror(sys_errno) : gai_strerror(rc));
}

int ferry__resolve(const char *host, int port, int64_t deadline_ms, const char *what,
                   struct addrinfo **out, ferry_error *err) {
    *out = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);

    /* Numeric addresses never touch DNS: no thread needed. */
    struct addrinfo hints = stream_hints;
    hints.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(host, portstr, &hints, out);
    if (rc == 0) return 0;
    if (rc != EAI_NONAME) return gai_error(what, host, rc, errno, err);

    if (atomic_load(&abandoned) >= FERRY_RESOLVE_ABANDONED_MAX)
        return ferry__err(err, FERRY_EIO,
                          "%s: cannot resolve '%s': %d earlier lookups have not returned yet "
                          "(is DNS answering?)",
                          what, host, FERRY_RESOLVE_ABANDONED_MAX);
    size_t hlen = strlen(host);
    lookup *l = calloc(1, sizeof *l + hlen + 1);
    if (!l) return ferry__err(err, FERRY_ENOMEM, "%s: out of memory resolving", what);
    memcpy(l->host, host, hlen + 1);
    memcpy(l->port, portstr, sizeof portstr);
    l->refs = 2;
    pthread_mutex_init(&l->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cv, &ca);
    pthread_condattr_destroy(&ca);

    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    pthread_t tid;
    int terr = pthread_create(&tid, &ta, resolver_main, l);
    pthread_attr_destroy(&ta);
    if (terr != 0) {
        l->refs = 1;
        lookup_release(l);
        return ferry__err(err, FERRY_EIO, "%s: cannot start a resolver thread: %s", what,
                          strerror(terr));
    }

    /* ferry__mono_ms is CLOCK_MONOTONIC in ms, the clock the condition variable uses */
    struct timespec ts = {.tv_sec = (time_t)(deadline_ms / 1000),
                          .tv_nsec = (long)(deadline_ms % 1000) * 1000000L};
    pthread_mutex_lock(&l->mu);
    int timed_out = 0;
    while (!l->done && !timed_out)
        timed_out = pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT;
    int done = l->done;
    if (!done) {
        l->abandoned = 1;
        atomic_fetch_add(&abandoned, 1);
    }
    if (done) {
        rc = l->rc;
        *out = l->res;
        l->res = NULL; /* ours now */
    }
    int sys_errno = l->sys_errno;
    pthread_mutex_unlock(&l->mu);
    lookup_release(l);
    if (!done) return ferry__err(err, FERRY_ETIMEDOUT, "%s: resolving '%s' timed out", what, host);
    if (rc != 0) return gai_error(what, host, rc, sys_errno, err);
    return 0;
}
