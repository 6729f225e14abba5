/* test_serve_tls.c - `ferry serve --tls-cert/--tls-key` with a self-signed certificate made
 * by `openssl req` in the test: libcurl verifying it with that certificate as its CA gets
 * the answers over HTTPS; libcurl without that CA refuses the server; a plain-HTTP request
 * to the TLS port gets no HTTP answer; a key that does not match the certificate, a file
 * that is not PEM (exit 4, the file named) and one option without the other (exit 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/sv.h"

static char cert[256], key[256], other_key[256], other_cert[256];

static void make_cert(const char *c, const char *k) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 2 "
             "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost "
             ">/dev/null 2>&1",
             k, c);
    if (system(cmd) != 0) fail_msg("openssl req failed: %s", cmd);
}

static int setup(void **state) {
    (void)state;
    snprintf(cert, sizeof cert, "%s/cert.pem", th_tmpdir());
    snprintf(key, sizeof key, "%s/key.pem", th_tmpdir());
    snprintf(other_cert, sizeof other_cert, "%s/other-cert.pem", th_tmpdir());
    snprintf(other_key, sizeof other_key, "%s/other-key.pem", th_tmpdir());
    make_cert(cert, key);
    make_cert(other_cert, other_key);
    return 0;
}

static void test_https(void **state) {
    (void)state;
    sv_server s;
    sv_start_ca(&s, SV_FLAGS("--tls-cert", cert, "--tls-key", key), NULL, cert);
    assert_true(s.https);
    sv_resp r;
    sv_request(&s, "GET", "/readyz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    assert_string_equal(sv_json_str(&r, "status"), "ready");
    sv_resp_free(&r);

    /* a client that does not trust the certificate refuses the server */
    sv_server untrusting = s;
    snprintf(untrusting.ca_file, sizeof untrusting.ca_file, "%s", other_cert);
    sv_request(&untrusting, "GET", "/healthz", NULL, NULL, &r);
    assert_int_equal(r.status, 0);
    assert_true(r.curl_code == CURLE_PEER_FAILED_VERIFICATION || r.curl_code == CURLE_SSL_CACERT ||
                r.curl_code == CURLE_SSL_CONNECT_ERROR);
    sv_resp_free(&r);

    /* plain HTTP to the TLS port: no HTTP answer */
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    int status = -1;
    char *ans = sv_raw(&s, req, sizeof req - 1, &status);
    if (status == 200) fail_msg("plain HTTP was answered on the TLS port: %s", ans);
    free(ans);
    sv_stop(&s);
    char *log = sv_log(&s);
    assert_non_null(strstr(log, "listening on https://127.0.0.1:"));
    free(log);
}

static void test_bad_tls_files(void **state) {
    (void)state;
    cli_run r;
    CLI(r, "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", other_key);
    CLI_EXPECT(r, 4);
    assert_non_null(strstr(r.err, "does not match"));
    assert_non_null(strstr(r.err, "other-key.pem"));
    cli_run_free(&r);

    char notpem[256];
    snprintf(notpem, sizeof notpem, "%s/notpem.txt", th_tmpdir());
    th_write_file(notpem, "hello\n", 0600);
    CLI(r, "serve", "--listen", "127.0.0.1:0", "--tls-cert", notpem, "--tls-key", key);
    CLI_EXPECT(r, 4);
    assert_non_null(strstr(r.err, "notpem.txt"));
    assert_non_null(strstr(r.err, "not a PEM certificate"));
    cli_run_free(&r);

    CLI(r, "serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", "/nonexistent/k");
    CLI_EXPECT(r, 4);
    assert_non_null(strstr(r.err, "/nonexistent/k"));
    cli_run_free(&r);

    CLI(r, "serve", "--tls-cert", cert);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "go together"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_https),
        cmocka_unit_test(test_bad_tls_files),
    };
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
