/* job_opts_ext.h - producer-only extensions of job_opts.h: limits, and a parse that merges
 * pre-parsed defaults and reports what the add path must check or refuse (sizeLimit,
 * deduplication, parent). Pure, no I/O. */
#ifndef FERRY_QUEUE_JOB_OPTS_EXT_H
#define FERRY_QUEUE_JOB_OPTS_EXT_H

#include <jansson.h>

#include "ferry/queue.h"
#include "queue/job_opts.h"

#define FERRY__JS_SAFE_MAX 9007199254740991LL

typedef struct ferry__job_opts_extra {
    long long size_limit; /* opts.sizeLimit, 0 = none */
    int has_dedup;        /* opts.deduplication (stored "de") present */
    int has_parent;       /* opts.parent present (flows) */
} ferry__job_opts_extra;

/* Flags of ferry__job_opts_parse_flags and ferry__job_opts_parse_idslot. Without
 * FERRY__OPTS_ALLOW_UNKNOWN a key BullMQ 6.7.0's JobsOptions does not know (at the top level
 * or in an object of fixed shape: backoff, removeOnComplete/removeOnFail, deduplication,
 * parent, telemetry) is refused, naming the nearest known key; with it such keys are stored
 * as given (forward compatibility). `repeat` is refused either way. */
#define FERRY__OPTS_ALLOW_UNKNOWN 1

/* As ferry__job_opts_parse_over with FERRY__OPTS_* flags (parse_over is flags 0). */
int ferry__job_opts_parse_flags(const json_t *defaults, const char *json, int flags,
                                ferry__job_opts *out, ferry__job_opts_extra *extra,
                                ferry_error *err);

/* Parse `json` (NULL/"" = {}) strictly after filling in keys it lacks from `defaults`
 * (a JSON object or NULL; shallow, as Node's Object.assign). `defaults` is only read, but
 * its members' reference counts are touched, so callers serialise use of one defaults
 * object (ferry_queue does under its mutex). `extra` may be NULL. */
int ferry__job_opts_parse_over(const json_t *defaults, const char *json, ferry__job_opts *out,
                               ferry__job_opts_extra *extra, ferry_error *err);

/* Check a custom job id by the rules opts.jobId follows (Node's Queue.addJob and
 * Job.validateOptions): at most FERRY_JOB_ID_MAX bytes, not "0" or "0:...", not what
 * JavaScript reads as an integer, ':' only in the 3-part legacy form a:b:c, not the name of
 * one of the queue's own keys (ferry__job_id_reserved). Errors name
 * opts.jobId, as the option's own do. Does not check UTF-8 and does not treat "" (which in
 * opts means "no custom id") specially. Pure, thread-safe. */
int ferry__job_id_check(const char *id, ferry_error *err);

/* The queue key name `id` would collide with ("meta", "wait", "id", ...: a job of that id
 * would be taken for a duplicate and never added, and removing it would delete the key), or
 * NULL. ferry__job_id_check refuses them; get and remove too. Pure, thread-safe. */
const char *ferry__job_id_reserved(const char *id);

/* Stored opts JSON with a place for a job id: the stored opts for id X are
 * text[0..at) + X escaped as a JSON string's contents (without quotes) + text[at..len). */
typedef struct ferry__opts_id_slot {
    char *text; /* malloc'd, NUL-terminated */
    size_t at, len;
} ferry__opts_id_slot;

/* As ferry__job_opts_parse_over for the options `{"jobId": X, ...json}` where X is given per
 * job later: one parse serves any number of ids. Fills *out as for X = "" (job_id NULL,
 * stored_json without a jobId, which is also what an empty X means) and *slot for a
 * non-empty X (check X with ferry__job_id_check and for UTF-8 before using it). The stored
 * opts built from the slot are byte for byte what ferry__job_opts_parse_over would store
 * for that text. `json` itself must not contain jobId (even null or ""): FERRY_EINVAL.
 * Free *out with ferry__job_opts_free and *slot with ferry__opts_id_slot_free (both are
 * empty after a failure). Same thread-safety as ferry__job_opts_parse_over. */
int ferry__job_opts_parse_idslot(const json_t *defaults, const char *json, int flags,
                                 ferry__job_opts *out, ferry__job_opts_extra *extra,
                                 ferry__opts_id_slot *slot, ferry_error *err);

/* Frees slot->text and empties *slot; NULL is a no-op. */
void ferry__opts_id_slot_free(ferry__opts_id_slot *slot);

/* Load JSON text that must be an object, with the size/depth limits above; `what` names it
 * in errors ("opts", "default job options"). Returns a new reference or NULL with *err. */
json_t *ferry__opts_load_object(const char *json, const char *what, ferry_error *err);

#endif
