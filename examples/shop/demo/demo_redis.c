/* demo_redis.c - connect hiredis to the demo's Redis from its URL. */
#include "demo_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

redisContext *demo_redis_connect(const char *url, char *err, size_t cap) {
    const char *p = url && !strncmp(url, "redis://", 8) ? url + 8 : NULL;
    if (!p) {
        snprintf(err, cap, "Redis URL must start with redis:// (the demo's own server)");
        return NULL;
    }
    char user[128] = "", pass[256] = "", host[256] = "127.0.0.1";
    int port = 6379, db = 0;
    const char *at = strrchr(p, '@');
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        size_t ul = colon ? (size_t)(colon - p) : 0;
        size_t pl = colon ? (size_t)(at - colon - 1) : (size_t)(at - p);
        if (ul >= sizeof user || pl >= sizeof pass) {
            snprintf(err, cap, "Redis URL: credentials too long");
            return NULL;
        }
        memcpy(user, p, ul);
        memcpy(pass, colon ? colon + 1 : p, pl);
        pass[pl] = '\0';
        p = at + 1;
    }
    size_t hl = strcspn(p, ":/");
    if (hl && hl < sizeof host) {
        memcpy(host, p, hl);
        host[hl] = '\0';
    }
    p += hl;
    if (*p == ':') port = atoi(p + 1), p += 1 + strcspn(p + 1, "/");
    if (*p == '/') db = atoi(p + 1);
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (!c || c->err) {
        snprintf(err, cap, "cannot connect to Redis at %s:%d: %s", host, port,
                 c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    redisReply *r = NULL;
    if (*pass) {
        r = *user ? redisCommand(c, "AUTH %s %s", user, pass) : redisCommand(c, "AUTH %s", pass);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, cap, "Redis at %s:%d refused the credentials", host, port);
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    if (db) {
        r = redisCommand(c, "SELECT %d", db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, cap, "Redis at %s:%d: SELECT %d refused", host, port, db);
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}
