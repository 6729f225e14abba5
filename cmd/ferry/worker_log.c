/* worker_log.c - timestamped error and notice lines of `ferry worker` (see worker_log.h). */
#include "worker_log.h"

#include <stdio.h>

#include "logline.h"

int worker_log_report(const cmd_spec *spec, const cli_conn *c, const char *what,
                      const ferry_error *err) {
    /* cli_report owns the masking and wording; the timestamp goes in front of its line
     * under the stdio lock (recursive), so the two writes stay one line */
    char t[LOGLINE_TIME_MAX];
    flockfile(stderr);
    fprintf(stderr, "%s ", logline_time(t, sizeof t));
    int rc = cli_report(spec, c, what, err);
    funlockfile(stderr);
    return rc;
}

void worker_log_notice(const ferry_worker_notice *n) {
    logline("worker", "%s%s", n->kind == FERRY_NOTICE_EVICTION_POLICY ? "warning: " : "",
            n->message);
}
