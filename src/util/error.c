/* error.c - error codes to text and names (both from FERRY_ERRNO_MAP), the ferry_error
 * filler. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ferry_strerror(int code) {
    switch (code) {
#define FERRY__ERR_MESSAGE(name, value, message)                                                   \
    case FERRY_##name:                                                                             \
        return message;
        FERRY_ERRNO_MAP(FERRY__ERR_MESSAGE)
#undef FERRY__ERR_MESSAGE
    default:
        return "unknown error";
    }
}

const char *ferry_err_name(int code) {
    switch (code) {
#define FERRY__ERR_NAME(name, value, message)                                                      \
    case FERRY_##name:                                                                             \
        return "FERRY_" #name;
        FERRY_ERRNO_MAP(FERRY__ERR_NAME)
#undef FERRY__ERR_NAME
    default:
        return "FERRY_UNKNOWN";
    }
}

const char *ferry_version(void) {
    return FERRY_VERSION_STRING;
}

int ferry__err(ferry_error *err, int code, const char *fmt, ...) {
    if (!err) return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof err->message) memcpy(err->message + sizeof err->message - 4, "...", 4);
    return code;
}
