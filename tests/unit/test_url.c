/* test_url.c - the Redis URL parser (src/redis/url.c) and ferry_redis_url_check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/redis.h"
#include "redis/url.h"

static ferry_redis_url parse_ok(const char *url) {
    ferry_redis_url u;
    ferry_error e = {0};
    int rc = ferry__redis_url_parse(url, &u, &e);
    if (rc != 0) fail_msg("parse '%s' failed: %s", url, e.message);
    return u;
}

/* Parse must fail with FERRY_EINVAL and a message containing `want`. */
static void parse_bad(const char *url, const char *want) {
    ferry_redis_url u;
    ferry_error e = {0};
    int rc = ferry__redis_url_parse(url, &u, &e);
    if (rc == 0) fail_msg("parse '%s' unexpectedly succeeded", url);
    assert_int_equal(rc, FERRY_EINVAL);
    assert_int_equal(e.code, FERRY_EINVAL);
    if (!strstr(e.message, want))
        fail_msg("parse '%s': message '%s' lacks '%s'", url, e.message, want);
    /* a failed parse leaves nothing to free */
    assert_null(u.host);
    assert_null(u.user);
    assert_null(u.password);
    assert_null(u.path);
    assert_int_equal(ferry_redis_url_check(url, NULL), FERRY_EINVAL);
}

static void test_plain(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("redis://localhost");
    assert_int_equal(u.kind, FERRY_URL_TCP);
    assert_string_equal(u.host, "localhost");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 0);
    assert_null(u.user);
    assert_null(u.password);
    assert_null(u.path);
    ferry__redis_url_free(&u);

    u = parse_ok("redis://10.0.0.7:6380/15");
    assert_string_equal(u.host, "10.0.0.7");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 15);
    ferry__redis_url_free(&u);

    u = parse_ok("redis://h/"); /* empty path = db 0 */
    assert_int_equal(u.db, 0);
    ferry__redis_url_free(&u);

    u = parse_ok("REDIS://h:1/2147483647"); /* scheme is case-insensitive; db at its max */
    assert_int_equal(u.kind, FERRY_URL_TCP);
    assert_int_equal(u.port, 1);
    assert_int_equal(u.db, 2147483647);
    ferry__redis_url_free(&u);

    u = parse_ok("redis://h:65535");
    assert_int_equal(u.port, 65535);
    ferry__redis_url_free(&u);

    u = parse_ok(FERRY_DEFAULT_REDIS_URL);
    assert_string_equal(u.host, "127.0.0.1");
    ferry__redis_url_free(&u);
}

static void test_tls(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("rediss://cache.example.com:6380/1");
    assert_int_equal(u.kind, FERRY_URL_TLS);
    assert_string_equal(u.host, "cache.example.com");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 1);
    ferry__redis_url_free(&u);
}

static void test_credentials(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("redis://ferry:secret%40pw@127.0.0.1:7000/3");
    assert_string_equal(u.user, "ferry");
    assert_string_equal(u.password, "secret@pw");
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 7000);
    assert_int_equal(u.db, 3);
    ferry__redis_url_free(&u);

    /* password only */
    u = parse_ok("redis://:pw@h");
    assert_null(u.user);
    assert_string_equal(u.password, "pw");
    ferry__redis_url_free(&u);

    /* user without password */
    u = parse_ok("redis://alice@h");
    assert_string_equal(u.user, "alice");
    assert_null(u.password);
    ferry__redis_url_free(&u);

    /* encoded specials, ':' inside the password, raw '@' split at the last one */
    u = parse_ok("redis://a%3Ab:p%2F%3F%23%25:x@h");
    assert_string_equal(u.user, "a:b");
    assert_string_equal(u.password, "p/?#%:x");
    ferry__redis_url_free(&u);

    u = parse_ok("redis://u:p@ss@h:1");
    assert_string_equal(u.user, "u");
    assert_string_equal(u.password, "p@ss");
    assert_string_equal(u.host, "h");
    ferry__redis_url_free(&u);

    /* empty parts are absent */
    u = parse_ok("redis://:@h");
    assert_null(u.user);
    assert_null(u.password);
    ferry__redis_url_free(&u);

    /* UTF-8 via percent-encoding, lower-case hex */
    u = parse_ok("redis://u:%c3%a9t%C3%A9@h");
    assert_string_equal(u.password, "\xc3\xa9t\xc3\xa9");
    ferry__redis_url_free(&u);
}

static void test_ipv6(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("redis://[::1]:6380/2");
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 6380);
    assert_int_equal(u.db, 2);
    ferry__redis_url_free(&u);

    u = parse_ok("rediss://user:pw@[2001:db8::7]");
    assert_int_equal(u.kind, FERRY_URL_TLS);
    assert_string_equal(u.host, "2001:db8::7");
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.password, "pw");
    ferry__redis_url_free(&u);

    parse_bad("redis://[::1", "unterminated '['");
    parse_bad("redis://[]:6379", "invalid IPv6 address");
    parse_bad("redis://[zz::1]", "invalid IPv6 address '[zz::1]'");
    parse_bad("redis://[::1]x", "unexpected 'x' after ']'");
    parse_bad("redis://[::1]:", "empty port");
    parse_bad("redis://::1:6379", "IPv6 address needs brackets");
    /* bytes that are not text are quoted escaped, never copied raw into the message */
    parse_bad("redis://u:pw@\xff\xfe:1", "invalid character '\\xff' in host '\\xff\\xfe'");
    parse_bad("redis://[\xc3\x28]:1", "invalid IPv6 address '[\\xc3(]'");
}

static void test_unix(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("unix:///var/run/redis/redis.sock");
    assert_int_equal(u.kind, FERRY_URL_UNIX);
    assert_string_equal(u.path, "/var/run/redis/redis.sock");
    assert_null(u.host);
    assert_int_equal(u.db, 0);
    ferry__redis_url_free(&u);

    u = parse_ok("unix:///tmp/r%20s.sock?db=4");
    assert_string_equal(u.path, "/tmp/r s.sock");
    assert_int_equal(u.db, 4);
    ferry__redis_url_free(&u);

    u = parse_ok("unix://:pw@/tmp/a@b.sock");
    assert_string_equal(u.password, "pw");
    assert_string_equal(u.path, "/tmp/a@b.sock");
    ferry__redis_url_free(&u);

    parse_bad("unix://tmp/redis.sock", "takes no host");
    parse_bad("unix://", "missing unix socket path");
    parse_bad("unix:///tmp/r.sock?db=x", "db is not a number");
    parse_bad("unix:///tmp/r.sock?db=", "db= needs a number");
    parse_bad("unix:///tmp/r.sock?db", "db= needs a number");
    parse_bad("unix:///tmp/r.sock?db=1&db=2", "db= given twice");
    parse_bad("unix:///tmp/r.sock?dbx=1", "unknown option in the query");
    parse_bad("unix:///tmp/r.sock?timeout=3", "unknown option in the query");
    parse_bad("unix:///tmp/r.sock#frag", "unexpected '#'");
    parse_bad("unix:///tmp/%00.sock", "socket path contains %00");

    char longpath[200];
    memset(longpath, 'a', sizeof longpath);
    memcpy(longpath, "unix:///", 8);
    longpath[sizeof longpath - 1] = '\0';
    parse_bad(longpath, "unix socket path longer than");
}

static void test_bad_scheme(void **state) {
    (void)state;
    parse_bad("http://localhost", "unknown scheme 'http' (want redis://, rediss:// or unix://)");
    parse_bad("localhost:6379", "missing scheme");
    parse_bad("", "missing scheme");
    parse_bad("://h", "unknown scheme");
    parse_bad("redis:/h", "missing scheme");
}

static void test_bad_host_port_db(void **state) {
    (void)state;
    parse_bad("redis://", "missing host");
    parse_bad("redis://:6379", "missing host");
    parse_bad("redis://u:p@", "missing host");
    parse_bad("redis:///3", "missing host");
    /* with credentials, the port is quoted (nothing after the '@' is a secret) */
    parse_bad("redis://u:p@h:70000", "port '70000' out of range (1..65535)");
    parse_bad("redis://u:p@h:0", "port '0' out of range");
    parse_bad("redis://u:p@h:-1", "port '-1' is not a number");
    parse_bad("redis://u:p@h:12ab", "port '12ab' is not a number");
    parse_bad("redis://[::1]:12ab", "port '12ab' is not a number");
    /* without, it is not: it could be a password whose host was forgotten */
    parse_bad("redis://h:70000", "redis URL: port out of range (1..65535)");
    parse_bad("redis://h:0", "port out of range");
    parse_bad("redis://h:99999999999999999999", "out of range");
    parse_bad("redis://h:-1", "port is not a number");
    parse_bad("redis://h:+1", "is not a number");
    parse_bad("redis://h:12ab", "port is not a number");
    parse_bad("redis://h:", "empty port");
    parse_bad("redis://h:0000000000000000070000", "port out of range");
    parse_bad("redis://h_!x", "invalid character '!' in host");
    parse_bad("redis://h/2147483648", "db '2147483648' out of range");
    parse_bad("redis://h/-1", "db path '-1' is not a number");
    parse_bad("redis://h/abc", "db path 'abc' is not a number");
    parse_bad("redis://h/1/2", "db path '1/2' is not a number");
    parse_bad("redis://h:1/abc", "db path is not a number");
    parse_bad("redis://h:1/2147483648", "db out of range (0..2147483647)");

    char host[300];
    memset(host, 'a', sizeof host);
    memcpy(host, "redis://", 8);
    host[sizeof host - 1] = '\0';
    parse_bad(host, "host longer than 255");
}

/* Leading zeros do not count against the digit limit. */
static void test_leading_zeros(void **state) {
    (void)state;
    ferry_redis_url u = parse_ok("redis://h:00000000006379/0000000000000000000000000003");
    assert_int_equal(u.port, 6379);
    assert_int_equal(u.db, 3);
    ferry__redis_url_free(&u);
    u = parse_ok("redis://h:0000000000000000000000000000000000001");
    assert_int_equal(u.port, 1);
    ferry__redis_url_free(&u);
    u = parse_ok("redis://h/00");
    assert_int_equal(u.db, 0);
    ferry__redis_url_free(&u);
}

static void test_trailing_junk(void **state) {
    (void)state;
    parse_bad("redis://h/0?ssl=true", "unexpected query ('?...') after the db");
    parse_bad("redis://h:6379/0?ssl=true", "unexpected query ('?...') after the db");
    parse_bad("redis://h:6379#x", "unexpected fragment ('#...') after the db");
    parse_bad("redis://h#x", "unexpected fragment ('#...')");
    parse_bad("redis://h:6379 ", "space or control character at offset 14");
    parse_bad("redis://h\n", "control character");
    parse_bad(" redis://h", "space or control character at offset 0");
}

static void test_percent_errors(void **state) {
    (void)state;
    parse_bad("redis://u:ab%4@h", "bad percent-encoding in password");
    parse_bad("redis://u:ab%zz@h", "bad percent-encoding in password");
    parse_bad("redis://u:ab%@h", "bad percent-encoding in password");
    parse_bad("redis://u%g1:x@h", "bad percent-encoding in user name");
    parse_bad("redis://u:a%00b@h", "password contains %00");
}

/* Error messages must never carry the password, whatever went wrong. */
static void test_password_never_echoed(void **state) {
    (void)state;
    const char *urls[] = {
        "redis://u:Sup3rS3cret@h:70000",
        "redis://u:Sup3rS3cret@h:abc",
        "redis://u:Sup3rS3cret@:1",
        "redis://u:Sup3rS3cret@h/99999999999",
        "redis://u:Sup3rS3cret%zz@h",
        "redis://u:Sup3rS3cret@h?x",
        "redis://u:Sup3/rS3cret@h",
        "redis://u:Sup3?rS3cret@h",
        "redis://u:Sup3#rS3cret@h",
        "http://u:Sup3rS3cret@h",
        "u:Sup3rS3cret@h",
        "redis://u:Sup3rS3cret@h/0/x",
        "redis://u:Sup3rS3cret@[::1",
        "redis://u:Sup3rS3cret@h!",
        "unix://u:Sup3/rS3cret@/tmp/x",
        "redis:Sup3rS3cret://h",
        "redis://u:Sup3rS3cret@h:1 ",
        "xx:Sup3rS3cret@h://",
        /* the host forgotten: the password sits where the port, db or options go */
        "redis://u:Sup3rS3cret",
        "redis://Sup3rS3cret:Sup3rS3cret",
        "rediss://u:Sup3rS3cret/0",
        "redis://u:12/Sup3rS3cret",
        "redis://u:12/0/Sup3rS3cret",
        "redis://u:12?Sup3rS3cret",
        "redis://u:12#Sup3rS3cret",
        "redis://u:12/0?Sup3rS3cret",
        "redis://:Sup3rS3cret",
        /* a password given as a query option, with or without userinfo */
        "redis://default@127.0.0.1:6379/0?password=Sup3rS3cret",
        "redis://:x@h:6379/0?password=Sup3rS3cret",
        "redis://default@h:6379?password=Sup3rS3cret",
        "redis://127.0.0.1/?password=Sup3rS3cret",
        "redis://h/0?Sup3rS3cret",
        "redis://h#Sup3rS3cret",
        "rediss://u@h:1/2#Sup3rS3cret",
        "unix:///tmp/r.sock?password=Sup3rS3cret",
        "unix:///tmp/r.sock?Sup3rS3cret",
        "unix:///tmp/r.sock?db=Sup3rS3cret",
        "unix:///tmp/r.sock?db=1&Sup3rS3cret",
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        ferry_error e = {0};
        ferry_redis_url u;
        int rc = ferry__redis_url_parse(urls[i], &u, &e);
        if (rc == 0) fail_msg("'%s' parsed", urls[i]);
        /* Any 5-byte run of the secret would be a leak. */
        const char *secret = "Sup3rS3cret";
        for (size_t k = 0; k + 5 <= strlen(secret); k++) {
            char frag[6];
            memcpy(frag, secret + k, 5);
            frag[5] = '\0';
            if (strstr(e.message, frag))
                fail_msg("'%s': message leaks the password: %s", urls[i], e.message);
        }
    }
}

/* A numeric password where the port goes is not quoted either. */
static void test_numeric_password_as_port(void **state) {
    (void)state;
    const char *urls[] = {"redis://u:8675309123", "redis://u:00086753091", "redis://u:99999",
                          "redis://u:12/8675309123"};
    const char *secrets[] = {"8675309123", "86753091", "99999", "8675309123"};
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        ferry_error e = {0};
        ferry_redis_url u;
        assert_int_equal(ferry__redis_url_parse(urls[i], &u, &e), FERRY_EINVAL);
        if (strstr(e.message, secrets[i]))
            fail_msg("'%s': message quotes the password: %s", urls[i], e.message);
    }
}

static void test_length_limit(void **state) {
    (void)state;
    size_t n = 4097;
    char *url = malloc(n + 1);
    assert_non_null(url);
    memcpy(url, "redis://u:", 10);
    memset(url + 10, 'p', n - 10);
    url[n - 2] = '@';
    url[n - 1] = 'h';
    url[n] = '\0';
    parse_bad(url, "longer than 4096 bytes");
    /* one byte less is fine */
    url[n - 3] = '@';
    url[n - 2] = 'h';
    url[n - 1] = '\0';
    ferry_redis_url u = parse_ok(url);
    assert_int_equal(strlen(u.password), 4096 - 12);
    ferry__redis_url_free(&u);
    free(url);
}

static void test_public_api(void **state) {
    (void)state;
    ferry_redis_options o;
    memset(&o, 0x5a, sizeof o);
    ferry_redis_options_init(&o);
    assert_null(o.url);
    assert_null(o.tls_ca_file);
    assert_null(o.tls_ca_dir);
    assert_null(o.tls_cert_file);
    assert_null(o.tls_key_file);
    assert_null(o.tls_server_name);
    assert_int_equal(o.tls_insecure, 0);
    assert_int_equal(o.connect_timeout_ms, 0);
    assert_int_equal(o.command_timeout_ms, 0);

    ferry_error e = {0};
    assert_int_equal(ferry_redis_url_check("rediss://u:p@h:1/2", &e), 0);
    assert_int_equal(ferry_redis_url_check("redis://h:70000", &e), FERRY_EINVAL);
    assert_int_equal(e.code, FERRY_EINVAL);
    assert_non_null(strstr(e.message, "redis URL: port out of range (1..65535)"));
    assert_int_equal(ferry_redis_url_check(NULL, &e), FERRY_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_credentials),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_unix),
        cmocka_unit_test(test_bad_scheme),
        cmocka_unit_test(test_bad_host_port_db),
        cmocka_unit_test(test_leading_zeros),
        cmocka_unit_test(test_trailing_junk),
        cmocka_unit_test(test_percent_errors),
        cmocka_unit_test(test_password_never_echoed),
        cmocka_unit_test(test_numeric_password_as_port),
        cmocka_unit_test(test_length_limit),
        cmocka_unit_test(test_public_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
