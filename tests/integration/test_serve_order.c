/* test_serve_order.c - the order of `ferry serve`'s refusals, against the real binary:
 * with --read-only an action without a token, or with a wrong one, gets the 401 (with
 * WWW-Authenticate, and not a word of the server's mode) before the read-only 403, which a
 * valid token gets, whatever its scopes; and a token file without any token (empty, or only
 * comments) is refused at start (exit 2, the file named, its content not shown). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/sv.h"

#define OPS_SECRET "ops-0123456789abcdef0123456789abcdef"
#define RO_SECRET "ro-0123456789abcdef0123456789abcdef-x"
#define AUTH(secret) "Authorization: Bearer " secret

static void expect_401(const sv_server *s, const char *method, const char *path, const char *auth,
                       const char *body) {
    sv_resp r = sv_call(s, method, path, auth, body);
    SV_EXPECT(r, 401);
    const char *e = sv_json_str(&r, "error");
    if (!e || strstr(e, "read-only") || strstr(e, "read only"))
        fail_msg("%s %s: a 401 that tells the mode: %s", method, path, r.body);
    char *ch = sv_header(&r, "WWW-Authenticate");
    if (!ch || strcmp(ch, "Bearer") != 0) fail_msg("%s %s: WWW-Authenticate %s", method, path, ch);
    free(ch);
    sv_resp_free(&r);
}

static void test_read_only_token_first(void **state) {
    (void)state;
    const char *tokens = sv_token_file(
        "tokens", "ops read,act,redrive " OPS_SECRET "\nro read " RO_SECRET "\n", 0600);
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix(), "--token-file", tokens, "--read-only"));
    const struct {
        const char *method, *path, *body;
    } actions[] = {
        {"POST", "/api/queues/ro/pause", NULL},
        {"POST", "/api/queues/ro/jobs/j1/retry", NULL},
        {"DELETE", "/api/queues/ro/jobs/j1", NULL},
        {"POST", "/api/dead-letters/redrive", "{\"dryRun\":true}"},
        {"POST", "/api/queues/ro/retry-all", "{}"},
    };
    for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++) {
        /* no token, a wrong one, a malformed header: 401 */
        expect_401(&s, actions[i].method, actions[i].path, NULL, actions[i].body);
        expect_401(&s, actions[i].method, actions[i].path,
                   AUTH("wrong-0123456789abcdef0123456789abcdef"), actions[i].body);
        expect_401(&s, actions[i].method, actions[i].path, "Authorization: Basic eDp5",
                   actions[i].body);
        /* a valid token, with the scope or without: the read-only 403 */
        sv_expect_error(&s, actions[i].method, actions[i].path, AUTH(OPS_SECRET), actions[i].body,
                        403, "the server is read-only (ferry serve --read-only)");
        sv_expect_error(&s, actions[i].method, actions[i].path, AUTH(RO_SECRET), actions[i].body,
                        403, "read-only");
    }
    /* reads unchanged */
    sv_resp r = sv_call(&s, "GET", "/api/queues", NULL, NULL);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    sv_stop(&s);
}

static void test_read_only_without_tokens(void **state) {
    (void)state;
    /* no token file: no token can be valid, and the read-only refusal is what there is */
    sv_server s;
    sv_start(&s, SV_FLAGS("--prefix", th_prefix(), "--read-only"));
    sv_expect_error(&s, "POST", "/api/queues/ro/pause", NULL, NULL, 403, "read-only");
    sv_stop(&s);
}

static void expect_refused_token_file(const char *name, const char *text) {
    const char *f = sv_token_file(name, text, 0600);
    cli_run r;
    CLI(r, "serve", "--listen", "127.0.0.1:0", "--redis", cli_url(), "--token-file", f);
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, f) || !strstr(r.err, "holds no token"))
        fail_msg("want the file and \"holds no token\" in: %s", r.err);
    if (text[0] && strstr(r.err, "just a comment")) fail_msg("the content is shown: %s", r.err);
    cli_run_free(&r);
}

static void test_empty_token_file(void **state) {
    (void)state;
    expect_refused_token_file("empty-tokens", "");
    expect_refused_token_file("comment-tokens", "# just a comment\n\n   \n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_only_token_first),
        cmocka_unit_test(test_read_only_without_tokens),
        cmocka_unit_test(test_empty_token_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
