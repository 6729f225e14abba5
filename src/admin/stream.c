/* stream.c - GET /api/stream: the dashboard's live view as Server-Sent Events. The answer is
 * text/event-stream: "retry: 3000", then "event: overview" with GET /api/overview's JSON on
 * one data line at once and every `interval` seconds (?interval=1..60, default 2; any other
 * query parameter is refused with 400), and a ": keepalive" comment every
 * STREAM_KEEPALIVE_MS (well under the 10 s idle timeout of the connection, and under the
 * 5 s a client may take as "the stream is dead"). An overview that cannot be built (Redis
 * unreachable) is sent as "event: error" with {"status": 503, "error": "..."} and the
 * stream goes on.
 *
 * Bounds: FERRY_ADMIN_STREAMS_MAX streams open at once, and STREAM_PER_CLIENT_MAX of them
 * from one client address (the next gets 429 with Retry-After: each holds one of the 64
 * connections and a thread, so one client must not take every slot for 300 s). A waiting
 * stream looks at its socket every STREAM_GONE_CHECK_MS and ends when the client has hung up,
 * so a page reloaded or left frees its slot at once, not at the next keepalive. Each ends
 * after FERRY_ADMIN_STREAM_SECONDS (the client reconnects, and sees a restarted server or a
 * changed token). ferry_admin_stop ends every stream at once (ferry__admin_streams_stop
 * wakes them), and waits at most for the one overview being built.
 *
 * Sharing: the event a stream built (overview or error) is reused by the others for
 * STREAM_SHARE_MS after its build ended, so the open streams together build at most about
 * one overview a second, however many there are, and a Redis that is down costs one
 * connect timeout per second, not one per stream (GET /api/overview always builds its
 * own). One stream builds at a time: it holds snap_mu (and no other lock) while it builds;
 * the others wait on stream_cv with their keepalive as deadline, so they go on sending
 * keepalives behind a slow build, and take its event when it ends. snap_text and snap_ms
 * are read and written under stream_mu.
 *
 * Threads: libmicrohttpd calls the content reader on the connection's own thread (thread
 * per connection), so the reader may wait on the server's stream_cv with a deadline; it
 * builds the overview with the request's borrowed resources, on that thread only. The
 * access log line is written once, when the stream ends, with how it ended in its summary
 * ("client gone", "max age", "server stop", "out of memory"). */
#define _GNU_SOURCE /* POLLRDHUP */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "admin/framework.h"
#include "util/clock.h"
#include "util/printable.h"

#define STREAM_KEEPALIVE_MS 4000
#define STREAM_INTERVAL_DEFAULT_S 2
#define STREAM_INTERVAL_MAX_S 60
#define STREAM_BLOCK 16384 /* bytes libmicrohttpd asks the reader for at most */
#define STREAM_RETRY "retry: 3000\n"
#define STREAM_SHARE_MS 1000      /* streams share an event built this recently */
#define STREAM_PER_CLIENT_MAX 3   /* streams open at once from one client address */
#define STREAM_RETRY_AFTER_S "30" /* the 429's Retry-After */
/* How often a waiting stream looks whether its client has gone: a page left or reloaded
 * frees its stream (and its client's share of STREAM_PER_CLIENT_MAX) this soon, not at the
 * next keepalive. */
#define STREAM_GONE_CHECK_MS 250

typedef struct admin_stream admin_stream;
struct admin_stream {
    ferry_admin_server *s;
    ferry__admin_req *r; /* the request (valid while the reader can be called) */
    int64_t interval_ms;
    int64_t end_ms, next_event_ms, next_keepalive_ms; /* monotonic */
    int sent_retry, ended;
    int started; /* the reader was called: the answer went out, stream_done logs it */
    int fd;      /* the connection's socket (libmicrohttpd's; only polled here), -1 unknown */
    const char *end_reason; /* static; NULL while open */
    char *pend;             /* text not yet handed to libmicrohttpd */
    size_t pend_len, pend_off;
    admin_stream *next, *prev;     /* [open_mu] open_list */
    char client[ADMIN_REMOTE_MAX]; /* the peer's address without its port */
    /* for the access log at the end (the request is gone by then) */
    int64_t t0_ms;
    char request_id[ADMIN_REQUEST_ID_MAX + 1];
    char actor[FERRY_ADMIN_TOKEN_NAME_MAX + 1];
    char trace_id[33];
    char remote[ADMIN_REMOTE_MAX];
    char path[512];
    char method[8];
};

/* Every open stream of every server of the process, for the per-client count (a server
 * has at most FERRY_ADMIN_STREAMS_MAX). Lock order: a server's stream_mu, then open_mu. */
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static admin_stream *open_list;

static void stream_free(admin_stream *st) {
    ferry_admin_server *s = st->s;
    pthread_mutex_lock(&s->stream_mu);
    s->streams_open--;
    pthread_mutex_lock(&open_mu);
    if (st->prev)
        st->prev->next = st->next;
    else
        open_list = st->next;
    if (st->next) st->next->prev = st->prev;
    pthread_mutex_unlock(&open_mu);
    pthread_mutex_unlock(&s->stream_mu);
    free(st->pend);
    free(st);
}

/* The event (kind and data lines, without the blank line) of a new overview, or of its
 * error; malloc'd, NULL when out of memory. Blocks: one overview's build. */
static char *build_event_text(admin_stream *st) {
    ferry_error err = {0};
    int status = 500;
    json_t *o = ferry__admin_overview(st->r, &status, &err);
    const char *kind = "overview";
    if (!o) {
        char shown[FERRY_ERROR_MESSAGE_MAX + 64];
        kind = "error";
        o = json_pack("{s:i,s:s}", "status", status, "error",
                      ferryx_printable(err.message, shown, sizeof shown));
    }
    /* compact JSON has no newline: one data line */
    char *data = o ? json_dumps(o, FERRY__ADMIN_JSON_FLAGS) : NULL;
    json_decref(o);
    if (!data) return NULL;
    size_t cap = strlen(data) + 32;
    char *text = malloc(cap);
    if (text) snprintf(text, cap, "event: %s\ndata: %s\n", kind, data);
    free(data);
    return text;
}

/* st->pend = the retry line when not sent yet, then `text` and "\n". 0, or -1 (memory). */
static int set_pend(admin_stream *st, const char *text) {
    const char *before = st->sent_retry ? "" : STREAM_RETRY;
    size_t cap = strlen(before) + strlen(text) + 2;
    free(st->pend);
    st->pend = malloc(cap);
    st->pend_off = 0;
    st->pend_len = 0;
    if (!st->pend) return -1;
    int n = snprintf(st->pend, cap, "%s%s\n", before, text);
    st->pend_len = n > 0 ? (size_t)n : 0;
    st->sent_retry = 1;
    return 0;
}

/* A monotonic deadline as a timespec for stream_cv (CLOCK_MONOTONIC). */
static struct timespec mono_deadline(int64_t ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t left = ms - ferry__mono_ms();
    if (left < 0) left = 0;
    until.tv_sec += (time_t)(left / 1000);
    until.tv_nsec += (long)(left % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

/* The next event into st->pend: the one shared (built less than STREAM_SHARE_MS ago), or
 * a new one built here when no other stream is building, else the one being built, waited
 * for until `until`. Returns 1 (st->pend set), 0 when `until` came first (no event yet),
 * -1 when the server is stopping, -2 when out of memory. Blocks: one build, or until
 * `until`. */
static int next_event(admin_stream *st, int64_t until) {
    ferry_admin_server *s = st->s;
    pthread_mutex_lock(&s->stream_mu);
    for (;;) {
        if (s->stopping) {
            pthread_mutex_unlock(&s->stream_mu);
            return -1;
        }
        int64_t now = ferry__mono_ms();
        if (s->snap_text && now - s->snap_ms < STREAM_SHARE_MS) {
            char *text = strdup(s->snap_text);
            pthread_mutex_unlock(&s->stream_mu);
            int rc = text ? set_pend(st, text) : -1;
            free(text);
            return rc ? -2 : 1;
        }
        /* trylock only while stream_mu is held: the builder takes stream_mu under snap_mu */
        if (pthread_mutex_trylock(&s->snap_mu) == 0) {
            pthread_mutex_unlock(&s->stream_mu);
            char *text = build_event_text(st);
            pthread_mutex_lock(&s->stream_mu);
            char *shared = text ? strdup(text) : NULL;
            if (shared) {
                free(s->snap_text);
                s->snap_text = shared;
                s->snap_ms = ferry__mono_ms(); /* shared from the build's end */
            }
            pthread_cond_broadcast(&s->stream_cv);
            pthread_mutex_unlock(&s->stream_mu);
            pthread_mutex_unlock(&s->snap_mu);
            int rc = text ? set_pend(st, text) : -1;
            free(text);
            return rc ? -2 : 1;
        }
        if (now >= until) {
            pthread_mutex_unlock(&s->stream_mu);
            return 0;
        }
        struct timespec ts = mono_deadline(until);
        pthread_cond_timedwait(&s->stream_cv, &s->stream_mu, &ts);
    }
}

static ssize_t stream_end(admin_stream *st, const char *reason) {
    st->ended = 1;
    if (!st->end_reason) st->end_reason = reason;
    return MHD_CONTENT_READER_END_OF_STREAM;
}

static ssize_t stream_fail(admin_stream *st) {
    st->ended = 1;
    st->end_reason = "out of memory";
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* 1 when the client has closed its end (a page left, a tab closed): an event stream's
 * client sends nothing after its request, so a hang-up or an error on the socket is the
 * only thing to see there. Blocks: no. */
static int client_gone(const admin_stream *st) {
    if (st->fd < 0) return 0;
    struct pollfd p = {.fd = st->fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    admin_stream *st = cls;
    ferry_admin_server *s = st->s;
    st->started = 1;
    for (;;) {
        if (st->pend && st->pend_off < st->pend_len) {
            size_t n = st->pend_len - st->pend_off;
            if (n > max) n = max;
            memcpy(buf, st->pend + st->pend_off, n);
            st->pend_off += n;
            return (ssize_t)n;
        }
        free(st->pend);
        st->pend = NULL;
        st->pend_len = st->pend_off = 0;
        if (st->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        pthread_mutex_lock(&s->stream_mu);
        int stopping = s->stopping;
        pthread_mutex_unlock(&s->stream_mu);
        int64_t now = ferry__mono_ms();
        if (stopping) return stream_end(st, "server stop");
        if (now >= st->end_ms) return stream_end(st, "max age");
        if (client_gone(st)) return stream_end(st, "client gone");
        if (now >= st->next_event_ms) {
            int64_t until = st->next_keepalive_ms < st->end_ms ? st->next_keepalive_ms : st->end_ms;
            int rc = next_event(st, until);
            if (rc == -1) return stream_end(st, "server stop");
            if (rc == -2) return stream_fail(st);
            now = ferry__mono_ms();
            if (rc == 1) {
                st->next_event_ms = now + st->interval_ms;
                st->next_keepalive_ms = now + STREAM_KEEPALIVE_MS;
                continue;
            }
        }
        if (now >= st->next_keepalive_ms) { /* also while another stream's build is slow */
            if (set_pend(st, ": keepalive\n")) return stream_fail(st);
            st->next_keepalive_ms = now + STREAM_KEEPALIVE_MS;
            continue;
        }
        int64_t wake = st->next_event_ms;
        if (st->next_keepalive_ms < wake) wake = st->next_keepalive_ms;
        if (st->end_ms < wake) wake = st->end_ms;
        if (st->fd >= 0 && now + STREAM_GONE_CHECK_MS < wake) wake = now + STREAM_GONE_CHECK_MS;
        struct timespec ts = mono_deadline(wake);
        pthread_mutex_lock(&s->stream_mu);
        if (!s->stopping && ferry__mono_ms() < wake)
            pthread_cond_timedwait(&s->stream_cv, &s->stream_mu, &ts);
        pthread_mutex_unlock(&s->stream_mu);
    }
}

/* The response is done with (the stream ended, the client left, the server stopped). */
static void stream_done(void *cls) {
    admin_stream *st = cls;
    ferry_admin_server *s = st->s;
    /* a response destroyed before it was sent (its headers failed) is logged by its caller */
    if (s->log && st->started) {
        char summary[64];
        snprintf(summary, sizeof summary, "stream ended: %s",
                 st->end_reason ? st->end_reason : "client gone");
        ferry_admin_log_record rec = {
            .kind = FERRY_ADMIN_LOG_ACCESS,
            .level = FERRY_LOG_INFO,
            .request_id = st->request_id,
            .method = st->method,
            .path = st->path,
            .status = 200, /* what was sent; how it ended is the summary */
            .duration_ms = (double)(ferry__mono_ms() - st->t0_ms),
            .actor = st->actor,
            .trace_id = st->trace_id[0] ? st->trace_id : NULL,
            .remote = st->remote,
            .summary = summary,
        };
        s->log(&rec, s->log_userdata);
    }
    stream_free(st);
}

struct MHD_Response *ferry__admin_stream_response(admin_request *ar) {
    admin_stream *st = ar->stream;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK,
                                                                  stream_read, st, stream_done);
    if (!resp) {
        ferry__admin_stream_discard(ar);
        return NULL;
    }
    ar->stream = NULL; /* the response's now: freed by stream_done */
    const union MHD_ConnectionInfo *ci =
        ar->conn ? MHD_get_connection_info(ar->conn, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
    st->fd = ci ? ci->connect_fd : -1;
    /* nginx: pass events at once */
    if (MHD_add_response_header(resp, "X-Accel-Buffering", "no") != MHD_YES) {
        MHD_destroy_response(resp);       /* calls stream_done, which frees st */
        ferry__admin_access_log(ar, 500); /* no answer is sent: the connection is closed */
        return NULL;
    }
    return resp;
}

void ferry__admin_stream_discard(admin_request *ar) {
    if (!ar->stream) return;
    stream_free(ar->stream);
    ar->stream = NULL;
}

void ferry__admin_streams_stop(ferry_admin_server *s) {
    pthread_mutex_lock(&s->stream_mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->stream_cv);
    pthread_mutex_unlock(&s->stream_mu);
}

/* The address part of "ADDR:PORT" / "[ADDR6]:PORT" into out. */
static void client_of(const char *remote, char *out, size_t cap) {
    const char *colon = strrchr(remote, ':');
    size_t n = colon ? (size_t)(colon - remote) : strlen(remote);
    if (n >= cap) n = cap - 1;
    memcpy(out, remote, n);
    out[n] = '\0';
}

/* GET /api/stream */
static int stream_open(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    for (size_t i = 0; i < ar->nquery; i++)
        if (strcmp(ar->query_keys[i], "interval") != 0) {
            char shown[96];
            return ferry__admin_fail(out, 400,
                                     "unknown query parameter \"%s\" (GET /api/stream takes "
                                     "interval only)",
                                     ferryx_printable(ar->query_keys[i], shown, sizeof shown));
        }
    long long interval = STREAM_INTERVAL_DEFAULT_S;
    const char *iv = ferry__admin_query(r, "interval");
    if (iv) {
        char *end = NULL;
        interval = strtoll(iv, &end, 10);
        if (!*iv || *end || interval < 1 || interval > STREAM_INTERVAL_MAX_S)
            return ferry__admin_fail(out, 400,
                                     "interval: expected whole seconds from 1 to %d (default %d)",
                                     STREAM_INTERVAL_MAX_S, STREAM_INTERVAL_DEFAULT_S);
    }
    admin_stream *st = calloc(1, sizeof *st);
    if (!st) return ferry__admin_fail(out, 500, "out of memory");
    st->s = s;
    st->r = r;
    st->fd = -1; /* known once the response is made */
    client_of(ar->remote, st->client, sizeof st->client);
    pthread_mutex_lock(&s->stream_mu);
    int stopping = s->stopping, full = s->streams_open >= FERRY_ADMIN_STREAMS_MAX, mine = 0;
    pthread_mutex_lock(&open_mu);
    for (admin_stream *o = open_list; o; o = o->next)
        if (o->s == s && !strcmp(o->client, st->client)) mine++;
    int refused = stopping || full || mine >= STREAM_PER_CLIENT_MAX;
    if (!refused) {
        s->streams_open++;
        st->next = open_list;
        if (open_list) open_list->prev = st;
        open_list = st;
    }
    pthread_mutex_unlock(&open_mu);
    pthread_mutex_unlock(&s->stream_mu);
    if (refused) {
        char client[ADMIN_REMOTE_MAX];
        snprintf(client, sizeof client, "%s", st->client);
        free(st);
        if (stopping) return ferry__admin_fail(out, 503, "the server is stopping");
        /* the framework sends these with the answer when it carries extra headers */
        ar->text_headers[0][0] = "Retry-After";
        ar->text_headers[0][1] = STREAM_RETRY_AFTER_S;
        ar->ntext_headers = 1;
        if (full)
            return ferry__admin_fail(out, 429,
                                     "%d event streams are open already (the most at once); poll "
                                     "GET /api/overview instead, or retry in " STREAM_RETRY_AFTER_S
                                     " s",
                                     FERRY_ADMIN_STREAMS_MAX);
        char shown[ADMIN_REMOTE_MAX + 16];
        return ferry__admin_fail(
            out, 429,
            "%d event streams are open from %s already (the most per "
            "client); poll GET /api/overview instead, or retry in " STREAM_RETRY_AFTER_S " s",
            STREAM_PER_CLIENT_MAX, ferryx_printable(client, shown, sizeof shown));
    }
    st->interval_ms = interval * 1000;
    st->t0_ms = ferry__mono_ms();
    st->end_ms = st->t0_ms + (int64_t)FERRY_ADMIN_STREAM_SECONDS * 1000;
    st->next_event_ms = st->t0_ms; /* the first at once */
    st->next_keepalive_ms = st->t0_ms + STREAM_KEEPALIVE_MS;
    snprintf(st->request_id, sizeof st->request_id, "%s", ar->request_id);
    snprintf(st->actor, sizeof st->actor, "%s", ar->actor);
    snprintf(st->trace_id, sizeof st->trace_id, "%s", ar->trace_id);
    snprintf(st->remote, sizeof st->remote, "%s", ar->remote);
    snprintf(st->path, sizeof st->path, "%s", ar->path_shown);
    snprintf(st->method, sizeof st->method, "%s", ar->method);
    ar->stream = st;
    ar->text_type = "text/event-stream; charset=utf-8";
    out->status = 200;
    return 0;
}

const ferry__admin_route ferry__admin_routes_stream[] = {
    {"GET", "/api/stream", FERRY__ADMIN_SCOPE_READ, stream_open},
    {NULL, NULL, 0, NULL},
};
