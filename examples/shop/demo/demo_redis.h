/* demo_redis.h - a plain hiredis connection for the demo's look at raw BullMQ keys (the
 * events streams, the queues' meta), which ferry's API does not expose as such. */
#ifndef SHOP_DEMO_REDIS_H
#define SHOP_DEMO_REDIS_H

#include <hiredis/hiredis.h>
#include <stddef.h>

/* Connect to url: redis://[[user]:password@]host[:port][/db] (no TLS, no unix socket: the
 * demo's own private server). Returns the context, or NULL with a message in err[cap] that
 * never holds the password. Blocks: up to 5 s. */
redisContext *demo_redis_connect(const char *url, char *err, size_t cap);

#endif
