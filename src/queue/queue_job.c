/* queue_job.c - one job by id: ferry_queue_get_job (hash + state, read atomically by the
 * getJob script), ferry_queue_remove_job (removeJob script), ferry_job_info_free. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/scheduler.h"
#include "queue/job_opts_ext.h"
#include "queue/queue_internal.h"
#include "util/error.h"
#include "util/numtext.h"
#include "util/printable.h"

/* Ids read here may come from any producer: Node sets no length limit on a custom jobId
 * (ferry's own producer: FERRY_JOB_ID_MAX), and a scheduler's iteration is
 * "repeat:<scheduler id>:<ms>" with scheduler ids up to FERRY_SCHEDULER_FOREIGN_ID_MAX bytes.
 * So get and remove take ids this long, whatever their form. */
#define READ_ID_MAX FERRY_JOB_FOREIGN_ID_MAX
_Static_assert(READ_ID_MAX == FERRY_SCHEDULER_FOREIGN_ID_MAX + 32, "room for repeat:<id>:<ms>");
#define SHOWN_ID_MAX 256 /* a job id as error messages show it (escaped, cut) */

int ferry__queue_job_key(const ferry_queue *q, const char *what, const char *job_id,
                         const char *suffix, char **key, ferry_error *err) {
    *key = NULL;
    const char *w = what ? what : "", *sep = what ? ": " : "";
    if (!job_id || !*job_id) return ferry__err(err, FERRY_EINVAL, "%s%sjob id is empty", w, sep);
    size_t len = strlen(job_id);
    if (len > READ_ID_MAX)
        return ferry__err(err, FERRY_EINVAL, "%s%sjob id longer than %d bytes", w, sep,
                          READ_ID_MAX);
    const char *reserved = ferry__job_id_reserved(job_id);
    if (reserved)
        return ferry__err(err, FERRY_EINVAL,
                          "%s%sjob id '%s' is the name of one of queue %s's own keys, not a job", w,
                          sep, reserved, q->shown);
    size_t slen = suffix ? strlen(suffix) : 0, cap = q->keys.base_len + len + slen + 1;
    if (!(*key = malloc(cap))) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (!ferry__key(&q->keys, job_id, *key, cap - slen)) {
        free(*key);
        *key = NULL;
        return ferry__err(err, FERRY_EINVAL, "%s%sjob key too long", w, sep);
    }
    if (suffix) memcpy(*key + strlen(*key), suffix, slen + 1);
    return 0;
}

/* The job's key (malloc'd into *key) after checking the id; 0 or an error. */
static int check_id(const ferry_queue *q, const char *job_id, char **key, ferry_error *err) {
    return ferry__queue_job_key(q, NULL, job_id, NULL, key, err);
}

/* Integer field as written by BullMQ (plain decimal; tolerate "1.7e12" from Lua numbers). */
static long long num_field(const redisReply *v, long long dflt) {
    char buf[64], *end;
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len >= sizeof buf) return dflt;
    memcpy(buf, v->str, v->len);
    buf[v->len] = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end == 0) return x;
    double d = ferryx_strtod_c(buf, &end);
    if (*end == 0 && d > -9.3e18 && d < 9.3e18) return (long long)d;
    return dflt;
}

static int str_field(char **dst, const redisReply *v) {
    free(*dst);
    *dst = strndup(v->str ? v->str : "", v->len);
    return *dst ? 0 : -1;
}

static int fill_info(ferry_job_info *info, const char *job_id, const redisReply *state,
                     const redisReply *hash) {
    info->timestamp = info->delay = info->priority = info->processed_on = info->finished_on = -1;
    long long legacy_atm = 0;
    if (!(info->id = strdup(job_id))) return -1;
    if (str_field(&info->state, state)) return -1;
    for (size_t i = 0; i + 1 < hash->elements; i += 2) {
        const redisReply *k = hash->element[i], *v = hash->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        const char *f = k->str;
        int rc = 0;
        if (!strcmp(f, "name"))
            rc = str_field(&info->name, v);
        else if (!strcmp(f, "data"))
            rc = str_field(&info->data, v);
        else if (!strcmp(f, "opts"))
            rc = str_field(&info->opts, v);
        else if (!strcmp(f, "returnvalue"))
            rc = str_field(&info->returnvalue, v);
        else if (!strcmp(f, "failedReason"))
            rc = str_field(&info->failed_reason, v);
        else if (!strcmp(f, "stacktrace"))
            rc = str_field(&info->stacktrace, v);
        else if (!strcmp(f, "progress"))
            rc = str_field(&info->progress, v);
        else if (!strcmp(f, "pb"))
            rc = str_field(&info->processed_by, v);
        else if (!strcmp(f, "timestamp"))
            info->timestamp = num_field(v, -1);
        else if (!strcmp(f, "delay"))
            info->delay = num_field(v, -1);
        else if (!strcmp(f, "priority"))
            info->priority = num_field(v, -1);
        else if (!strcmp(f, "processedOn"))
            info->processed_on = num_field(v, -1);
        else if (!strcmp(f, "finishedOn"))
            info->finished_on = num_field(v, -1);
        else if (!strcmp(f, "atm"))
            info->attempts_made = num_field(v, 0);
        else if (!strcmp(f, "attemptsMade"))
            legacy_atm = num_field(v, 0);
        else if (!strcmp(f, "ats"))
            info->attempts_started = num_field(v, 0);
        else if (!strcmp(f, "stc"))
            info->stalled_count = num_field(v, 0);
        if (rc) return -1;
    }
    /* legacy field name, read only when the current one is absent (as Node does) */
    if (info->attempts_made == 0 && legacy_atm) info->attempts_made = legacy_atm;
    return 0;
}

int ferry_queue_get_job(ferry_queue *q, const char *job_id, ferry_job_info **out,
                        ferry_error *err) {
    if (out) *out = NULL;
    if (!q || !out) return ferry__err(err, FERRY_EINVAL, "ferry_queue_get_job: NULL argument");
    char shown_id[SHOWN_ID_MAX];
    char *job_key = NULL;
    int rc = check_id(q, job_id, &job_key, err);
    if (rc) return rc;
    const char *keys[] = {job_key,
                          q->key[QK_COMPLETED],
                          q->key[QK_FAILED],
                          q->key[QK_DELAYED],
                          q->key[QK_PRIORITIZED],
                          q->key[QK_ACTIVE],
                          q->key[QK_WAIT],
                          q->key[QK_PAUSED],
                          q->key[QK_WAITING_CHILDREN]};
    const char *args[] = {job_id};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    rc = ferry__queue_eval(q, "getJob", 9, keys, 1, args, NULL, 1, &r, err);
    pthread_mutex_unlock(&q->mu);
    free(job_key);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "getJob", err);
    if (rc == 0 && r->type != REDIS_REPLY_ARRAY)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJob: unexpected reply", q->shown);
    if (rc == 0 && r->elements == 0)
        rc = ferry__err(err, FERRY_ENOTFOUND, "job %s not found in queue %s",
                        ferryx_printable(job_id, shown_id, sizeof shown_id), q->shown);
    if (rc == 0 && (r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
                    r->element[1]->type != REDIS_REPLY_ARRAY))
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: getJob: unexpected reply", q->shown);
    if (rc == 0) {
        ferry_job_info *info = calloc(1, sizeof *info);
        if (!info || fill_info(info, job_id, r->element[0], r->element[1])) {
            ferry_job_info_free(info);
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
        } else {
            *out = info;
        }
    }
    if (r) freeReplyObject(r);
    return rc;
}

void ferry_job_info_free(ferry_job_info *info) {
    if (!info) return;
    char *strs[] = {info->id,       info->name,        info->data,          info->opts,
                    info->state,    info->returnvalue, info->failed_reason, info->stacktrace,
                    info->progress, info->processed_by};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        free(strs[i]);
    free(info);
}

int ferry_queue_remove_job(ferry_queue *q, const char *job_id, ferry_error *err) {
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_remove_job: queue is NULL");
    char shown_id[SHOWN_ID_MAX];
    char *job_key = NULL;
    int rc = check_id(q, job_id, &job_key, err);
    if (rc) return rc;
    const char *keys[] = {job_key, q->key[QK_REPEAT]};
    const char *args[] = {job_id, q->keys.base};
    redisReply *r = NULL;
    pthread_mutex_lock(&q->mu);
    /* Not retried after a transport failure: a second run would report "not found". */
    rc = ferry__queue_eval(q, "removeJob", 2, keys, 2, args, NULL, 0, &r, err);
    pthread_mutex_unlock(&q->mu);
    free(job_key);
    if (rc == 0) rc = ferry__queue_reply_error(q, r, "removeJob", err);
    if (rc == 0 && r->type != REDIS_REPLY_INTEGER)
        rc = ferry__err(err, FERRY_EPROTO, "queue %s: removeJob: unexpected reply", q->shown);
    if (rc == 0) {
        switch (r->integer) {
        case 1:
            break;
        case -1:
            rc = ferry__err(err, FERRY_ENOTFOUND, "job %s not found in queue %s",
                            ferryx_printable(job_id, shown_id, sizeof shown_id), q->shown);
            break;
        case -8:
            rc = ferry__err(err, FERRY_ESTATE,
                            "job %s is the pending iteration of a job scheduler; "
                            "remove the scheduler instead",
                            ferryx_printable(job_id, shown_id, sizeof shown_id));
            break;
        case 0:
            rc = ferry__err(err, FERRY_ESTATE,
                            "job %s is locked by a worker (active); it cannot be "
                            "removed now",
                            ferryx_printable(job_id, shown_id, sizeof shown_id));
            break;
        default:
            rc = ferry__err(err, FERRY_EPROTO, "queue %s: removeJob returned %lld", q->shown,
                            r->integer);
        }
    }
    if (r) freeReplyObject(r);
    return rc;
}
