/* stream.c - GET /api/stream: the dashboard's live view as Server-Sent Events. The answer is
 * text/event-stream: "retry: 3000", then "event: overview" with GET /api/overview's JSON on
 * one data line at once and every `interval` seconds (?interval=1..60, default 2), and a
 * ": keepalive" comment every STREAM_KEEPALIVE_MS (well under the 10 s idle timeout of the
 * connection, and under the 5 s a client may take as "the stream is dead"). An overview
 * that cannot be built (Redis unreachable) is sent as "event: error" with
 * {"status": 503, "error": "..."} and the stream goes on.
 *
 * Bounds: FERRY_ADMIN_STREAMS_MAX streams open at once (the next gets 429: each holds one of
 * the 64 connections and a thread); each ends after FERRY_ADMIN_STREAM_SECONDS (the client
 * reconnects, and sees a restarted server or a changed token). ferry_admin_stop ends every
 * stream at once (ferry__admin_streams_stop wakes them).
 *
 * Threads: libmicrohttpd calls the content reader on the connection's own thread (thread
 * per connection), so the reader may wait on the server's stream_cv with a deadline; it
 * builds the overview with the request's borrowed resources, on that thread only. The
 * access log line is written once, when the stream ends.
 *
 * Cost: an overview a stream built is reused by the others for STREAM_SHARE_MS, so the
 * open streams together build at most about one overview a second, however many there are
 * (GET /api/overview always builds its own). */
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
#define STREAM_SHARE_MS 1000 /* streams share an overview this young */

typedef struct admin_stream {
    ferry_admin_server *s;
    ferry__admin_req *r; /* the request (valid while the reader can be called) */
    int64_t interval_ms;
    int64_t end_ms, next_event_ms, next_keepalive_ms; /* monotonic */
    int sent_first, ended;
    char *pend; /* text not yet handed to libmicrohttpd */
    size_t pend_len, pend_off;
    /* for the access log at the end (the request is gone by then) */
    int64_t t0_ms;
    char request_id[ADMIN_REQUEST_ID_MAX + 1];
    char actor[FERRY_ADMIN_TOKEN_NAME_MAX + 1];
    char trace_id[33];
    char remote[ADMIN_REMOTE_MAX];
    char path[512];
    char method[8];
} admin_stream;

static void stream_free(admin_stream *st) {
    ferry_admin_server *s = st->s;
    pthread_mutex_lock(&s->stream_mu);
    s->streams_open--;
    pthread_mutex_unlock(&s->stream_mu);
    free(st->pend);
    free(st);
}

/* The overview as one line of JSON (malloc'd): the one another stream built less than
 * STREAM_SHARE_MS ago, or a new one. NULL with *status and err when it cannot be built. */
static char *overview_text(admin_stream *st, int *status, ferry_error *err) {
    ferry_admin_server *s = st->s;
    pthread_mutex_lock(&s->snap_mu);
    int64_t t0 = ferry__mono_ms();
    char *text = NULL;
    if (s->snap_text && t0 - s->snap_ms < STREAM_SHARE_MS) {
        text = strdup(s->snap_text);
    } else {
        json_t *o = ferry__admin_overview(st->r, status, err);
        /* compact JSON has no newline: one data line */
        text = o ? json_dumps(o, FERRY__ADMIN_JSON_FLAGS) : NULL;
        json_decref(o);
        if (o && !text) *status = 500;
        if (text) {
            free(s->snap_text);
            s->snap_text = strdup(text);
            s->snap_ms = t0;
        }
    }
    pthread_mutex_unlock(&s->snap_mu);
    return text;
}

/* The next event's text (malloc'd) into st->pend. */
static void build_event(admin_stream *st, const char *before) {
    ferry_error err = {0};
    int status = 500;
    char *text = overview_text(st, &status, &err);
    const char *kind = "overview";
    if (!text) {
        char shown[FERRY_ERROR_MESSAGE_MAX + 64];
        kind = "error";
        json_t *o = json_pack("{s:i,s:s}", "status", status, "error",
                              ferryx_printable(err.message, shown, sizeof shown));
        text = o ? json_dumps(o, FERRY__ADMIN_JSON_FLAGS) : NULL;
        json_decref(o);
    }
    size_t cap = strlen(before) + (text ? strlen(text) : 2) + 64;
    st->pend = malloc(cap);
    if (st->pend) {
        int n =
            snprintf(st->pend, cap, "%sevent: %s\ndata: %s\n\n", before, kind, text ? text : "{}");
        st->pend_len = n > 0 ? (size_t)n : 0;
    }
    st->pend_off = 0;
    free(text);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    admin_stream *st = cls;
    ferry_admin_server *s = st->s;
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
        int64_t now = ferry__mono_ms();
        if (!st->sent_first) {
            st->sent_first = 1;
            build_event(st, STREAM_RETRY);
            now = ferry__mono_ms();
            st->next_event_ms = now + st->interval_ms;
            st->next_keepalive_ms = now + STREAM_KEEPALIVE_MS;
            if (!st->pend) return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(&s->stream_mu);
        while (!s->stopping) {
            now = ferry__mono_ms();
            int64_t wake = st->next_event_ms;
            if (st->next_keepalive_ms < wake) wake = st->next_keepalive_ms;
            if (st->end_ms < wake) wake = st->end_ms;
            if (now >= wake) break;
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            int64_t left = wake - now;
            until.tv_sec += (time_t)(left / 1000);
            until.tv_nsec += (long)(left % 1000) * 1000000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&s->stream_cv, &s->stream_mu, &until);
        }
        int stopping = s->stopping;
        pthread_mutex_unlock(&s->stream_mu);
        if (stopping || now >= st->end_ms) {
            st->ended = 1;
            return MHD_CONTENT_READER_END_OF_STREAM;
        }
        if (now >= st->next_event_ms) {
            build_event(st, "");
            now = ferry__mono_ms();
            st->next_event_ms = now + st->interval_ms;
            if (!st->pend) return MHD_CONTENT_READER_END_WITH_ERROR;
        } else {
            st->pend = strdup(": keepalive\n\n");
            if (!st->pend) return MHD_CONTENT_READER_END_WITH_ERROR;
            st->pend_len = strlen(st->pend);
            st->pend_off = 0;
            st->next_keepalive_ms = now + STREAM_KEEPALIVE_MS;
        }
    }
}

/* The response is done with (the stream ended, the client left, the server stopped). */
static void stream_done(void *cls) {
    admin_stream *st = cls;
    ferry_admin_server *s = st->s;
    if (s->log) {
        ferry_admin_log_record rec = {
            .kind = FERRY_ADMIN_LOG_ACCESS,
            .level = FERRY_LOG_INFO,
            .request_id = st->request_id,
            .method = st->method,
            .path = st->path,
            .status = 200,
            .duration_ms = (double)(ferry__mono_ms() - st->t0_ms),
            .actor = st->actor,
            .trace_id = st->trace_id[0] ? st->trace_id : NULL,
            .remote = st->remote,
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
    MHD_add_response_header(resp, "X-Accel-Buffering", "no"); /* nginx: pass events at once */
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

/* GET /api/stream */
static int stream_open(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
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
    pthread_mutex_lock(&s->stream_mu);
    int stopping = s->stopping, full = s->streams_open >= FERRY_ADMIN_STREAMS_MAX;
    if (!stopping && !full) s->streams_open++;
    pthread_mutex_unlock(&s->stream_mu);
    if (stopping) return ferry__admin_fail(out, 503, "the server is stopping");
    if (full)
        return ferry__admin_fail(out, 429,
                                 "%d event streams are open already (the most at once); poll "
                                 "GET /api/overview instead",
                                 FERRY_ADMIN_STREAMS_MAX);
    admin_stream *st = calloc(1, sizeof *st);
    if (!st) {
        pthread_mutex_lock(&s->stream_mu);
        s->streams_open--;
        pthread_mutex_unlock(&s->stream_mu);
        return ferry__admin_fail(out, 500, "out of memory");
    }
    st->s = s;
    st->r = r;
    st->interval_ms = interval * 1000;
    st->t0_ms = ferry__mono_ms();
    st->end_ms = st->t0_ms + (int64_t)FERRY_ADMIN_STREAM_SECONDS * 1000;
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
