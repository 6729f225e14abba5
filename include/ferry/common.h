/* ferry/common.h - export macro, version, error codes and the error detail struct.
 *
 * Every fallible ferry call returns an int: 0 (FERRY_OK) on success, a negative
 * ferry_err value on failure. Calls that can say more take a caller-supplied
 * `ferry_error *` (may be NULL) that receives the code and a one-line message. */
#ifndef FERRY_COMMON_H
#define FERRY_COMMON_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define FERRY_API __attribute__((visibility("default")))
#define FERRY_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FERRY_API
#define FERRY_PRINTF(fmt, args)
#endif

#define FERRY_VERSION_MAJOR 0
#define FERRY_VERSION_MINOR 1
#define FERRY_VERSION_PATCH 0
#define FERRY_VERSION_STRING "0.1.0"

/* The BullMQ release whose Redis layout ferry speaks (written to <queue>:meta version). */
#define FERRY_BULLMQ_VERSION "6.7.0"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ferry_err {
    FERRY_OK = 0,
    FERRY_EINVAL = -1,    /* bad argument, URL, JSON, option */
    FERRY_ENOMEM = -2,    /* allocation failed */
    FERRY_EIO = -3,       /* socket / transport error, connection lost */
    FERRY_ETIMEDOUT = -4, /* a deadline passed */
    FERRY_EPROTO = -5,    /* unexpected reply shape */
    FERRY_EREDIS = -6,    /* Redis answered with an error reply (text in message) */
    FERRY_ETLS = -7,      /* TLS handshake or certificate verification failed */
    FERRY_EAUTH = -8,     /* AUTH / SELECT refused */
    FERRY_ENOTFOUND = -9, /* job / key does not exist */
    FERRY_ETOOBIG = -10,  /* payload or input over its stated limit */
    FERRY_ELOCK = -11,    /* job lock lost or owned by another worker */
    FERRY_ESTATE = -12,   /* object not in the state the call needs */
    FERRY_ECLOSED = -13,  /* handle is closing / closed */
    FERRY_EDB = -14,      /* PostgreSQL reported an error (SQLSTATE in the message) */
} ferry_err;

#define FERRY_ERROR_MESSAGE_MAX 512

/* Detail of the last failure of a call. Plain value, owned by the caller; a call that
 * fails fills it (code + NUL-terminated message), a call that succeeds leaves it alone. */
typedef struct ferry_error {
    int code;
    char message[FERRY_ERROR_MESSAGE_MAX];
} ferry_error;

/* Static English text for a ferry_err code ("unknown error" for others). Never NULL,
 * never freed. Thread-safe. */
FERRY_API const char *ferry_strerror(int code);

/* Library version string, e.g. "0.1.0". Static, thread-safe. */
FERRY_API const char *ferry_version(void);

#ifdef __cplusplus
}
#endif
#endif
