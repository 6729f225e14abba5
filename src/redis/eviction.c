/* eviction.c - read and judge the server's maxmemory policy (see eviction.h). */
#include "redis/eviction.h"

#include <stdio.h>
#include <string.h>

#include <hiredis/hiredis.h>

int ferry__redis_eviction_policy(ferry_conn *c, char *policy, size_t cap, ferry_error *err) {
    policy[0] = 0;
    redisReply *r = NULL;
    int rc = ferry__conn_command(c, &r, err, "INFO memory");
    if (rc != 0 && rc != FERRY_EREDIS) {
        if (r) freeReplyObject(r);
        return rc;
    }
    if (rc == FERRY_EREDIS || (r && r->type == REDIS_REPLY_ERROR)) {
        /* an error reply (NOPERM from an ACL without +info...): the server does not say */
        if (r) freeReplyObject(r);
        return 1;
    }
    int found = 0;
    if (r && r->type == REDIS_REPLY_STRING) {
        static const char key[] = "maxmemory_policy:";
        const char *p = r->str, *end = r->str + r->len;
        while (p < end) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol) eol = end;
            size_t n = (size_t)(eol - p);
            if (n && p[n - 1] == '\r') n--;
            if (n > sizeof key - 1 && !memcmp(p, key, sizeof key - 1)) {
                size_t v = n - (sizeof key - 1);
                if (v >= cap) v = cap - 1;
                memcpy(policy, p + sizeof key - 1, v);
                policy[v] = 0;
                found = 1;
                break;
            }
            p = eol + 1;
        }
    }
    if (r) freeReplyObject(r);
    return found ? 0 : 1;
}

int ferry__redis_eviction_warning(const char *policy, char *msg, size_t cap) {
    if (!policy[0] || !strcmp(policy, "noeviction")) return 0;
    char shown[64];
    size_t k = 0;
    for (const char *p = policy; *p && k + 1 < sizeof shown; p++)
        shown[k++] = (*p >= 0x21 && *p < 0x7f) ? *p : '?';
    shown[k] = 0;
    snprintf(msg, cap,
             "Redis maxmemory-policy is %s: when Redis is full it may evict job keys and lose "
             "jobs; set it to noeviction (CONFIG SET maxmemory-policy noeviction, and in "
             "redis.conf)",
             shown);
    return 1;
}
