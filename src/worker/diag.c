/* diag.c - the worker's diagnostics, one model (ferry/common.h): each error report and each
 * notice goes to its typed callback and, as a line, to callbacks.log. */
#include "worker/worker_internal.h"

int ferry__wants_errors(const ferry__lane *lane) {
    return lane->cb.error || lane->cb.log;
}

int ferry__wants_notices(const ferry__lane *lane) {
    return lane->cb.notice || lane->cb.log;
}

void ferry__deliver_error(ferry__lane *lane, const ferry_error *e) {
    if (lane->cb.error) lane->cb.error(e, lane->cb_ud);
    if (lane->cb.log) lane->cb.log(FERRY_LOG_WARN, e->message, lane->cb_ud);
}

void ferry__deliver_notice(ferry__lane *lane, const ferry_worker_notice *n) {
    if (lane->cb.notice) lane->cb.notice(n, lane->cb_ud);
    if (lane->cb.log)
        lane->cb.log(n->kind == FERRY_NOTICE_REDIS_RESTORED ? FERRY_LOG_INFO : FERRY_LOG_WARN,
                     n->message, lane->cb_ud);
}
