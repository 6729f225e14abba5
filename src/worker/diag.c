/* diag.c - the worker's diagnostics, one model (ferry/common.h): each error report and each
 * notice goes to its typed callback and, as a line, to callbacks.log. */
#include "worker/worker_internal.h"

int ferry__wants_errors(const ferry_worker *w) {
    return w->cb.error || w->cb.log;
}

int ferry__wants_notices(const ferry_worker *w) {
    return w->cb.notice || w->cb.log;
}

void ferry__deliver_error(ferry_worker *w, const ferry_error *e) {
    if (w->cb.error) w->cb.error(e, w->cb_ud);
    if (w->cb.log) w->cb.log(FERRY_LOG_WARN, e->message, w->cb_ud);
}

void ferry__deliver_notice(ferry_worker *w, const ferry_worker_notice *n) {
    if (w->cb.notice) w->cb.notice(n, w->cb_ud);
    if (w->cb.log)
        w->cb.log(n->kind == FERRY_NOTICE_REDIS_RESTORED ? FERRY_LOG_INFO : FERRY_LOG_WARN,
                  n->message, w->cb_ud);
}
