/* test_conn_secret.c - a Redis password must not linger in freed heap memory: not in the
 * URL parser's partly decoded copy when the URL is bad, not in hiredis' encoding of AUTH,
 * not in an output buffer that grew (the open-time pipeline puts ~50 KB of SCRIPT LOAD
 * behind AUTH, so the buffer moves) or was freed.
 *
 * How: this program interposes free() and realloc() (glibc's __libc_free/__libc_realloc
 * do the work) and, while armed, searches every block handed back to the allocator for
 * the password. The passwords are made up at run time and given to Redis as SHA-256
 * (ACL SETUSER #hash), so the test's own allocations never hold one. Under
 * AddressSanitizer, whose allocator this would bypass, there is no interposition: the
 * connections are still made and checked, the search is skipped. */
#define _GNU_SOURCE /* memmem */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "redis/url.h"
#include "support/th.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static const char *needle; /* the password being looked for */
static size_t needle_len;
static atomic_int armed;
static atomic_int leaks;

#ifndef UNDER_ASAN
#include <malloc.h>

extern void __libc_free(void *p);
extern void *__libc_realloc(void *p, size_t n);

static int holds_secret(void *p) {
    if (!p || !atomic_load(&armed)) return 0;
    return memmem(p, malloc_usable_size(p), needle, needle_len) != NULL;
}

void free(void *p) {
    if (holds_secret(p)) atomic_fetch_add(&leaks, 1);
    __libc_free(p);
}

/* A block that moves is freed by realloc itself, unwiped. */
void *realloc(void *p, size_t n) {
    int secret = holds_secret(p);
    void *q = __libc_realloc(p, n);
    if (secret && q != p && (q || n == 0)) atomic_fetch_add(&leaks, 1);
    return q;
}
#define SCAN 1
#else
#define SCAN 0
#endif

static void arm(const char *secret) {
    needle = secret;
    needle_len = strlen(secret);
    atomic_store(&leaks, 0);
    atomic_store(&armed, 1);
}

/* Disarm; fail when a block holding the password was freed meanwhile. */
static void disarm_expect_no_leak(const char *what) {
    atomic_store(&armed, 0);
    if (atomic_load(&leaks) != 0)
        fail_msg("%s: %d freed block(s) held the password", what, atomic_load(&leaks));
}

/* ---- URL parser --------------------------------------------------------------------- */

static void test_url_error_paths(void **state) {
    (void)state;
    static const char secret[] = "Pr1vat3Passw0rdOfTheUrlTest";
    const char *urls[] = {
        "redis://u:Pr1vat3Passw0rdOfTheUrlTest%zz@h", /* bad %XX after the password */
        "redis://u:Pr1vat3Passw0rdOfTheUrlTest%00@h", /* %00 */
        "redis://u:Pr1vat3Passw0rdOfTheUrlTest%4@h",  /* truncated %X */
        "redis://u:Pr1vat3Passw0rdOfTheUrlTest@h:0",  /* decoded, then the port fails */
        "redis://u:Pr1vat3Passw0rdOfTheUrlTest@h/x",  /* decoded, then the db fails */
        "unix://:Pr1vat3Passw0rdOfTheUrlTest@/%zz.s", /* decoded, then the path fails */
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        ferry_redis_url u;
        ferry_error e = {0};
        arm(secret);
        int rc = ferry__redis_url_parse(urls[i], &u, &e);
        disarm_expect_no_leak(urls[i]);
        assert_int_equal(rc, FERRY_EINVAL);
    }
    /* and a good one, freed */
    ferry_redis_url u;
    ferry_error e = {0};
    arm(secret);
    assert_int_equal(ferry__redis_url_parse("redis://u:Pr1vat3Passw0rdOfTheUrlTest@h", &u, &e), 0);
    assert_string_equal(u.password, secret);
    ferry__redis_url_free(&u);
    disarm_expect_no_leak("parse + free");
}

/* ---- connections -------------------------------------------------------------------- */

/* A made-up password of `len` characters, unique to this process. */
static char *make_password(size_t len) {
    char *pw = malloc(len + 1);
    assert_non_null(pw);
    snprintf(pw, len + 1, "pw%dx", (int)getpid());
    for (size_t i = strlen(pw); i < len; i++)
        pw[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + len) % 36];
    pw[len] = '\0';
    return pw;
}

static void sha256_hex(const char *s, char out[65]) {
    unsigned char md[32];
    unsigned int n = 0;
    assert_true(EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL));
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static ferry_conn *admin_conn(const ferry_redis_options *server) {
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(server, NULL, &c, &e) != 0) fail_msg("admin: %s", e.message);
    return c;
}

static void want_ok(redisReply *r) {
    if (r->type != REDIS_REPLY_STATUS) fail_msg("want OK, got %d %s", r->type, r->str);
    freeReplyObject(r);
}

/* Create ACL user `user` with password `pw` (sent as its SHA-256) on the server of `o`,
 * open a connection as that user with a client name and a db while armed, use it, close
 * it, and check that no freed block held the password. Then a wrong password: refused,
 * and no leak on that path either. */
static void open_as_user(ferry_redis_options o, const char *scheme, const char *port,
                         const char *pw) {
    char user[64], hash[65];
    snprintf(user, sizeof user, "%s-secret", th_prefix());
    sha256_hex(pw, hash);
    ferry_conn *admin = admin_conn(&o);
    want_ok(th_cmd(admin, "ACL SETUSER %s reset on #%s ~* &* +@all", user, hash));

    size_t cap = strlen(pw) + 200;
    char *url = malloc(cap);
    assert_non_null(url);
    snprintf(url, cap, "%s://%s:%s@127.0.0.1:%s/2", scheme, user, pw, port);
    o.url = url;
    ferry_conn *c = NULL;
    ferry_error e = {0};
    arm(pw);
    int rc = ferry__conn_open(&o, "secret-test", &c, &e);
    if (rc == 0) {
        redisReply *r = th_cmd(c, "ACL WHOAMI");
        assert_string_equal(r->str, user);
        freeReplyObject(r);
        ferry__conn_close(c);
    }
    disarm_expect_no_leak("open, use and close");
    if (rc != 0) fail_msg("open as %s: %s", user, e.message);

    /* wrong password: the same buffers, freed on the error path */
    char *wrong = make_password(strlen(pw));
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == 'a' ? 'b' : 'a';
    snprintf(url, cap, "%s://%s:%s@127.0.0.1:%s", scheme, user, wrong, port);
    arm(wrong);
    rc = ferry__conn_open(&o, NULL, &c, &e);
    disarm_expect_no_leak("refused AUTH");
    assert_int_equal(rc, FERRY_EAUTH);
    free(wrong);
    free(url);

    redisReply *r = th_cmd(admin, "ACL DELUSER %s", user);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, 1);
    freeReplyObject(r);
    ferry__conn_close(admin);
}

static void test_acl_user_tcp(void **state) {
    (void)state;
    char *pw = make_password(40);
    open_as_user(th_redis_options(0), "redis", th_env_require("REDIS_PORT"), pw);
    free(pw);
}

/* AUTH alone is bigger than the initial output buffer. */
static void test_long_password_tcp(void **state) {
    (void)state;
    char *pw = make_password(3000);
    open_as_user(th_redis_options(0), "redis", th_env_require("REDIS_PORT"), pw);
    free(pw);
}

static void test_acl_user_tls(void **state) {
    (void)state;
    char *pw = make_password(64);
    open_as_user(th_redis_options(1), "rediss", th_env_require("REDIS_TLS_PORT"), pw);
    free(pw);
}

/* The scan itself works: a block freed with the password in it is seen. */
static void test_scan_sees_a_leak(void **state) {
    (void)state;
    if (!SCAN) th_skip("test_scan_sees_a_leak: the free() hook cannot run under a sanitizer");
    char *pw = make_password(32);
    char *copy = strdup(pw);
    assert_non_null(copy);
    arm(pw);
    free(copy);
    atomic_store(&armed, 0);
    assert_int_equal(atomic_load(&leaks), 1);
    free(pw);
}

int main(void) {
    if (!SCAN) fprintf(stderr, "AddressSanitizer build: freed blocks are not searched\n");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_sees_a_leak), cmocka_unit_test(test_url_error_paths),
        cmocka_unit_test(test_acl_user_tcp),     cmocka_unit_test(test_long_password_tcp),
        cmocka_unit_test(test_acl_user_tls),
    };
    return th_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
