/* test_serve_headers.c - an answer of `ferry serve` (ferry_admin_start, in this process)
 * and of the /metrics listener (ferry_metrics_listen) is never sent without its headers:
 * MHD_add_response_header is interposed here (this executable's definition wins over
 * libmicrohttpd's for the statically linked library) and made to fail for one header
 * name. Failing once: the answer is a 500 that still carries every security header;
 * failing always: the connection is closed without an answer. Never a 200 missing
 * X-Frame-Options, nosniff or the CSP. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "ferry/admin.h"
#include "ferry/metrics.h"
#include "support/sv.h"

static const char *_Atomic fail_name; /* the header to refuse, or NULL */
static atomic_int fail_left;          /* refusals left (-1: every time) */
static atomic_int failed;             /* refusals made */

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                        const char *content) {
    typedef enum MHD_Result (*add_fn)(struct MHD_Response *, const char *, const char *);
    static add_fn real;
    if (!real) {
        void *p = dlsym(RTLD_NEXT, "MHD_add_response_header");
        if (!p) abort();
        memcpy(&real, &p, sizeof real);
    }
    const char *f = atomic_load(&fail_name);
    if (f && header && strcasecmp(header, f) == 0) {
        int left = atomic_load(&fail_left);
        if (left != 0) {
            if (left > 0) atomic_fetch_sub(&fail_left, 1);
            atomic_fetch_add(&failed, 1);
            return MHD_NO;
        }
    }
    return real(response, header, content);
}

static void fail_header(const char *name, int times) {
    atomic_store(&failed, 0);
    atomic_store(&fail_left, times);
    atomic_store(&fail_name, name);
}

static void expect_header(const sv_resp *r, const char *name, const char *want) {
    char *v = sv_header(r, name);
    if (!v || strcmp(v, want) != 0) fail_msg("%s: %s, want %s\n%s", name, v, want, r->headers);
    free(v);
}

static void expect_security_headers(const sv_resp *r) {
    expect_header(r, "X-Content-Type-Options", "nosniff");
    expect_header(r, "X-Frame-Options", "DENY");
    expect_header(r, "Referrer-Policy", "no-referrer");
    expect_header(r, "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
    expect_header(r, "Cache-Control", "no-store");
}

static void test_admin_answer(void **state) {
    (void)state;
    ferry_admin_options o;
    ferry_admin_options_init(&o);
    o.listen = "127.0.0.1:0";
    ferry_admin_server *srv = NULL;
    ferry_error e = {0};
    if (ferry_admin_start(&o, &srv, &e)) fail_msg("start: %s", e.message);
    sv_server s = {0};
    s.port = ferry_admin_port(srv);
    snprintf(s.base, sizeof s.base, "http://127.0.0.1:%d", s.port);
    sv_resp r;
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    expect_security_headers(&r);
    sv_resp_free(&r);

    const char *names[] = {"X-Frame-Options", "X-Content-Type-Options", "Content-Security-Policy",
                           "Content-Type", "X-Request-Id"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        /* once: the fallback 500 carries them all */
        fail_header(names[i], 1);
        sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
        if (r.status != 500)
            fail_msg("%s refused once: HTTP %ld, want 500\n%s", names[i], r.status, r.headers);
        assert_int_equal(atomic_load(&failed), 1);
        expect_security_headers(&r);
        expect_header(&r, "Content-Type", "application/json; charset=utf-8");
        assert_non_null(strstr(r.body, "the answer could not be built"));
        sv_resp_free(&r);
        /* always: no answer at all */
        fail_header(names[i], -1);
        sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
        if (r.status != 0) fail_msg("%s refused always: HTTP %ld, want none", names[i], r.status);
        sv_resp_free(&r);
        fail_header(NULL, 0);
    }
    /* a dashboard file (its own headers) and an error answer alike */
    fail_header("X-Frame-Options", 1);
    sv_request(&s, "GET", "/", NULL, NULL, &r);
    assert_int_equal(r.status, 500);
    expect_security_headers(&r);
    sv_resp_free(&r);
    fail_header("WWW-Authenticate", 1);
    sv_request(&s, "GET", "/api/whoami", NULL, NULL, &r);
    assert_int_equal(r.status, 500);
    expect_security_headers(&r);
    sv_resp_free(&r);
    fail_header(NULL, 0);
    sv_request(&s, "GET", "/healthz", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    sv_resp_free(&r);
    ferry_admin_stop(srv);
}

static void test_metrics_listener(void **state) {
    (void)state;
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    if (ferry_metrics_create(NULL, &m, &e)) fail_msg("metrics: %s", e.message);
    ferry_metrics_listener *l = NULL;
    if (ferry_metrics_listen(m, "127.0.0.1:0", &l, &e)) fail_msg("listen: %s", e.message);
    sv_server s = {0};
    s.port = ferry_metrics_listener_port(l);
    snprintf(s.base, sizeof s.base, "http://127.0.0.1:%d", s.port);
    sv_resp r;
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    SV_EXPECT(r, 200);
    char *type = sv_header(&r, "Content-Type");
    assert_non_null(type);
    assert_non_null(strstr(type, "text/plain"));
    free(type);
    sv_resp_free(&r);
    fail_header("Content-Type", 1);
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 500);
    expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
    sv_resp_free(&r);
    fail_header("Allow", 1);
    sv_request(&s, "POST", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 500);
    sv_resp_free(&r);
    fail_header("Content-Type", -1);
    sv_request(&s, "GET", "/metrics", NULL, NULL, &r);
    assert_int_equal(r.status, 0);
    sv_resp_free(&r);
    fail_header(NULL, 0);
    ferry_metrics_listener_stop(l);
    ferry_metrics_destroy(m);
}

int main(void) {
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admin_answer),
        cmocka_unit_test(test_metrics_listener),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
