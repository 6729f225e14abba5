/* metrics_opt.h - `--metrics-listen ADDR:PORT` of the long-running commands (ferry worker,
 * ferry relay): a registry with ferry_build_info served on the address. */
#ifndef FERRY_CLI_METRICS_OPT_H
#define FERRY_CLI_METRICS_OPT_H

#include "ferry/metrics.h"
#include "opts.h"

/* Start serving a new registry on addr (nothing when addr is NULL: *m and *l stay NULL).
 * `who` names the command in log lines ("worker", "relay").
 * Returns: 0 (a line on stderr says where it serves); a malformed address is a usage error of
 *   `spec` (its exit code); an address that cannot be bound, or no memory, returns
 *   `fail_exit`, said on stderr. Nothing is left running on failure. */
int cli_metrics_start(const cmd_spec *spec, const char *who, const char *addr, int fail_exit,
                      ferry_metrics **m, ferry_metrics_listener **l);

#endif
