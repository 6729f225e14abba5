/* test_http_edges.c - what the examples' HTTP layer (examples/common) promises at its edges,
 * through the real programs: a port already taken is refused (never shared), HEAD is GET
 * without a body, an encoded NUL or '/' in a path matches no route, a provider URL's password
 * never reaches a log line, and a database that stops answering costs a request a bounded
 * wait (503), not a hang, and does not keep shop-api from stopping. */
#include "test_api.h"

#include <signal.h>

/* A server on a port already taken exits 1 naming the problem (the port is never shared, so
 * requests cannot go to the wrong process); the first one keeps every request. */
static void test_taken_port_is_refused(void **state) {
    (void)state;
    const char *schema = at_schema();
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", at_fakes.port);
    sp_proc second;
    at_start(&second, "shop-fakes", CLI_ARGV("--listen", listen), NULL, SP_NONE);
    int st2 = sp_wait_exit(&second, 10000);
    char *err2 = th_slurp(second.err_path);
    if (st2 != 1 || !strstr(err2, "cannot listen"))
        fail_msg("second shop-fakes on a taken port: status %d, stderr: %s", st2, err2);
    free(err2);
    sp_proc api;
    at_start(&api, "shop-api",
             CLI_ARGV("--listen", listen, "--database", th_env_require("DATABASE_URL"), "--schema",
                      schema, "--gateway-url", at_gateway),
             NULL, SP_NONE);
    int st = sp_wait_exit(&api, 15000);
    char *err = th_slurp(api.err_path);
    if (st != 1 || !strstr(err, "cannot listen")) fail_msg("status %d, stderr: %s", st, err);
    free(err);
    /* the fakes still answer every request */
    char url[256];
    for (int i = 0; i < 20; i++) {
        at_res r;
        at_http("GET", sp_url(&at_fakes, "/ledger", url, sizeof url), NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        at_res_free(&r);
    }
}

/* HEAD answers as GET, without a body; %00 and %2F stay encoded and match no route. */
static void test_head_and_encoded_paths(void **state) {
    (void)state;
    const char *schema = at_schema();
    sp_proc api;
    at_api_start(&api, schema);
    char url[512], body[256];
    at_res r;
    /* the GET handler answered: the same status, and the length of GET's body announced */
    at_http("GET", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    size_t get_len = r.len;
    at_res_free(&r);
    at_http("HEAD", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    char cl[32];
    assert_non_null(at_header(&r, "Content-Length", cl, sizeof cl));
    assert_int_equal(strtoul(cl, NULL, 10), get_len);
    assert_true(get_len > 0);
    at_res_free(&r);
    at_http("GET", at_url(&api, "/healthz%00", url, sizeof url), NULL, NULL, &r);
    assert_int_equal(r.status, 404);
    at_res_free(&r);
    at_http("POST", at_url(&api, "/orders%00", url, sizeof url),
            at_order(body, sizeof body, "3f1c2a9e-7b1d-4c8e-9a2b-0d6e5f4a3b21", "A", 1, 1000), NULL,
            &r);
    assert_int_equal(r.status, 404);
    at_res_free(&r);
    AT_EXPECT_COUNTS(schema, 0, 0, 0);
    at_http("POST", at_url(&api, "/orders", url, sizeof url),
            at_order(body, sizeof body, "3f1c2a9e-7b1d-4c8e-9a2b-0d6e5f4a3b21", "A", 1, 1000), NULL,
            &r);
    assert_int_equal(r.status, 201);
    char path[128];
    snprintf(path, sizeof path, "/orders/%s%%2fcancel", at_str(&r, "id"));
    at_res_free(&r);
    at_http("POST", at_url(&api, path, url, sizeof url), "{}", NULL, &r);
    assert_true(r.status == 400 || r.status == 404 || r.status == 405); /* not the cancel route */
    at_res_free(&r);
    AT_EXPECT_COUNTS(schema, 1, 1, 1); /* no order.cancelled */
    at_api_stop(&api);
}

/* The gateway URL's user and password never reach shop-api's log. */
static void test_provider_url_password_not_logged(void **state) {
    (void)state;
    const char *schema = at_schema();
    char gw[256];
    snprintf(gw, sizeof gw, "http://shop:S3cretPW@127.0.0.1:%d/gateway?key=K3yK3y#S3cretPW",
             at_fakes.port);
    sp_proc api;
    at_api_start_args(&api, schema, CLI_ARGV("--gateway-url", gw));
    at_api_stop(&api);
    char *err = th_slurp(api.err_path), *out = th_slurp(api.out_path);
    if (strstr(err, "S3cretPW") || strstr(err, "K3yK3y") || strstr(out, "S3cretPW"))
        fail_msg("a provider URL secret in shop-api's output:\n%s", err);
    assert_non_null(strstr(err, "http://***@127.0.0.1"));
    free(err);
    free(out);
}

/* ---- a database that stops answering ------------------------------------------------- */

/* SIGSTOP / SIGCONT the fixture's PostgreSQL (the postmaster and its children). */
static void pg_signal(int sig) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "pm=$(head -1 '%s/postmaster.pid') && kill -%d $pm $(pgrep -P $pm) 2>/dev/null",
             th_env_require("PG_DATA"), sig);
    if (system(cmd) != 0) fail_msg("cannot signal PostgreSQL: %s", cmd);
}

static void test_database_stopped_is_bounded(void **state) {
    (void)state;
    const char *schema = at_schema();
    sp_proc api;
    /* a short statement_timeout would not help: a stopped server enforces nothing */
    at_api_start(&api, schema);
    char url[512];
    pg_signal(SIGSTOP);
    long long t0 = th_mono_ms();
    at_res r;
    at_http("GET", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    long long took = th_mono_ms() - t0;
    int status = (int)r.status;
    at_res_free(&r);
    /* SIGTERM while the database is still stopped: shop-api must not wait for it for ever */
    kill(api.pid, SIGTERM);
    int st = sp_wait_exit(&api, 45000);
    pg_signal(SIGCONT);
    if (status != 503)
        fail_msg("GET /healthz with the database stopped: %d after %lld ms", status, took);
    assert_true(took < 30000); /* a bound, not a speed: the client deadline is 5 s + 2 s */
    assert_true(st == 0 || st == 1);
    /* and it recovers: a new shop-api on the same schema answers */
    at_api_start(&api, schema);
    at_http("GET", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    at_res_free(&r);
    at_api_stop(&api);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_taken_port_is_refused, at_setup),
        cmocka_unit_test_setup(test_head_and_encoded_paths, at_setup),
        cmocka_unit_test_setup(test_provider_url_password_not_logged, at_setup),
        cmocka_unit_test_setup(test_database_stopped_is_bounded, at_setup),
    };
    return th_exit(cmocka_run_group_tests(tests, at_group_setup, at_group_teardown));
}
