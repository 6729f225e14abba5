/* metrics_opt.c - `--metrics-listen` for ferry worker and ferry relay. */
#include "metrics_opt.h"

#include <stdio.h>
#include <string.h>

#include "logline.h"
#include "util/printable.h"

int cli_metrics_start(const cmd_spec *spec, const char *who, const char *addr, int fail_exit,
                      ferry_metrics **m, ferry_metrics_listener **l) {
    *m = NULL;
    *l = NULL;
    if (!addr) return 0;
    ferry_error err = {0};
    int rc = ferry_metrics_create(NULL, m, &err);
    if (!rc) rc = ferry_metrics_build_info(*m, &err);
    if (!rc) rc = ferry_metrics_listen(*m, addr, l, &err); /* its thread blocks every signal */
    if (rc) {
        ferry_metrics_destroy(*m);
        *m = NULL;
        char shown[2 * FERRY_ERROR_MESSAGE_MAX];
        ferryx_printable(err.message, shown, sizeof shown);
        if (rc == FERRY_EINVAL) return opts_usage_error(spec, "--metrics-listen: %s", shown);
        logline(who, "--metrics-listen: %s", shown);
        return fail_exit;
    }
    const char *colon = strrchr(addr, ':');
    char host[256];
    ferryx_printable(addr, host, sizeof host);
    if (colon && (size_t)(colon - addr) < sizeof host) host[colon - addr] = '\0';
    logline(who, "metrics: serving http://%s:%d/metrics", host, ferry_metrics_listener_port(*l));
    return 0;
}
