/* test_serve_auth.c - the tokens of `ferry serve` over real HTTP against the real binary:
 * without --token-file every action is refused (403) and reads are open; with one, a
 * missing or wrong token is 401 with WWW-Authenticate: Bearer, a token without the scope
 * is 403, the right one acts (and every refusal leaves the queue as it was); reads with
 * --require-read-token (also /metrics; /healthz stays open); no cookie ever; token-file
 * errors from the CLI (exit 2, the line number named, the secret never shown, a file others
 * can read refused); and, without a database, the audit as log records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/sv.h"

static const char *prefix;

#define OPS_SECRET "ops-0123456789abcdef0123456789abcdef"
#define RO_SECRET "ro-0123456789abcdef0123456789abcdef-x"
#define DLQ_SECRET "dlq-0123456789abcdef0123456789abcdef"
#define AUTH(secret) "Authorization: Bearer " secret

static const char *token_file(void) {
    return sv_token_file("tokens",
                         "# operators\n"
                         "ops read,act " OPS_SECRET "\n"
                         "\n"
                         "   ro read " RO_SECRET "\n"
                         "dlq\tredrive\t" DLQ_SECRET "\r\n",
                         0600);
}

static void make_queue(const char *name) {
    ferry_queue_close(th_queue_open(prefix, name, NULL, 0));
}

static int queue_paused(const char *name) {
    ferry_conn *c = th_conn();
    long long n = th_cmd_int(c, "HEXISTS %s:%s:meta paused", prefix, name);
    ferry__conn_close(c);
    return (int)n;
}

static void expect_no_cookie(const sv_resp *r) {
    char *c = sv_header(r, "Set-Cookie");
    if (c) fail_msg("Set-Cookie: %s", c);
}

static void test_no_token_file(void **state) {
    (void)state;
    make_queue("nt");
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", prefix));
    sv_resp r;
    sv_request(&s, "POST", "/api/queues/nt/pause", NULL, NULL, &r);
    SV_EXPECT(r, 403);
    assert_string_equal(sv_json_str(&r, "error"), "no token file: actions are disabled");
    sv_resp_free(&r);
    /* a token changes nothing: there is no file to hold it */
    sv_request(&s, "POST", "/api/queues/nt/pause", SV_HEADERS(AUTH(OPS_SECRET)), NULL, &r);
    SV_EXPECT(r, 403);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("nt"), 0);
    sv_request(&s, "GET", "/api/queues", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    expect_no_cookie(&r);
    sv_resp_free(&r);
    sv_stop(&s);
    char *log = sv_log(&s);
    assert_non_null(strstr(log, "actions disabled (no --token-file)"));
    free(log);
}

static void test_tokens_and_scopes(void **state) {
    (void)state;
    make_queue("tq");
    sv_server s;
    sv_start(&s,
             SV_FLAGS("--prefix", prefix, "--token-file", token_file(), "--log-format", "json"));
    sv_resp r;
    /* missing */
    sv_request(&s, "POST", "/api/queues/tq/pause", NULL, NULL, &r);
    SV_EXPECT(r, 401);
    char *www = sv_header(&r, "WWW-Authenticate");
    assert_string_equal(www, "Bearer");
    free(www);
    expect_no_cookie(&r);
    sv_resp_free(&r);
    /* wrong, not Bearer, a prefix of a right one */
    const char *bad[] = {AUTH("ops-0123456789abcdef0123456789abcdeX"),
                         "Authorization: Basic b3BzOng=", AUTH("ops-0123456789abcdef"),
                         "Authorization: Bearer"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sv_request(&s, "POST", "/api/queues/tq/pause", SV_HEADERS(bad[i]), NULL, &r);
        if (r.status != 401) fail_msg("%s: HTTP %ld, want 401", bad[i], r.status);
        sv_resp_free(&r);
    }
    /* a read-only token, a redrive-only token: 403 naming the scope */
    sv_request(&s, "POST", "/api/queues/tq/pause", SV_HEADERS(AUTH(RO_SECRET)), NULL, &r);
    SV_EXPECT(r, 403);
    assert_non_null(strstr(sv_json_str(&r, "error"), "\"act\""));
    sv_resp_free(&r);
    sv_request(&s, "POST", "/api/queues/tq/pause", SV_HEADERS(AUTH(DLQ_SECRET)), NULL, &r);
    SV_EXPECT(r, 403);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("tq"), 0);
    /* reads are open, and a token that is shown must be right */
    sv_request(&s, "GET", "/api/queues/tq", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/api/queues/tq", SV_HEADERS(AUTH(RO_SECRET)), NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/api/queues/tq",
               SV_HEADERS(AUTH("nope-0123456789abcdef0123456789abcdef")), NULL, &r);
    SV_EXPECT(r, 401);
    sv_resp_free(&r);
    /* the right token acts */
    sv_request(&s, "POST", "/api/queues/tq/pause",
               SV_HEADERS(AUTH(OPS_SECRET), "X-Request-Id: pause-ok"), NULL, &r);
    SV_EXPECT(r, 200);
    expect_no_cookie(&r);
    sv_resp_free(&r);
    assert_int_equal(queue_paused("tq"), 1);
    sv_stop(&s);

    /* no database: the audit is the log; no secret in it */
    char *log = sv_log(&s);
    assert_null(strstr(log, OPS_SECRET));
    assert_null(strstr(log, RO_SECRET));
    assert_null(strstr(log, "0123456789abcdef0123456789abcde"));
    int audits = 0, ok_seen = 0, unknown = 0, ro_seen = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) fail_msg("not JSON: %s", line);
        const char *ev = json_string_value(json_object_get(j, "event"));
        if (ev && !strcmp(ev, "serve.audit")) {
            audits++;
            const char *actor = json_string_value(json_object_get(j, "actor"));
            long long st = json_integer_value(json_object_get(j, "status"));
            const char *rid = json_string_value(json_object_get(j, "request_id"));
            assert_string_equal(json_string_value(json_object_get(j, "path")),
                                "/api/queues/tq/pause");
            assert_null(json_object_get(j, "audit_error"));
            if (st == 200 && !strcmp(actor, "ops") && !strcmp(rid, "pause-ok")) ok_seen = 1;
            if (st == 401 && !strcmp(actor, "unknown")) unknown++;
            if (st == 403 && !strcmp(actor, "ro")) ro_seen = 1;
        }
        json_decref(j);
    }
    free(log);
    assert_int_equal(audits, 8); /* every request to the action route, none for reads */
    assert_true(ok_seen && ro_seen);
    assert_int_equal(unknown, 5);
}

static void test_require_read_token(void **state) {
    (void)state;
    sv_server s;
    sv_start(&s,
             SV_FLAGS("--prefix", prefix, "--token-file", token_file(), "--require-read-token"));
    sv_resp r;
    sv_request(&s, "GET", "/api/queues", NULL, NULL, &r);
    SV_EXPECT(r, 401);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    SV_EXPECT(r, 401);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/api/queues", SV_HEADERS(AUTH(RO_SECRET)), NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    /* every token may read, whatever its scopes say */
    sv_request(&s, "GET", "/metrics", SV_HEADERS(AUTH(DLQ_SECRET)), NULL, &r);
    SV_EXPECT(r, 200);
    assert_non_null(strstr(r.body, "ferry_build_info"));
    sv_resp_free(&r);
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_stop(&s);
}

/* `ferry serve --token-file F` refuses F: exit 2, the message has `needle`, never the
 * secret. */
static void expect_token_file_error(const char *text, int mode, const char *needle,
                                    const char *secret) {
    const char *f = sv_token_file("bad-tokens", text, mode);
    cli_run r;
    CLI(r, "serve", "--listen", "127.0.0.1:0", "--redis", cli_url(), "--token-file", f);
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, needle)) fail_msg("want \"%s\" in: %s", needle, r.err);
    if (secret && (strstr(r.err, secret) || strstr(r.out, secret)))
        fail_msg("the secret is shown: %s", r.err);
    cli_run_free(&r);
}

static void test_token_file_errors(void **state) {
    (void)state;
    expect_token_file_error("a read 0123456789abcdef0123456789abcdef\nb read short-secret-x\n",
                            0600, "line 2", "short-secret-x");
    expect_token_file_error("a read,write 0123456789abcdef0123456789abcdef\n", 0600,
                            "unknown scope \"write\"", "0123456789abcdef0123456789abcdef");
    expect_token_file_error("a read 0123456789abcdef0123456789abcdef\n"
                            "a act 1123456789abcdef0123456789abcdef\n",
                            0600, "line 2: token name \"a\" is used twice",
                            "1123456789abcdef0123456789abcdef");
    expect_token_file_error("a read 0123456789abcdef0123456789abcdef\n"
                            "# x\n"
                            "b act 0123456789abcdef0123456789abcdef\n",
                            0600, "line 3: token \"b\" has the same secret as token \"a\"",
                            "0123456789abcdef0123456789abcdef");
    expect_token_file_error("a read\n", 0600, "line 1: expected NAME SCOPES SECRET", NULL);
    expect_token_file_error("a read 0123456789abcdef0123456789abcdef extra\n", 0600,
                            "line 1: expected NAME SCOPES SECRET", NULL);
    expect_token_file_error("a/b read 0123456789abcdef0123456789abcdef\n", 0600, "line 1: the name",
                            NULL);
    expect_token_file_error("a read 0123456789abcdef0123456789abcdef\n", 0644, "chmod 600",
                            "0123456789abcdef0123456789abcdef");
    cli_run r;
    CLI(r, "serve", "--token-file", "/nonexistent/tokens");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--token-file"));
    cli_run_free(&r);
    CLI(r, "serve", "--require-read-token");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "needs --token-file"));
    cli_run_free(&r);
    CLI(r, "serve", "--log-format", "yaml");
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "serve", "--slo-backlog-age", "soon");
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
}

int main(void) {
    prefix = strdup(th_prefix());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_token_file),
        cmocka_unit_test(test_tokens_and_scopes),
        cmocka_unit_test(test_require_read_token),
        cmocka_unit_test(test_token_file_errors),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
