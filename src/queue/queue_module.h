/* queue_module.h - what src/queue offers the modules built on it (sched, outbox relay)
 * beyond the public ferry/queue.h: round trips on a queue's connection, its keys and
 * limits, the relay's bulk add with separate job ids. The ferry_queue struct itself stays
 * in queue_internal.h, which only src/queue includes; the others go through the accessors
 * below. */
#ifndef FERRY_QUEUE_MODULE_H
#define FERRY_QUEUE_MODULE_H

#include <jansson.h>
#include <stddef.h>
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

/* ---- round trips (the caller holds the queue's lock: ferry__queue_lock) ------------- */

/* Serialise calls on q's connection and defaults, like every public ferry_queue call. */
void ferry__queue_lock(ferry_queue *q);
void ferry__queue_unlock(ferry_queue *q);

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

/* Run one EVALSHA (exchange of one command). *reply owned by the caller. */
int ferry__queue_eval(ferry_queue *q, const char *script, int nkeys, const char **keys, int nargs,
                      const char **args, const size_t *arglens, int idempotent, redisReply **reply,
                      ferry_error *err);

/* A reply that is a Redis error becomes FERRY_EREDIS naming `what`. */
int ferry__queue_reply_error(const ferry_queue *q, const redisReply *r, const char *what,
                             ferry_error *err);

/* q's connection, for an append function run by ferry__queue_exchange (caller holds the
 * lock; valid during the exchange). */
ferry_conn *ferry__queue_conn(ferry_queue *q);

/* ferry_queue_names (the queues under prefix, sorted, at most max, *complete = 0 when cut;
 * free *names with ferry_queue_job_ids_free) over q's connection instead of a new one:
 * connects first when needed, takes q's lock for the whole walk (one SCAN round trip per
 * 1000 keys of the database, each within the queue's command timeout); a transport error
 * drops the connection, so the next call reconnects. Errors: as ferry_queue_names. */
int ferry__queue_names_on(ferry_queue *q, const char *prefix, size_t max, char ***names, size_t *n,
                          int *complete, ferry_error *err);

/* Read Redis' maxmemory-policy on q's connection (connecting first when needed, within the
 * queue's connect + command timeouts; takes the lock itself). Returns what
 * ferry__redis_eviction_policy returns: 0 with policy filled, 1 when INFO is refused, or a
 * negative error with *err. */
int ferry__queue_eviction_policy(ferry_queue *q, char *policy, size_t cap, ferry_error *err);

/* BullMQ's getRateLimitTTL from the replies of HGET <meta> max, GET <limiter> and PTTL
 * <limiter> (checked by the caller: not errors, pttl an integer): pttl when the limiter is
 * at its max (or no max is set), else 0. Pure. */
long long ferry__queue_limit_ttl_of(const redisReply *max, const redisReply *count, long long pttl);

/* ---- keys and limits (constant after open; thread-safe) ------------------------------ */

/* The queue's names and key base ("<prefix>:<queue>:"). */
const ferry__keys *ferry__queue_keys(const ferry_queue *q);

/* One of the keys built at open. */
const char *ferry__queue_key(const ferry_queue *q, enum ferry__qkey k);

/* The queue's max_payload_bytes. */
size_t ferry__queue_max_payload(const ferry_queue *q);

/* The queue's default job options object, or NULL (caller holds the lock; borrowed). */
const json_t *ferry__queue_defaults(const ferry_queue *q);

/* Largest job data (bytes) an add to q accepts when the job's own options add nothing:
 * the queue's max_payload_bytes, or its default options' sizeLimit when smaller. Lets a
 * caller that adds other people's data (the outbox relay) set one row aside instead of
 * having a whole add_bulk refused for it. Thread-safe (reads constant fields). */
size_t ferry__queue_data_limit(const ferry_queue *q);

/* Parse and check default job options (a JSON object of BullMQ JobsOptions; no jobId,
 * deduplication or parent), naming them `what` in errors. On success *out (when out is not
 * NULL) is the parsed object, owned by the caller (json_decref). Thread-safe. */
int ferry__queue_defaults_load(const char *src, const char *what, json_t **out, ferry_error *err);

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

#endif
