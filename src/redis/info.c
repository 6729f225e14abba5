/* info.c - ferry_redis_conn: the public connection that only reads INFO, for tools that
 * report the server's own figures (ferry/redis.h). A thin shell over ferry_conn. */
#include <stdlib.h>
#include <string.h>

#include "ferry/redis.h"
#include "redis/conn.h"
#include "util/error.h"

struct ferry_redis_conn {
    ferry_conn *conn;
};

int ferry_redis_connect(const ferry_redis_options *opts, ferry_redis_conn **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "ferry_redis_connect: out is NULL");
    *out = NULL;
    ferry_redis_conn *c = calloc(1, sizeof *c);
    if (!c) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    int rc = ferry__conn_open(opts, NULL, &c->conn, err);
    if (rc != 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int ferry_redis_info(ferry_redis_conn *c, const char *section, char **text, ferry_error *err) {
    if (!text) return ferry__err(err, FERRY_EINVAL, "ferry_redis_info: text is NULL");
    *text = NULL;
    if (!c) return ferry__err(err, FERRY_EINVAL, "ferry_redis_info: no connection");
    redisReply *r = NULL;
    int rc = section ? ferry__conn_command(c->conn, &r, err, "INFO %s", section)
                     : ferry__conn_command(c->conn, &r, err, "INFO");
    if (rc != 0) return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = ferry__err(err, FERRY_EREDIS, "INFO: %s", r->str);
    else if (r->type != REDIS_REPLY_STRING)
        rc = ferry__err(err, FERRY_EPROTO, "INFO: not a text answer");
    else if (!(*text = strdup(r->str)))
        rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    freeReplyObject(r);
    return rc;
}

void ferry_redis_disconnect(ferry_redis_conn *c) {
    if (!c) return;
    ferry__conn_close(c->conn);
    free(c);
}
