/* demo_poison.c - `shop-demo prepare` and `shop-demo poison`.
 *
 * prepare: BullMQ trims each queue's events stream to opts.maxLenEvents (10,000 by default)
 * entries; the reconciliation counts the `duplicated` events there (a job the relay added
 * again after a crash, absorbed by its jobId), so the demo raises the bound first.
 *
 * poison: events that no consumer can process, written the way a buggy producer would (an
 * outbox row with a malformed payload, a job with a name nobody handles, a contract version
 * nobody knows). Each must end as a dead letter with its reason, and nothing else may: every
 * poison payload carries "demoPoison": true so the reconciliation tells them apart. */
#include "demo.h"

#include "demo_redis.h"
#include "ex_util.h"
#include "shop_common.h"

#include <ferry/outbox.h>
#include <ferry/queue.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_EVENTS_MAX "1000000"

static const char *const shop_queues[] = {SHOP_Q_PAYMENTS, SHOP_Q_NOTIFICATIONS, SHOP_Q_SHIPPING,
                                          SHOP_Q_LOYALTY, SHOP_Q_MAINTENANCE};

static const char prepare_usage[] =
    "usage: shop-demo prepare --redis URL [--prefix shop] [--queue PREFIX:QUEUE]...\n"
    "Raise opts.maxLenEvents of the shop's queues (and of each --queue) to " META_EVENTS_MAX
    ", so that the reconciliation sees every `duplicated` event.\n";

int demo_prepare(int argc, char **argv) {
    const char *redis = ex_opt(NULL, "REDIS_URL", NULL), *prefix = SHOP_PREFIX;
    const char *extra[16];
    int nextra = 0;
    static const struct option opts[] = {{"redis", required_argument, 0, 'r'},
                                         {"prefix", required_argument, 0, 'p'},
                                         {"queue", required_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
        if (ch == 'r')
            redis = optarg;
        else if (ch == 'p')
            prefix = optarg;
        else if (ch == 'q' && nextra < 16 && strchr(optarg, ':'))
            extra[nextra++] = optarg;
        else if (ch == 'h')
            return fputs(prepare_usage, stdout), 0;
        else
            return demo_usage_error("prepare",
                                    "bad option (--queue takes PREFIX:QUEUE, at most 16)");
    }
    if (!redis) return demo_usage_error("prepare", "--redis URL (or REDIS_URL) is required");
    char err[512];
    redisContext *c = demo_redis_connect(redis, err, sizeof err);
    if (!c) {
        fprintf(stderr, "shop-demo prepare: %s\n", err);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof shop_queues / sizeof *shop_queues + (size_t)nextra; i++) {
        char key[512];
        if (i < sizeof shop_queues / sizeof *shop_queues)
            snprintf(key, sizeof key, "%s:%s:meta", prefix, shop_queues[i]);
        else
            snprintf(key, sizeof key, "%s:meta",
                     extra[i - sizeof shop_queues / sizeof *shop_queues]);
        redisReply *r = redisCommand(c, "HSET %s opts.maxLenEvents %s", key, META_EVENTS_MAX);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            fprintf(stderr, "shop-demo prepare: HSET %s: %s\n", key, r ? r->str : c->errstr);
            rc = 1;
        }
        freeReplyObject(r);
    }
    redisFree(c);
    return rc;
}

static int append(PGconn *db, const char *schema, const char *topic, const char *aggregate,
                  const char *payload) {
    char err[512];
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = schema;
    ferry_outbox_event ev = {.topic = topic, .aggregate_id = aggregate, .payload_json = payload};
    ferry_error fe = {0};
    if (ex_pg_exec(db, "BEGIN", 0, NULL, err, sizeof err) < 0 ||
        ferry_outbox_append(db, &oo, &ev, NULL, &fe) != 0 ||
        ex_pg_exec(db, "COMMIT", 0, NULL, err, sizeof err) < 0) {
        fprintf(stderr, "shop-demo poison: %s: %s\n", topic, fe.code ? fe.message : err);
        ex_pg_exec(db, "ROLLBACK", 0, NULL, err, sizeof err);
        return -1;
    }
    return 0;
}

static const char poison_usage[] =
    "usage: shop-demo poison --database URL --redis URL [--schema public] [--prefix shop]\n"
    "                        [--taskflow-schema S --taskflow-topic T]\n"
    "Write the demo's poison: an order.placed whose orderId is not a uuid (capture and\n"
    "confirmation both refuse it), an order.cancelled for an order that does not exist, a\n"
    "payments job named refund-payment (no such processor), and with --taskflow-schema a\n"
    "task event of an unknown schemaVersion. Prints how many dead letters must follow.\n";

int demo_poison(int argc, char **argv) {
    const char *db_url = ex_opt(NULL, "DATABASE_URL", NULL),
               *redis = ex_opt(NULL, "REDIS_URL", NULL);
    const char *schema = "public", *prefix = SHOP_PREFIX, *tf_schema = NULL, *tf_topic = NULL;
    static const struct option opts[] = {{"database", required_argument, 0, 'd'},
                                         {"redis", required_argument, 0, 'r'},
                                         {"schema", required_argument, 0, 's'},
                                         {"prefix", required_argument, 0, 'p'},
                                         {"taskflow-schema", required_argument, 0, 'S'},
                                         {"taskflow-topic", required_argument, 0, 'T'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
            db_url = optarg;
            break;
        case 'r':
            redis = optarg;
            break;
        case 's':
            schema = optarg;
            break;
        case 'p':
            prefix = optarg;
            break;
        case 'S':
            tf_schema = optarg;
            break;
        case 'T':
            tf_topic = optarg;
            break;
        case 'h':
            fputs(poison_usage, stdout);
            return 0;
        default:
            return demo_usage_error("poison", "bad option");
        }
    }
    if (!db_url || !redis) return demo_usage_error("poison", "--database and --redis are required");
    if (!tf_schema != !tf_topic)
        return demo_usage_error("poison", "--taskflow-schema and --taskflow-topic go together");
    char err[512], agg[FERRY_UUID_STRLEN + 1], other[FERRY_UUID_STRLEN + 1], payload[512];
    PGconn *db = ex_pg_connect(db_url, schema, 5000, 10000, err, sizeof err);
    if (!db) {
        fprintf(stderr, "shop-demo poison: %s\n", err);
        return 1;
    }
    int events = 0, expected = 0;
    ferry_uuid7(agg);
    ferry_uuid7(other);
    /* 1. a producer bug: orderId not a uuid -> capture-payment and order-confirmation */
    snprintf(payload, sizeof payload,
             "{\"orderId\":\"not-a-uuid\",\"customerId\":\"%s\",\"total\":-5,\"itemCount\":0,"
             "\"authorizationId\":\"auth_x\",\"demoPoison\":true}",
             other);
    if (append(db, schema, SHOP_TOPIC_PLACED, agg, payload)) goto fail;
    events++, expected += 2;
    /* 2. a cancellation of an order the shop never had -> void-authorization */
    ferry_uuid7(agg);
    snprintf(payload, sizeof payload,
             "{\"orderId\":\"%s\",\"customerId\":\"%s\",\"authorizationId\":\"auth_nowhere\","
             "\"demoPoison\":true}",
             agg, other);
    if (append(db, schema, SHOP_TOPIC_CANCELLED, agg, payload)) goto fail;
    events++, expected += 1;
    /* 3. a job no processor handles, added straight to the queue */
    {
        ferry_redis_options ro;
        ferry_redis_options_init(&ro);
        ro.url = redis;
        ferry_queue_options qo;
        ferry_queue_options_init(&qo);
        qo.redis = &ro;
        qo.prefix = prefix;
        ferry_queue *q = NULL;
        ferry_error fe = {0};
        ferry_job_spec js = {.name = "refund-payment",
                             .data_json = "{\"demoPoison\":true,\"orderId\":\"unknown\"}",
                             .opts_json = "{\"attempts\":3,\"removeOnFail\":false}"};
        char *id = NULL;
        if (ferry_queue_open(SHOP_Q_PAYMENTS, &qo, &q, &fe) != 0 ||
            ferry_queue_add(q, &js, &id, &fe) != 0) {
            fprintf(stderr, "shop-demo poison: refund-payment job: %s\n", fe.message);
            ferry_queue_close(q);
            goto fail;
        }
        free(id);
        ferry_queue_close(q);
        events++, expected += 1;
    }
    /* 4. a contract version no consumer knows */
    if (tf_schema) {
        char tid[FERRY_UUID_STRLEN + 1], mid[FERRY_UUID_STRLEN + 1];
        ferry_uuid7(tid);
        ferry_uuid7(mid);
        snprintf(
            payload, sizeof payload,
            "{\"schemaVersion\":2,\"messageId\":\"%s\",\"occurredAt\":\"2026-12-03T00:00:00Z\","
            "\"tenantId\":\"%s\",\"taskId\":\"%s\",\"assigneeId\":\"%s\",\"demoPoison\":true}",
            mid, other, tid, other);
        if (append(db, tf_schema, tf_topic, tid, payload)) goto fail;
        events++, expected += 1;
    }
    PQfinish(db);
    printf("poison: %d events written; %d dead letters must follow\n", events, expected);
    return 0;
fail:
    PQfinish(db);
    return 1;
}
