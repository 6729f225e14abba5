/* range.c - numeric option bounds (see range.h). */
#include "util/range.h"

#include "util/error.h"

int ferry__check_range(ferry_error *err, const char *who, const char *what, long long v,
                       long long lo, long long hi) {
    if (v < lo || v > hi)
        return ferry__err(err, FERRY_EINVAL, "%s: %s %lld out of range %lld..%lld", who, what, v,
                          lo, hi);
    return 0;
}
