/* error.c - error codes to text and the ferry_error filler. */
#include "util/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ferry_strerror(int code) {
    switch (code) {
    case FERRY_OK: return "ok";
    case FERRY_EINVAL: return "invalid argument";
    case FERRY_ENOMEM: return "out of memory";
    case FERRY_EIO: return "I/O error";
    case FERRY_ETIMEDOUT: return "timed out";
    case FERRY_EPROTO: return "protocol error";
    case FERRY_EREDIS: return "Redis error";
    case FERRY_ETLS: return "TLS error";
    case FERRY_EAUTH: return "authentication failed";
    case FERRY_ENOTFOUND: return "not found";
    case FERRY_ETOOBIG: return "too big";
    case FERRY_ELOCK: return "lock lost";
    case FERRY_ESTATE: return "wrong state";
    case FERRY_ECLOSED: return "closed";
    case FERRY_EDB: return "database error";
    default: return "unknown error";
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
