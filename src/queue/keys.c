/* keys.c - see keys.h. */
#include "queue/keys.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

int ferry__keys_init(ferry__keys *k, const char *prefix, const char *queue, ferry_error *err) {
    if (!prefix) prefix = "bull";
    if (!queue || !*queue) return ferry__err(err, FERRY_EINVAL, "queue name is empty");
    if (strchr(queue, ':'))
        return ferry__err(err, FERRY_EINVAL, "queue name '%s' contains ':'", queue);
    if (strlen(queue) > FERRY_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue name longer than %d bytes", FERRY_NAME_MAX);
    if (!*prefix) return ferry__err(err, FERRY_EINVAL, "key prefix is empty");
    if (strlen(prefix) > FERRY_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "key prefix longer than %d bytes", FERRY_NAME_MAX);
    strcpy(k->queue, queue);
    strcpy(k->prefix, prefix);
    k->base_len = (size_t)snprintf(k->base, sizeof k->base, "%s:%s:", prefix, queue);
    return 0;
}

const char *ferry__key(const ferry__keys *k, const char *suffix, char *buf, size_t cap) {
    size_t sl = strlen(suffix);
    if (k->base_len + sl + 1 > cap) return NULL;
    memcpy(buf, k->base, k->base_len);
    memcpy(buf + k->base_len, suffix, sl + 1);
    return buf;
}
