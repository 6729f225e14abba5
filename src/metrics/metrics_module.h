/* metrics_module.h - what src/metrics offers the modules above it (ferry serve's
 * system-wide gauges) beyond the public ferry/metrics.h. */
#ifndef FERRY_METRICS_MODULE_H
#define FERRY_METRICS_MODULE_H

#include "ferry/metrics.h"

/* Stop rendering the series of family f for `values` (label_count strings), for a series
 * whose subject is gone (a queue that no longer exists), so a scrape does not show it
 * forever. The series is not freed: handles to it stay valid (updates through them still
 * change it, unseen), it still counts against the family's max_series, and the next lookup
 * of the same values (*_with) shows it again with the value it has. A family without labels
 * always keeps its one series (nothing happens); values never looked up: nothing happens.
 * Returns: 0. Errors: FERRY_EINVAL for a NULL family, missing values, a value that is NULL,
 *   not UTF-8 or too long. Blocks: the registry's mutex. Threads: any. */
int ferry__metrics_series_drop(ferry_metrics_family *f, const char *const *values,
                               ferry_error *err);

#endif
