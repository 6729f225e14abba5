/* test_serve_overview_cost.c - what one GET /api/overview of `ferry serve` costs Redis, read
 * from the fixture's own counters (INFO stats, INFO commandstats) around five overviews
 * of 60 queues: no new connection per overview (total_connections_received grows by at
 * most a small constant over the five, where it grew by one per queue past the 32 cached
 * handles), one CLIENT LIST per overview (not one per queue) and one SCAN, and the workers
 * of each queue still counted right from that one CLIENT LIST (clients named
 * "<prefix>:<base64(queue)>" and "...:w:<name>", and near misses that are not workers);
 * and an unknown query parameter refused with 400 naming it. */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis/conn.h"
#include "support/sv.h"

#define NQUEUES 60

static const char *prefix;

/* The value of field `key` in an INFO section's text (e.g. "total_connections_received"
 * of "stats", "cmdstat_scan" of "commandstats" as its "calls="), -1 when absent. */
static long long info_value(ferry_conn *c, const char *section, const char *key) {
    redisReply *r = th_cmd_ok(c, "INFO %s", section);
    long long v = -1;
    char want[128];
    snprintf(want, sizeof want, "\n%s:", key);
    const char *p = strstr(r->str, want);
    if (p) {
        p += strlen(want);
        if (!strncmp(p, "calls=", 6)) p += 6;
        v = strtoll(p, NULL, 10);
    }
    freeReplyObject(r);
    return v;
}

/* A connection to the fixture named `name` (as a worker names its blocking one). */
/* The SCAN calls one walk of the database for "<prefix>:*:meta" takes at COUNT 1000, as an
 * overview walks it: a database that other tests have filled takes more than one. */
static long long scan_walk(ferry_conn *c) {
    long long calls = 0;
    char cursor[32] = "0";
    do {
        redisReply *r = th_cmd_ok(c, "SCAN %s MATCH %s:*:meta COUNT 1000", cursor, prefix);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        freeReplyObject(r);
        calls++;
    } while (strcmp(cursor, "0") != 0);
    return calls;
}

static ferry_conn *named_client(const char *name) {
    ferry_redis_options o = th_redis_options(0);
    ferry_conn *c = NULL;
    ferry_error err = {0};
    if (ferry__conn_open(&o, name, &c, &err)) fail_msg("connect as %s: %s", name, err.message);
    return c;
}

static void b64(const char *s, char *out) {
    EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)strlen(s));
}

static json_t *queue_of(json_t *overview, const char *name) {
    json_t *qs = json_object_get(overview, "queues"), *q;
    size_t i;
    json_array_foreach(qs, i, q) {
        if (!strcmp(json_string_value(json_object_get(q, "name")), name)) return q;
    }
    fail_msg("queue %s is not in the overview", name);
    return NULL;
}

static void test_cost(void **state) {
    (void)state;
    ferry_conn *c = th_conn();
    for (int i = 0; i < NQUEUES; i++) {
        char meta[128], wait[128];
        snprintf(meta, sizeof meta, "%s:q%02d:meta", prefix, i);
        snprintf(wait, sizeof wait, "%s:q%02d:wait", prefix, i);
        freeReplyObject(th_cmd_ok(c, "HSET %s version bullmq:6.7.0", meta));
        for (int k = 0; k <= i % 3; k++)
            freeReplyObject(th_cmd_ok(c, "LPUSH %s id%d", wait, k));
    }
    /* workers: two of q03 (plain and ":w:" named), one of q10; near misses of neither */
    char e03[64], e10[64], n1[256], n2[256], n3[256], n4[256], n5[256];
    b64("q03", e03);
    b64("q10", e10);
    snprintf(n1, sizeof n1, "%s:%s", prefix, e03);
    snprintf(n2, sizeof n2, "%s:%s:w:box-1", prefix, e03);
    snprintf(n3, sizeof n3, "%s:%s:w:box-2", prefix, e10);
    snprintf(n4, sizeof n4, "%s:%sx", prefix, e03);      /* another queue's base64 */
    snprintf(n5, sizeof n5, "%s:%s:x:box", prefix, e10); /* not a worker's suffix */
    ferry_conn *w[5] = {named_client(n1), named_client(n2), named_client(n3), named_client(n4),
                        named_client(n5)};

    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r = sv_call(&s, "GET", "/api/overview", NULL, NULL); /* warm: the handle cached */
    SV_EXPECT(r, 200);
    sv_resp_free(&r);

    long long conns0 = info_value(c, "stats", "total_connections_received");
    long long lists0 = info_value(c, "commandstats", "cmdstat_client|list");
    long long scans0 = info_value(c, "commandstats", "cmdstat_scan");
    long long t0 = th_mono_ms();
    json_t *last = NULL;
    for (int i = 0; i < 5; i++) {
        r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
        SV_EXPECT(r, 200);
        json_decref(last);
        last = json_incref(r.json);
        sv_resp_free(&r);
    }
    long long took = th_mono_ms() - t0;
    long long conns = info_value(c, "stats", "total_connections_received") - conns0;
    long long lists = info_value(c, "commandstats", "cmdstat_client|list") - lists0;
    long long scans = info_value(c, "commandstats", "cmdstat_scan") - scans0;
    print_message("5 overviews of %d queues: %lld new connections, %lld CLIENT LIST, %lld SCAN, "
                  "%lld ms each\n",
                  NQUEUES, conns, lists, scans, took / 5);
    if (conns > 2) fail_msg("%lld new Redis connections for 5 overviews (want <= 2)", conns);
    assert_int_equal(lists, 5);
    /* one walk per overview (nothing else runs meanwhile: the tests hold the redis lock) */
    long long walk = scan_walk(c);
    if (scans != 5 * walk) fail_msg("%lld SCAN calls for 5 overviews, want 5 x %lld", scans, walk);

    /* the answer is still right */
    assert_int_equal(json_array_size(json_object_get(last, "queues")), NQUEUES);
    assert_true(json_is_true(json_object_get(last, "queuesComplete")));
    json_t *q03 = queue_of(last, "q03"), *q10 = queue_of(last, "q10"), *q04 = queue_of(last, "q04");
    assert_int_equal(sv_jint(q03, "workers"), 2);
    assert_int_equal(sv_jint(q10, "workers"), 1);
    assert_int_equal(sv_jint(q04, "workers"), 0);
    assert_int_equal(sv_jint(json_object_get(q04, "counts"), "wait"), 2); /* 4 % 3 + 1 */
    assert_int_equal(sv_jint(json_object_get(last, "totals"), "workers"), 3);
    long long ready = 0;
    for (int i = 0; i < NQUEUES; i++)
        ready += i % 3 + 1;
    assert_int_equal(sv_jint(json_object_get(last, "totals"), "ready"), ready);
    json_t *tp = json_object_get(q03, "throughput");
    assert_int_equal(json_array_size(json_object_get(tp, "completed")), 30);
    assert_true(json_is_integer(json_object_get(q03, "rateLimitedMs")));
    json_decref(last);

    /* a worker gone: the next overview counts one fewer */
    ferry__conn_close(w[1]);
    w[1] = NULL;
    long long deadline = th_mono_ms() + 5000;
    for (;;) {
        r = sv_call(&s, "GET", "/api/overview", NULL, NULL);
        SV_EXPECT(r, 200);
        long long n = sv_jint(queue_of(r.json, "q03"), "workers");
        sv_resp_free(&r);
        if (n == 1) break;
        if (th_mono_ms() > deadline) fail_msg("q03 still shows %lld workers", n);
        th_sleep_ms(50);
    }

    sv_expect_error(&s, "GET", "/api/overview?interval=2", NULL, NULL, 400,
                    "unknown query parameter \"interval\"");
    sv_stop(&s);
    for (int i = 0; i < 5; i++)
        ferry__conn_close(w[i]);
    ferry__conn_close(c);
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
