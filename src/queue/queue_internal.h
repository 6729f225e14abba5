/* queue_internal.h - the ferry_queue handle shared by queue.c (open/close, round trips,
 * counts, pause/resume), queue_add.c (add, add_bulk) and queue_job.c (get, remove). */
#ifndef FERRY_QUEUE_INTERNAL_H
#define FERRY_QUEUE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "ferry/queue.h"
#include "queue/keys.h"
#include "redis/conn.h"


/* Keys the producer uses, built once at open ("<prefix>:<queue>:<suffix>"). */
enum ferry__qkey {
    QK_WAIT,
    QK_META,
    QK_ID,
    QK_DELAYED,
    QK_PRIORITIZED,
    QK_PC,
    QK_MARKER,
    QK_EVENTS,
    QK_ACTIVE,
    QK_PAUSED,
    QK_COMPLETED,
    QK_FAILED,
    QK_WAITING_CHILDREN,
    QK_REPEAT,
    QK_COUNT
};
#define FERRY__QKEY_LEN (sizeof(((ferry__keys *)0)->base) + 24)

struct ferry_queue {
    pthread_mutex_t mu; /* serialises every call that uses conn or defaults */
    ferry__keys keys;
    ferry_redis_options ropts; /* deep copy; strings below */
    ferry_conn *conn;   /* NULL or broken = reconnect on the next call */
    json_t *defaults;   /* default job options object, or NULL */
    size_t max_payload; /* bytes of a job's data JSON */
    int connect_ms, command_ms;
    int opts_flags;  /* FERRY__OPTS_* flags for every parse of job options */
    int name_unsafe; /* the name fails ferry__queue_name_check: adds are refused */
    char shown[128]; /* the queue name as messages show it (ferryx_printable) */
    char key[QK_COUNT][FERRY__QKEY_LEN];
};

/* Appends the commands of one round trip to q->conn; returns how many through *n. */
typedef int (*ferry__q_append_fn)(ferry_queue *q, void *ctx, size_t *n, ferry_error *err);

/* One round trip with the queue's connection rules (caller holds q->mu): reconnect first
 * when the connection is missing or broken; the whole call, reconnect included, ends
 * within connect + command timeout. When `idempotent` and the exchange fails on the
 * transport, reconnect and run it once more inside the same budget. A NOSCRIPT reply to a
 * single-command exchange reloads the scripts and repeats it once. On success replies[0..n)
 * are owned by the caller (max_replies is the array's size). */
int ferry__queue_exchange(ferry_queue *q, ferry__q_append_fn append, void *ctx, int idempotent,
                          redisReply **replies, size_t max_replies, size_t *n, ferry_error *err);

/* Connect when q->conn is missing or broken, within deadline (ferry__mono_ms time). */
int ferry__queue_connect(ferry_queue *q, int64_t deadline, ferry_error *err);

/* Drop the connection (e.g. after commands were appended but cannot be sent). */
void ferry__queue_drop_conn(ferry_queue *q);

/* Run one EVALSHA (exchange of one command). *reply owned by the caller. */
int ferry__queue_eval(ferry_queue *q, const char *script, int nkeys, const char **keys, int nargs,
                      const char **args, const size_t *arglens, int idempotent, redisReply **reply,
                      ferry_error *err);

/* ferry_queue_add_bulk for callers that already hold each job's custom id apart from its
 * options (the outbox relay): one call adds n jobs in one pipelined round trip, validates
 * every spec first (nothing is added if one is invalid; *err names its index), and on
 * success fills ids[i] (if ids is non-NULL) with a malloc'd id the caller frees. Blocking,
 * within the queue's timeouts; thread-safe like every call on a ferry_queue (serialised by
 * its mutex). jobs, job_ids and their strings are borrowed for the call only.
 *  - job_ids: NULL, or n entries; a non-NULL job_ids[i] is job i's jobId exactly as if
 *    jobs[i].opts_json were {"jobId": job_ids[i], ...its own keys} merged over the queue's
 *    defaults: same checks and error messages (plus "opts.jobId: not valid UTF-8"), same
 *    stored opts byte for byte, "" = no custom id. jobs[i].opts_json must then not contain
 *    jobId itself (not even null or ""): FERRY_EINVAL naming opts.jobId. When both the id and
 *    the options are invalid, the options' error is reported (a text may report the other).
 *    A NULL job_ids[i] leaves job i's options as they are. The 64 KiB opts limit applies
 *    to opts_json without the id.
 *  - data_checked: non-zero when the caller has already checked every data_json with
 *    ferryx_json_check at FERRY_JOB_DATA_DEPTH_MAX (the one check skipped here); the size
 *    limits (max_payload_bytes, opts.sizeLimit) still apply. Unchecked invalid data would
 *    be stored as it is, so pass 0 unless that check really ran.
 * The options are parsed once per run of consecutive jobs with the same opts text. */
int ferry__queue_add_bulk_ids(ferry_queue *q, const ferry_job_spec *jobs,
                              const char *const *job_ids, size_t n, int data_checked, char **ids,
                              ferry_error *err);

/* Largest job data (bytes) an add to q accepts when the job's own options add nothing:
 * the queue's max_payload_bytes, or its default options' sizeLimit when smaller. Lets a
 * caller that adds other people's data (the outbox relay) set one row aside instead of
 * having a whole add_bulk refused for it. Thread-safe (reads constant fields). */
size_t ferry__queue_data_limit(const ferry_queue *q);

/* Parse and check default job options (a JSON object of BullMQ JobsOptions; no jobId,
 * deduplication or parent), naming them `what` in errors. On success *out (when out is not
 * NULL) is the parsed object, owned by the caller (json_decref). Thread-safe. */
int ferry__queue_defaults_load(const char *src, const char *what, json_t **out, ferry_error *err);

/* As ferry__queue_defaults_load with FERRY__OPTS_* flags (that one is flags 0). */
int ferry__queue_defaults_load_flags(const char *src, const char *what, int flags, json_t **out,
                                     ferry_error *err);

/* Everything ferry_queue_open does before connecting: a handle with its keys, limits and
 * parsed default options but no connection (q->conn NULL). With `for_adding`, a name
 * ferry__queue_name_check refuses is an error; without, the handle records it (name_unsafe)
 * and refuses adds. *out is freed with ferry_queue_close. No I/O. */
int ferry__queue_new(const char *name, const ferry_queue_options *opts, int for_adding,
                     ferry_queue **out, ferry_error *err);

/* A reply that is a Redis error becomes FERRY_EREDIS naming `what`. */
int ferry__queue_reply_error(const ferry_queue *q, const redisReply *r, const char *what,
                             ferry_error *err);

#endif
