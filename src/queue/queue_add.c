/* queue_add.c - ferry_queue_add / ferry_queue_add_bulk: validate every job first (name,
 * data JSON and size, options merged over the queue defaults), then send them to the
 * addJobs script in chunks of at most CHUNK_JOBS jobs / CHUNK_BYTES bytes, all chunks of a
 * window pipelined in one round trip.
 *
 * Per-job CPU matters here (the outbox relay adds every row through it), so a run of jobs
 * with the same options text shares one parse, and ferry__queue_add_bulk_ids takes each
 * job's id apart from its options: the id is placed into the shared parse's stored JSON
 * instead of parsing {"jobId":...} once per job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts_ext.h"
#include "util/json_text.h"
#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"

#define CHUNK_JOBS 1000                 /* jobs per addJobs call */
#define CHUNK_BYTES ((size_t)8 << 20)   /* argument bytes per addJobs call (soft) */
#define WINDOW_BYTES ((size_t)64 << 20) /* bytes buffered before one round trip (soft) */
#define BULK_MAX FERRY_QUEUE_BULK_MAX   /* jobs per ferry_queue_add_bulk call */
#define FIELDS_PER_JOB 5
#define HEAD_ARGS 3
#define DUE_MS_MAX 2199023255551LL /* 2^41 - 1: due * 4096 must stay below 2^53 */

/* One validated job, ready to become addJobs arguments. The strings are borrowed (from
 * the caller's spec, the call's parses, or owned_opts). */
typedef struct prepared {
    const char *name, *data, *opts, *id; /* opts = stored opts JSON; id = custom id or "" */
    size_t name_len, data_len, opts_len, id_len;
    char *owned_opts; /* stored opts built for this job's given id, or NULL */
    /* "" when the job takes the call's clock as its timestamp, no delay, priority 0 and
     * is not lifo (addJobs' common case), else "<timestamp> <delay> <priority> <lifo>" */
    char extra[96];
    size_t extra_len;
} prepared;

typedef struct chunk {
    size_t first, count;
} chunk;

/* One distinct options text of a call, parsed once over the queue defaults. */
typedef struct opts_parse {
    const char *text; /* the spec's opts_json, "" for NULL (borrowed from the caller) */
    int with_id;      /* parsed for ids given apart from the text: slot is filled */
    ferry__job_opts opts;
    ferry__job_opts_extra x;
    ferry__opts_id_slot slot;
    size_t stored_len;
} opts_parse;

/* One add_bulk call: its input and the parses made so far. */
typedef struct add_call {
    ferry_queue *q;
    const ferry_job_spec *jobs;
    const char *const *job_ids; /* NULL, or one custom id (or NULL) per job */
    int data_checked;
    int64_t now;
    opts_parse *parses;
    size_t nparses, cap;
} add_call;

/* The parse of job i's options: the previous job's when its text is the same (bulk adds
 * usually repeat one options text, or none), else a new one. */
static int get_parse(add_call *c, const char *text, int with_id, const opts_parse **out,
                     ferry_error *err) {
    if (!text) text = "";
    if (c->nparses) {
        const opts_parse *last = &c->parses[c->nparses - 1];
        if (last->with_id == with_id && (last->text == text || !strcmp(last->text, text))) {
            *out = last;
            return 0;
        }
    }
    if (c->nparses == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        opts_parse *np = realloc(c->parses, cap * sizeof *np);
        if (!np) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        c->parses = np;
        c->cap = cap;
    }
    opts_parse *p = &c->parses[c->nparses];
    memset(p, 0, sizeof *p);
    p->text = text;
    p->with_id = with_id;
    int rc = with_id ? ferry__job_opts_parse_idslot(c->q->defaults, text, c->q->opts_flags,
                                                    &p->opts, &p->x, &p->slot, err)
                     : ferry__job_opts_parse_flags(c->q->defaults, text, c->q->opts_flags, &p->opts,
                                                   &p->x, err);
    if (rc) return rc;
    p->stored_len = strlen(p->opts.stored_json);
    c->nparses++;
    *out = p;
    return 0;
}

/* Stored opts for a given non-empty id: the parse's slot with the id JSON-escaped exactly as
 * ferryx_json_serialize escapes it (ids rarely need escaping: then it is copied as is). */
static int opts_with_id(const opts_parse *op, const char *id, size_t id_len, prepared *p,
                        ferry_error *err) {
    int rc = ferry__job_id_check(id, err);
    if (rc) return rc;
    if (!ferryx_utf8_valid(id, id_len))
        return ferry__err(err, FERRY_EINVAL, "opts.jobId: not valid UTF-8");
    const char *esc = id;
    size_t esc_len = id_len;
    char *escaped = NULL;
    for (size_t i = 0; i < id_len; i++) {
        unsigned char ch = (unsigned char)id[i];
        if (ch < 0x20 || ch == '"' || ch == '\\') {
            json_t *s = json_stringn(id, id_len);
            escaped = s ? ferryx_json_serialize(s, 0, 6 * FERRY_JOB_ID_MAX + 2) : NULL;
            json_decref(s);
            if (!escaped) return ferry__err(err, FERRY_ENOMEM, "out of memory");
            esc = escaped + 1; /* without the quotes */
            esc_len = strlen(escaped) - 2;
            break;
        }
    }
    const ferry__opts_id_slot *sl = &op->slot;
    char *o = malloc(sl->len + esc_len + 1);
    if (!o) {
        free(escaped);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    memcpy(o, sl->text, sl->at);
    memcpy(o + sl->at, esc, esc_len);
    memcpy(o + sl->at + esc_len, sl->text + sl->at, sl->len - sl->at + 1);
    free(escaped);
    p->owned_opts = o;
    p->opts = o;
    p->opts_len = sl->len + esc_len;
    p->id = id;
    p->id_len = id_len;
    return 0;
}

static int prepare_one(add_call *c, size_t i, prepared *p, ferry_error *err) {
    ferry_queue *q = c->q;
    const ferry_job_spec *spec = &c->jobs[i];
    if (!spec->name || !*spec->name) return ferry__err(err, FERRY_EINVAL, "job name is empty");
    p->name = spec->name;
    p->name_len = strlen(spec->name);
    if (p->name_len > FERRY_JOB_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "job name is %zu bytes, limit %d", p->name_len,
                          FERRY_JOB_NAME_MAX);
    if (!ferryx_utf8_valid(p->name, p->name_len))
        return ferry__err(err, FERRY_EINVAL, "job name is not valid UTF-8");

    p->data = spec->data_json ? spec->data_json : "{}";
    p->data_len = strlen(p->data);
    if (p->data_len > q->max_payload)
        return ferry__err(err, FERRY_ETOOBIG, "job data is %zu bytes, limit %zu", p->data_len,
                          q->max_payload);
    ferryx_json_check_error je;
    if (!c->data_checked && ferryx_json_check(p->data, p->data_len, FERRY_JOB_DATA_DEPTH_MAX, &je))
        return ferry__err(err, FERRY_EINVAL, "job data: invalid JSON at byte %zu: %s%s", je.offset,
                          je.reason,
                          strcmp(je.reason, "nested too deeply") ? "" : " (limit 512 levels)");

    const char *given = c->job_ids ? c->job_ids[i] : NULL;
    const opts_parse *op = NULL;
    int rc = get_parse(c, spec->opts_json, given != NULL, &op, err);
    if (rc) return rc;
    p->opts = op->opts.stored_json;
    p->opts_len = op->stored_len;
    p->id = op->opts.job_id ? op->opts.job_id : "";
    p->id_len = strlen(p->id);
    if (given && *given && (rc = opts_with_id(op, given, strlen(given), p, err))) return rc;
    const ferry__job_opts *o = &op->opts;
    if (op->x.has_dedup)
        return ferry__err(err, FERRY_EINVAL,
                          "opts.deduplication: deduplication is not supported yet");
    if (op->x.has_parent)
        return ferry__err(err, FERRY_EINVAL,
                          "opts.parent: flows (parent/child jobs) are not "
                          "supported yet");
    if (op->x.size_limit > 0 && (long long)p->data_len > op->x.size_limit)
        return ferry__err(err, FERRY_ETOOBIG, "job data is %zu bytes, over its opts.sizeLimit %lld",
                          p->data_len, op->x.size_limit);

    /* Node: opts.timestamp when truthy, else Date.now() */
    long long now = (long long)c->now, ts = o->timestamp > 0 ? o->timestamp : now;
    if (o->delay_ms > 0 && ts + o->delay_ms > DUE_MS_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "opts.delay: due time %lld ms is past %lld ms (2039-09), "
                          "where delayed scores lose precision",
                          ts + o->delay_ms, DUE_MS_MAX);
    if (ts == now && o->delay_ms == 0 && o->priority == 0 && !o->lifo)
        p->extra_len = 0;
    else
        p->extra_len = (size_t)snprintf(p->extra, sizeof p->extra, "%lld %lld %lld %d", ts,
                                        o->delay_ms, o->priority, o->lifo ? 1 : 0);
    p->extra[p->extra_len] = 0;
    return 0;
}

static size_t job_bytes(const prepared *p) {
    return p->name_len + p->data_len + p->opts_len + 96;
}

/* Append one addJobs call for jobs[c->first .. +count). */
static int append_chunk(ferry_queue *q, const prepared *jobs, const chunk *c, int64_t now,
                        ferry_error *err) {
    size_t nargs = HEAD_ARGS + FIELDS_PER_JOB * c->count;
    const char **args = malloc(nargs * sizeof *args);
    size_t *lens = malloc(nargs * sizeof *lens);
    if (!args || !lens) {
        free(args);
        free(lens);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    char nowbuf[24], countbuf[24];
    snprintf(nowbuf, sizeof nowbuf, "%lld", (long long)now);
    snprintf(countbuf, sizeof countbuf, "%zu", c->count);
    args[0] = q->keys.base, lens[0] = q->keys.base_len;
    args[1] = nowbuf, lens[1] = strlen(nowbuf);
    args[2] = countbuf, lens[2] = strlen(countbuf);
    for (size_t i = 0; i < c->count; i++) {
        const prepared *p = &jobs[c->first + i];
        size_t k = HEAD_ARGS + FIELDS_PER_JOB * i;
        args[k] = p->name, lens[k] = p->name_len;
        args[k + 1] = p->data, lens[k + 1] = p->data_len;
        args[k + 2] = p->opts, lens[k + 2] = p->opts_len;
        args[k + 3] = p->id, lens[k + 3] = p->id_len;
        args[k + 4] = p->extra, lens[k + 4] = p->extra_len;
    }
    const char *keys[] = {q->key[QK_WAIT],    q->key[QK_META],        q->key[QK_ID],
                          q->key[QK_DELAYED], q->key[QK_PRIORITIZED], q->key[QK_PC],
                          q->key[QK_MARKER],  q->key[QK_EVENTS],      q->key[QK_ACTIVE]};
    const ferry_script *s = ferry__script_get("addJobs");
    int rc = s ? ferry__conn_append_evalsha(q->conn, s, 9, keys, (int)nargs, args, lens, err)
               : ferry__err(err, FERRY_EINVAL, "queue: script addJobs is not built in");
    free(args);
    free(lens);
    return rc;
}

struct window_ctx {
    const prepared *jobs;
    const chunk *chunks;
    const size_t *which; /* indexes into chunks to send */
    size_t n;
    int64_t now;
};

static int window_append(ferry_queue *q, void *vctx, size_t *n, ferry_error *err) {
    struct window_ctx *w = vctx;
    *n = 0;
    for (size_t i = 0; i < w->n; i++) {
        int rc = append_chunk(q, w->jobs, &w->chunks[w->which[i]], w->now, err);
        if (rc) return rc;
        (*n)++;
    }
    return 0;
}

static int is_noscript(const redisReply *r) {
    return r && r->type == REDIS_REPLY_ERROR && r->len >= 8 && !memcmp(r->str, "NOSCRIPT", 8);
}

/* Copy a chunk's ids out of its reply. */
static int take_ids(ferry_queue *q, const redisReply *r, const chunk *c, char **ids,
                    ferry_error *err) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != c->count)
        return ferry__err(err, FERRY_EPROTO, "queue %s: addJobs: unexpected reply", q->shown);
    for (size_t i = 0; i < c->count; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING)
            return ferry__err(err, FERRY_EPROTO, "queue %s: addJobs: unexpected id reply",
                              q->shown);
        if (ids) {
            ids[c->first + i] = strndup(e->str, e->len);
            if (!ids[c->first + i]) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        }
    }
    return 0;
}

/* Send chunks[which[0..n)] in one round trip; NOSCRIPT chunks (nothing happened for them)
 * are sent again once after reloading the scripts. *added counts jobs known added. */
static int send_window(ferry_queue *q, const prepared *jobs, const chunk *chunks, size_t *which,
                       size_t n, int64_t now, char **ids, size_t *added, ferry_error *err) {
    redisReply **r = calloc(n, sizeof *r);
    if (!r) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    int rc = 0;
    for (int pass = 0; rc == 0 && n > 0; pass++) {
        struct window_ctx w = {jobs, chunks, which, n, now};
        size_t got = 0;
        /* Not idempotent: after a transport failure we cannot know what ran. */
        rc = ferry__queue_exchange(q, window_append, &w, 0, r, n, &got, err);
        if (rc) break;
        size_t retry = 0;
        for (size_t i = 0; i < got; i++) {
            const chunk *c = &chunks[which[i]];
            if (is_noscript(r[i]) && pass == 0) {
                which[retry++] = which[i];
            } else if (r[i]->type == REDIS_REPLY_ERROR) {
                if (rc == 0)
                    rc = ferry__err(err, FERRY_EREDIS, "queue %s: adding jobs %zu..%zu: %s",
                                    q->shown, c->first, c->first + c->count - 1, r[i]->str);
            } else {
                /* keep counting what was added after a failed chunk: the caller must know */
                ferry_error e = {0};
                int trc = take_ids(q, r[i], c, ids, &e);
                if (trc == 0)
                    *added += c->count;
                else if (rc == 0)
                    rc = ferry__err(err, trc, "%s", e.message);
            }
            freeReplyObject(r[i]);
            r[i] = NULL;
        }
        if (rc == 0 && retry) rc = ferry__conn_load_scripts(q->conn, err);
        n = retry;
    }
    free(r);
    return rc;
}

/* Validate every job into p[0..n); the error names the job's index when n > 1. */
static int prepare_all(add_call *c, size_t n, prepared *p, ferry_error *err) {
    if (c->q->name_unsafe) {
        ferry_error e = {0};
        ferry__queue_name_check(c->q->keys.queue, &e);
        return ferry__err(err, e.code, "no jobs can be added: %s", e.message);
    }
    for (size_t i = 0; i < n; i++) {
        ferry_error e = {0};
        int rc = prepare_one(c, i, &p[i], &e);
        if (rc && n > 1) return ferry__err(err, rc, "job %zu: %s", i, e.message);
        if (rc) return ferry__err(err, rc, "%s", e.message);
    }
    return 0;
}

/* Free what prepare_all and the call's parses hold, and p itself. */
static void free_prepared(add_call *c, prepared *p, size_t n) {
    for (size_t i = 0; p && i < n; i++)
        free(p[i].owned_opts);
    for (size_t i = 0; i < c->nparses; i++) {
        ferry__job_opts_free(&c->parses[i].opts);
        ferry__opts_id_slot_free(&c->parses[i].slot);
    }
    free(c->parses);
    c->parses = NULL;
    c->nparses = c->cap = 0;
    free(p);
}

static int add_bulk_locked(add_call *c, size_t n, char **ids, ferry_error *err) {
    ferry_queue *q = c->q;
    prepared *p = calloc(n, sizeof *p);
    chunk *chunks = calloc(n, sizeof *chunks); /* at most one chunk per job */
    size_t *which = calloc(n, sizeof *which);
    int rc = 0;
    if (!p || !chunks || !which) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    c->now = ferry__now_ms();
    if (rc == 0) rc = prepare_all(c, n, p, err);
    size_t nchunks = 0;
    for (size_t i = 0, bytes = 0; rc == 0 && i < n; i++) {
        size_t b = job_bytes(&p[i]);
        chunk *ch = nchunks ? &chunks[nchunks - 1] : NULL;
        if (!ch || ch->count == CHUNK_JOBS || bytes + b > CHUNK_BYTES) {
            ch = &chunks[nchunks++];
            ch->first = i;
            ch->count = 0;
            bytes = 0;
        }
        ch->count++;
        bytes += b;
    }
    size_t added = 0;
    for (size_t ci = 0; rc == 0 && ci < nchunks;) {
        size_t nw = 0, wbytes = 0;
        while (ci < nchunks && (nw == 0 || wbytes < WINDOW_BYTES)) {
            for (size_t j = 0; j < chunks[ci].count; j++)
                wbytes += job_bytes(&p[chunks[ci].first + j]);
            which[nw++] = ci++;
        }
        rc = send_window(q, p, chunks, which, nw, c->now, ids, &added, err);
    }
    if (rc && added > 0 && err) {
        /* Say what already happened: those jobs exist and will run. A call that failed may
         * also have written part of its jobs (Redis does not roll back a failing script). */
        char msg[FERRY_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        ferry__err(err, rc, "%s (%zu of %zu jobs were confirmed added before the failure)", msg,
                   added, n);
    }
    free_prepared(c, p, n);
    free(chunks);
    free(which);
    return rc;
}

static int add_bulk(ferry_queue *q, const ferry_job_spec *jobs, const char *const *job_ids,
                    size_t n, int data_checked, char **ids, const char *fn, ferry_error *err) {
    if (!q || (n && !jobs)) return ferry__err(err, FERRY_EINVAL, "%s: NULL argument", fn);
    if (ids)
        for (size_t i = 0; i < n; i++)
            ids[i] = NULL;
    if (n == 0) return 0;
    if (n > BULK_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "add_bulk of %zu jobs, limit %d", n, BULK_MAX);
    add_call c = {.q = q, .jobs = jobs, .job_ids = job_ids, .data_checked = data_checked};
    pthread_mutex_lock(&q->mu);
    int rc = add_bulk_locked(&c, n, ids, err);
    pthread_mutex_unlock(&q->mu);
    if (rc && ids)
        for (size_t i = 0; i < n; i++) {
            free(ids[i]);
            ids[i] = NULL;
        }
    return rc;
}

size_t ferry__queue_data_limit(const ferry_queue *q) {
    size_t lim = q->max_payload;
    const json_t *v = q->defaults ? json_object_get(q->defaults, "sizeLimit") : NULL;
    double d = v && json_is_number(v) ? json_number_value(v) : 0;
    if (d > 0 && d < (double)lim) lim = (size_t)d; /* checked as data_len > sizeLimit */
    return lim;
}

int ferry_queue_add_bulk(ferry_queue *q, const ferry_job_spec *jobs, size_t n, char **ids,
                         ferry_error *err) {
    return add_bulk(q, jobs, NULL, n, 0, ids, "ferry_queue_add_bulk", err);
}

int ferry__queue_add_bulk_ids(ferry_queue *q, const ferry_job_spec *jobs,
                              const char *const *job_ids, size_t n, int data_checked, char **ids,
                              ferry_error *err) {
    return add_bulk(q, jobs, job_ids, n, data_checked, ids, "ferry__queue_add_bulk_ids", err);
}

int ferry_queue_add(ferry_queue *q, const ferry_job_spec *job, char **job_id, ferry_error *err) {
    if (job_id) *job_id = NULL;
    if (!q || !job) return ferry__err(err, FERRY_EINVAL, "ferry_queue_add: NULL argument");
    return ferry_queue_add_bulk(q, job, 1, job_id, err);
}

int ferry_queue_check_jobs(const char *name, const ferry_queue_options *opts,
                           const ferry_job_spec *jobs, size_t n, ferry_error *err) {
    if (n && !jobs) return ferry__err(err, FERRY_EINVAL, "ferry_queue_check_jobs: NULL argument");
    if (n > BULK_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "add_bulk of %zu jobs, limit %d", n, BULK_MAX);
    ferry_queue *q = NULL;
    int rc = ferry__queue_new(name, opts, 1, &q, err);
    if (rc) return rc;
    add_call c = {.q = q, .jobs = jobs};
    prepared *p = n ? calloc(n, sizeof *p) : NULL;
    if (n && !p) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    c.now = ferry__now_ms();
    if (rc == 0) rc = prepare_all(&c, n, p, err);
    free_prepared(&c, p, n);
    ferry_queue_close(q);
    return rc;
}
