/* keys.c - see keys.h. */
#include "queue/keys.h"

#include <stdio.h>
#include <string.h>

#include "util/json_text.h"
#include "util/error.h"
#include "util/printable.h"

int ferry__keys_init(ferry__keys *k, const char *prefix, const char *queue, ferry_error *err) {
    if (!prefix) prefix = "bull";
    if (!queue || !*queue) return ferry__err(err, FERRY_EINVAL, "queue name is empty");
    if (strchr(queue, ':')) {
        char shown[128];
        return ferry__err(err, FERRY_EINVAL, "queue name '%s' contains ':'",
                          ferryx_printable(queue, shown, sizeof shown));
    }
    if (strlen(queue) > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue name longer than %d bytes", FERRY_QUEUE_NAME_MAX);
    if (!*prefix) return ferry__err(err, FERRY_EINVAL, "key prefix is empty");
    if (strlen(prefix) > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "key prefix longer than %d bytes", FERRY_QUEUE_NAME_MAX);
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

int ferry__queue_name_check(const char *queue, ferry_error *err) {
    if (!queue || !*queue) return ferry__err(err, FERRY_EINVAL, "queue name is empty");
    const unsigned char *p = (const unsigned char *)queue;
    size_t len = strlen(queue);
    char shown[128];
    for (size_t i = 0; i < len; i++) {
        /* C0 controls and DEL; C1 controls are U+0080-U+009F, UTF-8 "\xc2\x80".."\xc2\x9f" */
        if (p[i] < 0x20 || p[i] == 0x7f ||
            (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f))
            return ferry__err(err, FERRY_EINVAL,
                              "queue name '%s' contains a control character (byte %zu)",
                              ferryx_printable(queue, shown, sizeof shown), i);
    }
    if (!ferryx_utf8_valid(queue, len))
        return ferry__err(err, FERRY_EINVAL, "queue name '%s' is not valid UTF-8",
                          ferryx_printable(queue, shown, sizeof shown));
    return 0;
}
