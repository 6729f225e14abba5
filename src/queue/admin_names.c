/* admin_names.c - the queues under a key prefix (ferry_queue_names, and
 * ferry__queue_names_on on a queue handle's connection): a bounded SCAN for
 * "<prefix>:*:meta", the key every BullMQ 6.7.0 queue (Node's or ferry's) writes when it
 * is opened. Redis has no index of queues, so this walks the keyspace a page at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/keys.h"
#include "queue/queue_internal.h"
#include "redis/conn.h"
#include "util/clock.h"
#include "util/error.h"

/* Keys Redis looks at per SCAN call (a hint; about a millisecond of Redis time). */
#define NAMES_SCAN_COUNT "1000"
/* SCAN calls at most: 10^7 keys with COUNT 1000. */
#define NAMES_SCANS_MAX 10000L

/* The prefix as a SCAN MATCH pattern ("\\" before the glob characters * ? [ ] \). */
static int match_pattern(const char *prefix, char *out, size_t cap) {
    size_t len = 0;
    for (const char *p = prefix; *p; p++) {
        if (strchr("*?[]\\", *p)) {
            if (len + 1 >= cap) return -1;
            out[len++] = '\\';
        }
        if (len + 1 >= cap) return -1;
        out[len++] = *p;
    }
    static const char tail[] = ":*:meta";
    if (len + sizeof tail > cap) return -1;
    memcpy(out + len, tail, sizeof tail);
    return 0;
}

/* The queue name in key "<prefix>:<name>:meta", or NULL when the key is not a queue's meta
 * (a name is non-empty and has no ':'). *len receives its length. */
static const char *queue_of(const char *key, size_t klen, const char *prefix, size_t plen,
                            size_t *len) {
    static const char meta[] = ":meta";
    size_t mlen = sizeof meta - 1;
    if (klen <= plen + 1 + mlen || memcmp(key, prefix, plen) != 0 || key[plen] != ':' ||
        memcmp(key + klen - mlen, meta, mlen) != 0)
        return NULL;
    const char *name = key + plen + 1;
    *len = klen - plen - 1 - mlen;
    if (memchr(name, ':', *len) || memchr(name, '\0', *len)) return NULL;
    return name;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The arguments of a names call checked (names and n cleared); 0 or FERRY_EINVAL. */
static int names_check(const char **prefix, size_t max, char ***names, size_t *n, int *complete,
                       ferry_error *err) {
    if (names) *names = NULL;
    if (n) *n = 0;
    if (complete) *complete = 0;
    if (!names || !n) return ferry__err(err, FERRY_EINVAL, "ferry_queue_names: NULL argument");
    if (!*prefix) *prefix = FERRY_DEFAULT_PREFIX;
    size_t plen = strlen(*prefix);
    if (plen == 0 || plen > FERRY_QUEUE_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue names: the prefix must be 1 to %d bytes",
                          FERRY_QUEUE_NAME_MAX);
    if (max == 0 || max > FERRY_QUEUE_NAMES_MAX)
        return ferry__err(err, FERRY_EINVAL, "queue names: max must be 1 to %d",
                          FERRY_QUEUE_NAMES_MAX);
    return 0;
}

/* The SCAN walk of ferry_queue_names on connection c (arguments checked). */
static int names_walk(ferry_conn *c, const char *prefix, size_t max, char ***names, size_t *n,
                      int *complete, ferry_error *err) {
    size_t plen = strlen(prefix);
    char pattern[2 * FERRY_QUEUE_NAME_MAX + 16];
    if (match_pattern(prefix, pattern, sizeof pattern))
        return ferry__err(err, FERRY_EINVAL, "queue names: prefix too long");
    int rc = 0;
    char **out = NULL;
    size_t got = 0, cap = 0;
    char cursor[32] = "0";
    int done = 0, truncated = 0;
    for (long call = 0; rc == 0 && !done && !truncated && call < NAMES_SCANS_MAX; call++) {
        const char *argv[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", NAMES_SCAN_COUNT};
        redisReply *r = NULL;
        rc = ferry__conn_command_argv(c, 6, argv, NULL, &r, err);
        if (rc) break;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = ferry__err(err, FERRY_EREDIS, "queue names: SCAN: %s", r->str);
        } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                   r->element[0]->type != REDIS_REPLY_STRING ||
                   r->element[0]->len >= sizeof cursor ||
                   r->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = ferry__err(err, FERRY_EPROTO, "queue names: SCAN: unexpected reply");
        } else {
            memcpy(cursor, r->element[0]->str, r->element[0]->len);
            cursor[r->element[0]->len] = 0;
            done = strcmp(cursor, "0") == 0;
            const redisReply *keys = r->element[1];
            for (size_t i = 0; rc == 0 && i < keys->elements; i++) {
                const redisReply *k = keys->element[i];
                size_t len = 0;
                const char *name = k->type == REDIS_REPLY_STRING
                                       ? queue_of(k->str, k->len, prefix, plen, &len)
                                       : NULL;
                if (!name) continue;
                if (got == max) { /* one more than asked for: the list is cut */
                    truncated = 1;
                    break;
                }
                if (got == cap) {
                    size_t ncap = cap ? 2 * cap : 64;
                    char **grown = realloc(out, ncap * sizeof *grown);
                    if (!grown) {
                        rc = ferry__err(err, FERRY_ENOMEM, "queue names: out of memory");
                        break;
                    }
                    out = grown;
                    cap = ncap;
                }
                if (!(out[got] = strndup(name, len)))
                    rc = ferry__err(err, FERRY_ENOMEM, "queue names: out of memory");
                else
                    got++;
            }
        }
        freeReplyObject(r);
    }
    if (rc) {
        for (size_t i = 0; i < got; i++)
            free(out[i]);
        free(out);
        return rc;
    }
    /* SCAN may return a key twice: sort, then drop repeats */
    if (got) qsort(out, got, sizeof *out, by_name);
    size_t uniq = 0;
    for (size_t i = 0; i < got; i++) {
        if (uniq && !strcmp(out[uniq - 1], out[i])) {
            free(out[i]);
            continue;
        }
        out[uniq++] = out[i];
    }
    if (uniq == 0) {
        free(out);
        out = NULL;
    }
    *names = out;
    *n = uniq;
    if (complete) *complete = done && !truncated;
    return 0;
}

int ferry_queue_names(const ferry_redis_options *redis, const char *prefix, size_t max,
                      char ***names, size_t *n, int *complete, ferry_error *err) {
    int rc = names_check(&prefix, max, names, n, complete, err);
    if (rc) return rc;
    ferry_conn *c = NULL;
    if ((rc = ferry__conn_open(redis, NULL, &c, err)) != 0) return rc;
    rc = names_walk(c, prefix, max, names, n, complete, err);
    ferry__conn_close(c);
    return rc;
}

int ferry__queue_names_on(ferry_queue *q, const char *prefix, size_t max, char ***names, size_t *n,
                          int *complete, ferry_error *err) {
    int rc = names_check(&prefix, max, names, n, complete, err);
    if (rc) return rc;
    if (!q) return ferry__err(err, FERRY_EINVAL, "queue names: NULL queue");
    pthread_mutex_lock(&q->mu);
    rc = ferry__queue_connect(q, ferry__mono_ms() + q->connect_ms + q->command_ms, err);
    if (!rc) {
        rc = names_walk(q->conn, prefix, max, names, n, complete, err);
        if (rc && rc != FERRY_EINVAL && rc != FERRY_ENOMEM && rc != FERRY_EREDIS)
            ferry__queue_drop_conn(q); /* transport trouble: the next call reconnects */
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}
