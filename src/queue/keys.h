/* keys.h - BullMQ key names: "<prefix>:<queue>:<suffix>" (pure). */
#ifndef FERRY_QUEUE_KEYS_H
#define FERRY_QUEUE_KEYS_H

#include <stddef.h>

#include "ferry/common.h"
#include "ferry/queue.h"


typedef struct ferry__keys {
    char base[2 * FERRY_QUEUE_NAME_MAX + 4]; /* "<prefix>:<queue>:" */
    size_t base_len;
    char queue[FERRY_QUEUE_NAME_MAX + 1];
    char prefix[FERRY_QUEUE_NAME_MAX + 1];
} ferry__keys;

/* Validate queue name (non-empty, no ':', <= FERRY_QUEUE_NAME_MAX) and prefix (non-empty,
 * <= FERRY_QUEUE_NAME_MAX) and fill *k. Returns 0 or FERRY_EINVAL naming the problem. */
int ferry__keys_init(ferry__keys *k, const char *prefix, const char *queue, ferry_error *err);

/* The rules a queue that jobs are added to follows beyond ferry__keys_init's: valid UTF-8,
 * no control characters (C0, DEL, C1), so its name cannot forge or garble a log line.
 * Returns 0 or FERRY_EINVAL naming the problem (the name shown escaped). Pure. */
int ferry__queue_name_check(const char *queue, ferry_error *err);

/* Write base+suffix into buf (size cap). Returns buf, or NULL if it does not fit. */
const char *ferry__key(const ferry__keys *k, const char *suffix, char *buf, size_t cap);

#endif
