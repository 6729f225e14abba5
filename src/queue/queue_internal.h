/* queue_internal.h - the ferry_queue handle shared by queue.c (open/close, round trips,
 * counts, pause/resume), queue_add.c (add, add_bulk), queue_job.c (get, remove) and the
 * rest of src/queue. Included only inside src/queue: other modules use queue_module.h. */
#ifndef FERRY_QUEUE_INTERNAL_H
#define FERRY_QUEUE_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "ferry/queue.h"
#include "queue/keys.h"
#include "queue/queue_module.h"
#include "redis/conn.h"

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

/* Connect when q->conn is missing or broken, within deadline (ferry__mono_ms time). */
int ferry__queue_connect(ferry_queue *q, int64_t deadline, ferry_error *err);

/* Drop the connection (e.g. after commands were appended but cannot be sent). */
void ferry__queue_drop_conn(ferry_queue *q);

/* As ferry__queue_defaults_load with FERRY__OPTS_* flags (that one is flags 0). */
int ferry__queue_defaults_load_flags(const char *src, const char *what, int flags, json_t **out,
                                     ferry_error *err);

/* Everything ferry_queue_open does before connecting: a handle with its keys, limits and
 * parsed default options but no connection (q->conn NULL). With `for_adding`, a name
 * ferry__queue_name_check refuses is an error; without, the handle records it (name_unsafe)
 * and refuses adds. *out is freed with ferry_queue_close. No I/O. */
/* Check a state name ("wait" or "waiting", "paused", "active", "delayed", "prioritized",
 * "completed", "failed", "waiting-children") and a range start..*end (*end -1 = as many as
 * one call takes: set to start + FERRY_QUEUE_IDS_MAX - 1), naming `what` in errors; gives the
 * state's key and whether it is a list (else a sorted set). 0 or FERRY_EINVAL. */
int ferry__queue_state_range(const char *what, const char *state, long long start,
                             long long *end, enum ferry__qkey *key, int *list, ferry_error *err);

/* The key of job `job_id` of q, plus `suffix` (NULL = none, e.g. ":logs"), malloc'd into
 * *key, after checking the id as get and remove do (not empty, at most
 * FERRY_JOB_FOREIGN_ID_MAX bytes, not one of the queue's own key names). Errors name `what`
 * (NULL = nothing in front): FERRY_EINVAL, FERRY_ENOMEM. */
int ferry__queue_job_key(const ferry_queue *q, const char *what, const char *job_id,
                         const char *suffix, char **key, ferry_error *err);
int ferry__queue_new(const char *name, const ferry_queue_options *opts, int for_adding,
                     ferry_queue **out, ferry_error *err);

#endif
