/* test_conn_idle.c - the idle-peer check (ferry__conn_check_idle_peer) that producers and
 * workers run before sending on a connection that sat idle: a connection the server closed
 * (CLIENT KILL here; a restart or an idle timeout alike) is found broken before anything is
 * sent on it, over plain TCP and over TLS (where the server's close may start with a TLS
 * close_notify record and a fresh TLS 1.3 connection has session tickets waiting, neither of
 * which is a reply); a live idle connection is not. */
#include <string.h>

#include "redis/conn.h"
#include "support/th.h"

static ferry_conn *open_conn(const ferry_redis_options *o) {
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(o, NULL, &c, &e) != 0) fail_msg("open %s: %s", o->url, e.message);
    return c;
}

static int is_broken(void *arg) {
    return ferry__conn_check_idle_peer(arg);
}

static void idle_check(int tls) {
    ferry_redis_options o = th_redis_options(tls);
    /* a fresh connection (TLS 1.3 tickets may still be waiting) and one that answered a
     * command: both alive */
    ferry_conn *fresh = open_conn(&o);
    ferry_conn *victim = open_conn(&o);
    ferry_conn *admin = open_conn(&o);
    long long id = th_cmd_int(victim, "CLIENT ID");
    assert_false(ferry__conn_check_idle_peer(fresh));
    assert_false(ferry__conn_check_idle_peer(victim));

    redisReply *r = th_cmd(admin, "CLIENT KILL ID %lld", id);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    /* the close reaches us within moments; nothing is sent on the victim meanwhile */
    assert_true(th_wait_until(is_broken, victim, 5000));
    assert_true(ferry__conn_broken(victim));

    /* the others are still fine, and still answer */
    assert_false(ferry__conn_check_idle_peer(fresh));
    r = th_cmd(fresh, "PING");
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    assert_false(ferry__conn_check_idle_peer(fresh));
    ferry__conn_close(victim);
    ferry__conn_close(fresh);
    ferry__conn_close(admin);
}

static void test_idle_check_plain(void **state) {
    (void)state;
    idle_check(0);
}

static void test_idle_check_tls(void **state) {
    (void)state;
    idle_check(1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_check_plain),
        cmocka_unit_test(test_idle_check_tls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
