/* test_api_errors.c - what shop-api answers when things are wrong, and that it then writes
 * nothing: bad requests (malformed JSON, wrong types, each invalid field named, bodies over
 * 64 KiB, unknown routes, wrong methods, bad ids) get a 4xx JSON answer with no gateway call
 * and no row; a gateway that fails (5xx, 429, slow past the timeout, dropped connection, not
 * running, a wrong URL) gives 502 and no row; a gateway refusal gives 402 and no row; a
 * database that disappears gives 503 {"error":"database unavailable"} (no SQL, no name), the
 * fresh authorization voided at the gateway, /healthz 503, and still a clean exit. */
#include "test_api.h"

#define CUSTOMER "6f9619ff-8b86-d011-b42d-00cf4fc964ff"
#define CUST "\"customerId\":\"" CUSTOMER "\""
#define OK_ITEM "{\"sku\":\"A\",\"qty\":1,\"unitPrice\":100}"
#define WITH_ITEMS(items) "{" CUST ",\"items\":[" items "]}"
#define WITH_ITEM(fields) WITH_ITEMS("{" fields "}")

typedef struct bad_case {
    const char *method, *path, *body;
    int status;
    const char *field; /* NULL: the answer has no "field" */
    const char *says;  /* a piece of the error text */
    const char *allow; /* the Allow header of a 405 */
} bad_case;

#define ID "/orders/0190b6a2-7c00-7abc-8def-0123456789ab"

static const bad_case bad_bodies[] = {
    {"POST", "/orders", "", 400, NULL, "empty", NULL},
    {"POST", "/orders", " \r\n\t", 400, NULL, "empty", NULL},
    {"POST", "/orders", "{", 400, NULL, "not valid JSON", NULL},
    {"POST", "/orders", "customerId=1&items=2", 400, NULL, "not valid JSON", NULL},
    {"POST", "/orders", "[]", 400, NULL, "JSON object", NULL},
    {"POST", "/orders", "null", 400, NULL, "JSON object", NULL},
    {"POST", "/orders", "\"order\"", 400, NULL, "JSON object", NULL},
    {"POST", "/orders", WITH_ITEMS(OK_ITEM) " {}", 400, NULL, "not valid JSON", NULL},
    {"POST", "/orders", "{" CUST "," CUST ",\"items\":[" OK_ITEM "]}", 400, NULL, "duplicate",
     NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"qty\":2,\"unitPrice\":1"), 400, NULL,
     "duplicate", NULL},
    {"POST", "/orders", "{\"items\":[" OK_ITEM "]}", 400, "customerId", "required", NULL},
    {"POST", "/orders", "{\"customerId\":5,\"items\":[" OK_ITEM "]}", 400, "customerId", "string",
     NULL},
    {"POST", "/orders", "{\"customerId\":\"abc\",\"items\":[" OK_ITEM "]}", 400, "customerId",
     "UUID", NULL},
    {"POST", "/orders",
     "{\"customerId\":\"6f9619ff8b86d011b42d00cf4fc964ff\",\"items\":[" OK_ITEM "]}", 400,
     "customerId", "UUID", NULL},
    {"POST", "/orders", "{" CUST ",\"items\":[" OK_ITEM "],\"coupon\":\"FREE\"}", 400, "coupon",
     "unknown", NULL},
    {"POST", "/orders", "{" CUST "}", 400, "items", "required", NULL},
    {"POST", "/orders", "{" CUST ",\"items\":{}}", 400, "items", "array", NULL},
    {"POST", "/orders", "{" CUST ",\"items\":[]}", 400, "items", "at least one", NULL},
    {"POST", "/orders", WITH_ITEMS("\"x\""), 400, "items[0]", "object", NULL},
    {"POST", "/orders", WITH_ITEMS(OK_ITEM ",{\"qty\":1,\"unitPrice\":1}"), 400, "items[1].sku",
     "required", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"unitPrice\":1"), 400, "items[0].qty", "required",
     NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1"), 400, "items[0].unitPrice", "required",
     NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"unitPrice\":1,\"price\":1"), 400,
     "items[0].price", "unknown", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"\",\"qty\":1,\"unitPrice\":1"), 400, "items[0].sku",
     "empty", NULL},
    {"POST", "/orders",
     WITH_ITEM("\"sku\":\"0123456789012345678901234567890123456789012345678901234567890123X\","
               "\"qty\":1,\"unitPrice\":1"),
     400, "items[0].sku", "at most 64", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"caf\\u00e9\",\"qty\":1,\"unitPrice\":1"), 400,
     "items[0].sku", "printable", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"a\\nb\",\"qty\":1,\"unitPrice\":1"), 400,
     "items[0].sku", "printable", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":5,\"qty\":1,\"unitPrice\":1"), 400, "items[0].sku",
     "string", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":null,\"qty\":1,\"unitPrice\":1"), 400, "items[0].sku",
     "string", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":0,\"unitPrice\":1"), 400, "items[0].qty",
     "from 1 to 1000", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1001,\"unitPrice\":1"), 400,
     "items[0].qty", "from 1 to 1000", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":-1,\"unitPrice\":1"), 400, "items[0].qty",
     "from 1 to 1000", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1.5,\"unitPrice\":1"), 400, "items[0].qty",
     "fraction", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":2.0,\"unitPrice\":1"), 400, "items[0].qty",
     "fraction", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1e2,\"unitPrice\":1"), 400, "items[0].qty",
     "exponent", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":\"2\",\"unitPrice\":1"), 400,
     "items[0].qty", "string", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":true,\"unitPrice\":1"), 400,
     "items[0].qty", "boolean", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":null,\"unitPrice\":1"), 400,
     "items[0].qty", "null", NULL},
    {"POST", "/orders",
     WITH_ITEMS(OK_ITEM "," OK_ITEM ",{\"sku\":\"A\",\"qty\":1,\"unitPrice\":-1}"), 400,
     "items[2].unitPrice", "from 0 to 1000000000000", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"unitPrice\":1000000000001"), 400,
     "items[0].unitPrice", "from 0 to 1000000000000", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"unitPrice\":100.0"), 400,
     "items[0].unitPrice", "fraction", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"unitPrice\":\"100\""), 400,
     "items[0].unitPrice", "string", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\",\"qty\":1,\"unitPrice\":99999999999999999999999"),
     400, NULL, "not valid JSON", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\\u0000\",\"qty\":1,\"unitPrice\":1"), 400, NULL,
     "not valid JSON", NULL},
    {"POST", "/orders", WITH_ITEM("\"sku\":\"A\xff\",\"qty\":1,\"unitPrice\":1"), 400, NULL,
     "not valid JSON", NULL},
    /* routes */
    {"GET", "/nope", NULL, 404, NULL, "no such route", NULL},
    {"GET", "/", NULL, 404, NULL, "no such route", NULL},
    {"GET", "/orders/", NULL, 404, NULL, "no such route", NULL},
    {"GET", "/ordersX", NULL, 404, NULL, "no such route", NULL},
    {"POST", ID "/refund", "{}", 404, NULL, "no such route", NULL},
    {"POST", ID "/cancel/now", "{}", 404, NULL, "no such route", NULL},
    {"GET", "/orders", NULL, 405, NULL, "not allowed", "POST"},
    {"PUT", "/orders", WITH_ITEMS(OK_ITEM), 405, NULL, "not allowed", "POST"},
    {"DELETE", ID, NULL, 405, NULL, "not allowed", "GET"},
    {"POST", ID, "{}", 405, NULL, "not allowed", "GET"},
    {"GET", ID "/cancel", NULL, 405, NULL, "not allowed", "POST"},
    {"POST", "/healthz", "{}", 405, NULL, "not allowed", "GET"},
    {"GET", "/orders/not-a-uuid", NULL, 400, "id", "UUID", NULL},
    {"POST", "/orders/not-a-uuid/cancel", NULL, 400, "id", "UUID", NULL},
    {"GET",
     "/orders/0190b6a2-7c00-7abc-8def-0123456789abcdef0123456789abcdef0123456789abcdef"
     "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
     NULL, 400, "id", "UUID", NULL},
    {"GET", ID, NULL, 404, NULL, "order not found", NULL},
    {"POST", ID "/cancel", NULL, 404, NULL, "order not found", NULL},
};

/* Check one 4xx answer: JSON {"error": text containing says, "field"?: field}. */
static void expect_error(const at_res *r, const char *what, int status, const char *field,
                         const char *says) {
    if (r->status != status)
        fail_msg("%s: status %ld, want %d: %s", what, r->status, status, r->body);
    if (!json_is_object(r->json) || !strstr(at_str(r, "error"), says))
        fail_msg("%s: body %s, want an error saying '%s'", what, r->body, says);
    json_t *f = json_object_get(r->json, "field");
    if (field ? !json_is_string(f) || strcmp(json_string_value(f), field) : f != NULL)
        fail_msg("%s: body %s, want field %s", what, r->body, field ? field : "(none)");
}

/* A body of n bytes holding a valid order followed by blanks. */
static char *padded_order(size_t n) {
    char *b = malloc(n + 1);
    const char *o = WITH_ITEMS(OK_ITEM);
    memset(b, ' ', n);
    memcpy(b, o, strlen(o));
    b[n] = '\0';
    return b;
}

static void test_bad_requests_change_nothing(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s);
    size_t auths = at_ledger_count("gateway", "authorizations");
    char url[512], what[600];
    for (size_t i = 0; i < sizeof bad_bodies / sizeof bad_bodies[0]; i++) {
        const bad_case *c = &bad_bodies[i];
        at_res r;
        at_http(c->method, at_url(&api, c->path, url, sizeof url), c->body, NULL, &r);
        snprintf(what, sizeof what, "case %zu: %s %s %.200s", i, c->method, c->path,
                 c->body ? c->body : "");
        expect_error(&r, what, c->status, c->field, c->says);
        if (c->allow) {
            char allow[64];
            if (!at_header(&r, "Allow", allow, sizeof allow) || strcmp(allow, c->allow))
                fail_msg("%s: Allow %s, want %s", what, allow, c->allow);
        }
        at_res_free(&r);
    }
    /* generated: too many items, a total over 10^15 */
    char *big = malloc(16384);
    strcpy(big, "{" CUST ",\"items\":[");
    for (int i = 0; i < 101; i++)
        strcat(big, i ? "," OK_ITEM : OK_ITEM);
    strcat(big, "]}");
    at_res r;
    at_http("POST", at_url(&api, "/orders", url, sizeof url), big, NULL, &r);
    expect_error(&r, "101 items", 400, "items", "at most 100");
    at_res_free(&r);
    strcpy(big, "{" CUST ",\"items\":[");
    for (int i = 0; i < 2; i++)
        strcat(big, i ? ",{\"sku\":\"X\",\"qty\":1000,\"unitPrice\":1000000000000}"
                      : "{\"sku\":\"X\",\"qty\":1,\"unitPrice\":1}");
    strcat(big, "]}");
    at_http("POST", url, big, NULL, &r);
    expect_error(&r, "total over 10^15", 400, "items", "total");
    at_res_free(&r);
    free(big);
    /* bodies over 64 KiB: 413, with a Content-Length and chunked */
    char *huge = padded_order(70000);
    at_http("POST", url, huge, NULL, &r);
    expect_error(&r, "70000-byte body", 413, NULL, "body");
    at_res_free(&r);
    at_http("POST", url, huge, CLI_ARGV("Transfer-Encoding: chunked"), &r);
    expect_error(&r, "70000-byte chunked body", 413, NULL, "body");
    at_res_free(&r);
    free(huge);

    AT_EXPECT_COUNTS(s, 0, 0, 0);
    assert_int_equal(at_ledger_count("gateway", "authorizations"), auths);

    /* at the limits: a 60 KiB body, a total of exactly 10^15 are orders */
    char *fits = padded_order(60000);
    at_http("POST", url, fits, NULL, &r);
    AT_EXPECT(r, 201);
    at_res_free(&r);
    free(fits);
    at_http("POST", url, WITH_ITEM("\"sku\":\"X\",\"qty\":1000,\"unitPrice\":1000000000000"), NULL,
            &r);
    AT_EXPECT(r, 201);
    assert_int_equal(json_integer_value(json_object_get(r.json, "total")), 1000000000000000LL);
    at_res_free(&r);
    AT_EXPECT_COUNTS(s, 2, 2, 2);
    at_api_stop(&api);
}

/* ---- the gateway failing ---------------------------------------------------------------- */

typedef struct ledger_grew {
    size_t before;
} ledger_grew;

static int authorizations_grew(void *arg) {
    return at_ledger_count("gateway", "authorizations") > ((ledger_grew *)arg)->before;
}

/* The reference of the gateway's newest authorization (an order id shop-api made). */
static void newest_reference(char out[64]) {
    json_t *l = at_ledger();
    json_t *a = json_object_get(json_object_get(l, "gateway"), "authorizations");
    json_t *last = json_array_get(a, json_array_size(a) - 1);
    snprintf(out, 64, "%s", json_string_value(json_object_get(last, "reference")));
    json_decref(l);
}

static void post_order(const sp_proc *api, long long price, at_res *r) {
    char url[256], body[512];
    at_http("POST", at_url(api, "/orders", url, sizeof url),
            at_order(body, sizeof body, CUSTOMER, "G", 1, price), NULL, r);
}

static void test_gateway_failures_write_nothing(void **state) {
    (void)state;
    const char *s = at_schema();
    sp_proc api;
    at_api_start(&api, s); /* provider timeout 500 ms */
    static const struct {
        const char *faults;
        int authorized; /* the gateway did authorize (then the answer was lost) */
    } faults[] = {
        {"{\"gateway.authorize\":{\"error_next\":1}}", 0},
        {"{\"gateway.authorize\":{\"throttle_next\":1,\"retry_after\":\"seconds\"}}", 0},
        {"{\"gateway.authorize\":{\"slow_next\":1,\"slow_ms\":1500}}", 1},
        {"{\"gateway.authorize\":{\"drop_next\":1}}", 1},
    };
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        ledger_grew g = {at_ledger_count("gateway", "authorizations")};
        at_faults(faults[i].faults);
        at_res r;
        post_order(&api, 120000, &r);
        expect_error(&r, faults[i].faults, 502, NULL, "payment gateway unavailable");
        at_res_free(&r);
        AT_EXPECT_COUNTS(s, 0, 0, 0);
        if (faults[i].authorized) {
            /* it happened at the provider: never captured, it expires there */
            if (!th_wait_until(authorizations_grew, &g, 10000))
                fail_msg("%s: the gateway never authorized", faults[i].faults);
            char ref[64];
            newest_reference(ref);
            assert_int_equal(ob_ll(at_db, "SELECT count(*) FROM %s.orders WHERE id = '%s'", s, ref),
                             0);
        } else {
            assert_int_equal(at_ledger_count("gateway", "authorizations"), g.before);
        }
        AT_EXPECT_COUNTS(s, 0, 0, 0);
    }
    /* a refusal (the fake refuses an amount of 0): 402 */
    at_res r;
    size_t before = at_ledger_count("gateway", "authorizations");
    post_order(&api, 0, &r);
    expect_error(&r, "amount 0", 402, NULL, "payment refused");
    at_res_free(&r);
    assert_int_equal(at_ledger_count("gateway", "authorizations"), before);
    /* the faults used up: the next order goes through */
    post_order(&api, 120000, &r);
    AT_EXPECT(r, 201);
    at_res_free(&r);
    AT_EXPECT_COUNTS(s, 1, 1, 1);
    at_api_stop(&api);

    /* no gateway listening, and a URL where no gateway is (404): 502 too */
    int port;
    int fd = th_listen_local(AF_INET, 1, &port);
    assert_true(fd >= 0);
    close(fd); /* a port just freed: nobody listens */
    char down[128], wrong[160];
    snprintf(down, sizeof down, "http://127.0.0.1:%d/gateway", port);
    snprintf(wrong, sizeof wrong, "%s/nowhere", at_gateway);
    const char *urls[] = {down, wrong};
    for (int i = 0; i < 2; i++) {
        at_api_start_args(&api, s, CLI_ARGV("--gateway-url", urls[i]));
        post_order(&api, 120000, &r);
        expect_error(&r, urls[i], 502, NULL, "payment gateway unavailable");
        at_res_free(&r);
        at_api_stop(&api);
    }
    AT_EXPECT_COUNTS(s, 1, 1, 1);
}

/* ---- the database going away ------------------------------------------------------------ */

static int voided(void *arg) {
    const char *ref = arg;
    json_t *l = at_ledger(), *v;
    size_t i;
    int found = 0;
    json_array_foreach(json_object_get(json_object_get(l, "gateway"), "voids"), i, v) {
        const char *r = json_string_value(json_object_get(v, "reference"));
        if (r && !strcmp(r, ref)) found = 1;
    }
    json_decref(l);
    return found;
}

static void test_database_gone(void **state) {
    (void)state;
    char dburl[600];
    ob_scratch_create(at_db, "shopapi", dburl, sizeof dburl);
    cli_run m;
    CLI(m, "migrate", "--database", dburl);
    CLI_EXPECT(m, 0);
    cli_run_free(&m);
    sp_proc api;
    at_api_start_args(&api, "public", CLI_ARGV("--database", dburl, "--pool", "2"));
    at_res r;
    post_order(&api, 5000, &r);
    AT_EXPECT(r, 201);
    char id[37], url[256], path[64];
    snprintf(id, sizeof id, "%s", at_str(&r, "id"));
    at_res_free(&r);

    ob_scratch_drop(at_db); /* DROP DATABASE ... WITH (FORCE): sessions killed */
    size_t before = at_ledger_count("gateway", "authorizations");
    post_order(&api, 7000, &r);
    AT_EXPECT(r, 503);
    assert_string_equal(r.body, "{\"error\":\"database unavailable\"}");
    at_res_free(&r);
    /* it had authorized: the authorization is voided, as nobody will capture it */
    assert_int_equal(at_ledger_count("gateway", "authorizations"), before + 1);
    char ref[64];
    newest_reference(ref);
    if (!th_wait_until(voided, ref, 5000)) fail_msg("authorization of %s not voided", ref);

    snprintf(path, sizeof path, "/orders/%s", id);
    at_http("GET", at_url(&api, path, url, sizeof url), NULL, NULL, &r);
    AT_EXPECT(r, 503);
    assert_string_equal(r.body, "{\"error\":\"database unavailable\"}");
    at_res_free(&r);
    snprintf(path, sizeof path, "/orders/%s/cancel", id);
    at_http("POST", at_url(&api, path, url, sizeof url), NULL, NULL, &r);
    AT_EXPECT(r, 503);
    at_res_free(&r);
    at_http("GET", at_url(&api, "/healthz", url, sizeof url), NULL, NULL, &r);
    AT_EXPECT(r, 503);
    assert_false(json_is_true(json_object_get(r.json, "ok")));
    at_res_free(&r);
    at_api_stop(&api);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_bad_requests_change_nothing, at_setup),
        cmocka_unit_test_setup(test_gateway_failures_write_nothing, at_setup),
        cmocka_unit_test_setup(test_database_gone, at_setup),
    };
    return th_exit(cmocka_run_group_tests(tests, at_group_setup, at_group_teardown));
}
