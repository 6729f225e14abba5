/* job_opts_ext.h - producer-only extensions of job_opts.h: limits, and a parse that merges
 * pre-parsed defaults and reports what the add path must check or refuse (sizeLimit,
 * deduplication, parent). Pure, no I/O. */
#ifndef FERRY_QUEUE_JOB_OPTS_EXT_H
#define FERRY_QUEUE_JOB_OPTS_EXT_H

#include <jansson.h>

#include "queue/job_opts.h"

#define FERRY__OPTS_MAX_BYTES (64 * 1024) /* opts JSON text, per job and for defaults */
#define FERRY__OPTS_MAX_DEPTH 32          /* nesting of opts JSON */
#define FERRY__JOB_ID_MAX 1024            /* custom jobId, bytes */
#define FERRY__JS_SAFE_MAX 9007199254740991LL
#define FERRY__PRIORITY_MAX 2097151

typedef struct ferry__job_opts_extra {
    long long size_limit; /* opts.sizeLimit, 0 = none */
    int has_dedup;        /* opts.deduplication (stored "de") present */
    int has_parent;       /* opts.parent present (flows) */
} ferry__job_opts_extra;

/* Parse `json` (NULL/"" = {}) strictly after filling in keys it lacks from `defaults`
 * (a JSON object or NULL; shallow, as Node's Object.assign). `defaults` is only read, but
 * its members' reference counts are touched, so callers serialise use of one defaults
 * object (ferry_queue does under its mutex). `extra` may be NULL. */
int ferry__job_opts_parse_over(const json_t *defaults, const char *json, ferry__job_opts *out,
                               ferry__job_opts_extra *extra, ferry_error *err);

/* Load JSON text that must be an object, with the size/depth limits above; `what` names it
 * in errors ("opts", "default job options"). Returns a new reference or NULL with *err. */
json_t *ferry__opts_load_object(const char *json, const char *what, ferry_error *err);

#endif
