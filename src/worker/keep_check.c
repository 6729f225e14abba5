/* keep_check.c - ferry_keep_jobs_check: the worker-level removeOnComplete / removeOnFail
 * check of ferry_worker_create, on its own, for a caller that refuses a bad value before
 * it connects (ferry/worker.h). */
#include "ferry/worker.h"
#include "queue/job_opts.h"

int ferry_keep_jobs_check(const char *json, ferry_error *err) {
    ferry__keep_jobs keep;
    return ferry__keep_jobs_parse(json, &keep, err);
}
