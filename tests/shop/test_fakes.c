/* test_fakes.c - shop-fakes, the shop's fake payment gateway, carrier and mailer, as a real
 * process over real HTTP (examples/shop/PROTOCOL.md): idempotency keys and their replays,
 * the carrier's lookups by reference, the ledger of what really happened, every kind of
 * injected fault (503, slow past the client's timeout, 429 with Retry-After as seconds and
 * as an HTTP-date, "done, then the connection dropped"), fault flags at start, bad flags,
 * bad requests, and SIGTERM. Each test starts its own shop-fakes (a fresh ledger). */
#include <jansson.h>
#include <string.h>
#include <sys/wait.h>

#include "ex_http.h"
#include "ferry/http_classify.h"
#include "sp.h"

static sp_proc fk;

/* ---- helpers ------------------------------------------------------------------------- */

typedef struct res {
    int status, transport;
    char retry_after[128];
    json_t *json; /* the body parsed, NULL when it is not JSON */
} res;

static res call_t(const char *method, const char *path, const char *body, const char *key,
                  int timeout_ms) {
    char url[256];
    ex_http_request rq = {.method = method,
                          .url = sp_url(&fk, path, url, sizeof url),
                          .body = body,
                          .idempotency_key = key,
                          .timeout_ms = timeout_ms};
    ex_http_response rs;
    ex_http_do(&rq, &rs);
    res r = {.status = rs.status, .transport = rs.transport};
    snprintf(r.retry_after, sizeof r.retry_after, "%s", rs.retry_after);
    if (rs.transport == EX_HTTP_OK) r.json = json_loadb(rs.body, rs.body_len, 0, NULL);
    ex_http_response_free(&rs);
    return r;
}

/* A call that must get a response with status `want`; returns the body (caller decrefs). */
static json_t *call(const char *method, const char *path, const char *body, const char *key,
                    int want) {
    res r = call_t(method, path, body, key, 5000);
    if (r.transport != EX_HTTP_OK)
        fail_msg("%s %s: no response (%s)", method, path, ex_http_transport_name(r.transport));
    if (r.status != want) {
        char *t = r.json ? json_dumps(r.json, 0) : NULL;
        print_message("%s %s -> %d %s (wanted %d)\n", method, path, r.status, t ? t : "", want);
        free(t);
        fail_msg("unexpected status");
    }
    if (!r.json) fail_msg("%s %s: the body is not JSON", method, path);
    return r.json;
}

static const char *str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    if (!s) fail_msg("no string \"%s\" in the answer", key);
    return s;
}

static json_t *ledger(void) {
    return call("GET", "/ledger", NULL, NULL, 200);
}

/* Size of ledger list section.name, or the integer section.name. */
static long long ledger_n(const char *section, const char *name) {
    json_t *l = ledger();
    json_t *v = json_object_get(json_object_get(l, section), name);
    long long n = json_is_array(v) ? (long long)json_array_size(v) : json_integer_value(v);
    assert_true(json_is_array(v) || json_is_integer(v));
    json_decref(l);
    return n;
}

typedef struct count_arg {
    const char *section, *name;
    long long want;
} count_arg;

static int count_is(void *p) {
    count_arg *a = p;
    return ledger_n(a->section, a->name) == a->want;
}

static char *authorize(long long amount, const char *ref, const char *key) {
    char body[256];
    snprintf(body, sizeof body, "{\"amount\": %lld, \"reference\": \"%s\"}", amount, ref);
    json_t *a = call("POST", "/gateway/authorizations", body, key, 201);
    assert_string_equal(str(a, "status"), "authorized");
    char *id = strdup(str(a, "authorizationId"));
    json_decref(a);
    assert_true(strncmp(id, "auth_", 5) == 0 && strlen(id) == 5 + 36);
    return id;
}

static const char *auth_path(const char *id, const char *what, char *buf, size_t cap) {
    snprintf(buf, cap, "/gateway/authorizations/%s%s%s", id, what ? "/" : "", what ? what : "");
    return buf;
}

static void post_faults(const char *json) {
    json_decref(call("POST", "/faults", json, NULL, 200));
}

/* 400 whose "field" is `field` (NULL: no field wanted). */
static void expect_400(const char *method, const char *path, const char *body, const char *key,
                       const char *field) {
    json_t *e = call(method, path, body, key, 400);
    assert_non_null(json_string_value(json_object_get(e, "error")));
    if (field) assert_string_equal(str(e, "field"), field);
    json_decref(e);
}

static int start_fakes(void **state) {
    (void)state;
    static const char *const args[] = {"--listen", "127.0.0.1:0", NULL};
    sp_start(&fk, "shop-fakes", args, NULL, SP_PORT);
    return 0;
}

static int stop_fakes(void **state) {
    (void)state;
    if (fk.pid > 0 && sp_stop(&fk, 10000) != 0) {
        sp_dump(&fk);
        return -1; /* SIGTERM must stop it with exit 0 */
    }
    return 0;
}

/* ---- gateway ------------------------------------------------------------------------- */

static void test_authorize_with_and_without_keys(void **state) {
    (void)state;
    char *a1 = authorize(1000, "o-1", NULL);
    char *a2 = authorize(1000, "o-1", NULL); /* no key: a second authorization */
    assert_string_not_equal(a1, a2);
    char *k = authorize(250000, "o-2", "auth-o-2");
    json_t *again = call("POST", "/gateway/authorizations",
                         "{\"amount\": 250000, \"reference\": \"o-2\"}", "auth-o-2", 200);
    assert_string_equal(str(again, "authorizationId"), k);
    assert_string_equal(str(again, "status"), "authorized");
    json_decref(again);
    /* the same key with another body: refused, nothing authorized */
    json_decref(call("POST", "/gateway/authorizations", "{\"amount\": 1, \"reference\": \"o-2\"}",
                     "auth-o-2", 422));
    json_t *l = ledger();
    json_t *auths = json_object_get(json_object_get(l, "gateway"), "authorizations");
    assert_int_equal(json_array_size(auths), 3);
    assert_string_equal(str(json_array_get(auths, 2), "authorizationId"), k);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(auths, 2), "amount")),
                     250000);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "gateway"), "replays")),
                     1);
    json_decref(l);
    char p[200];
    json_t *g = call("GET", auth_path(k, NULL, p, sizeof p), NULL, NULL, 200);
    assert_string_equal(str(g, "status"), "authorized");
    assert_string_equal(str(g, "reference"), "o-2");
    assert_null(json_object_get(g, "captureId"));
    json_decref(g);
    free(a1);
    free(a2);
    free(k);
}

static void test_capture_key_required_and_replayed(void **state) {
    (void)state;
    char *a = authorize(5000, "o-3", NULL);
    char p[200];
    auth_path(a, "capture", p, sizeof p);
    expect_400("POST", p, "{\"amount\": 5000}", NULL, "Idempotency-Key");
    assert_int_equal(ledger_n("gateway", "captures"), 0);
    json_t *c1 = call("POST", p, "{\"amount\": 5000}", "capture-o-3", 200);
    json_t *c2 = call("POST", p, "{\"amount\": 5000}", "capture-o-3", 200);
    assert_true(strncmp(str(c1, "captureId"), "cap_", 4) == 0);
    assert_string_equal(str(c1, "captureId"), str(c2, "captureId"));
    assert_string_equal(str(c2, "status"), "captured");
    json_t *l = ledger();
    json_t *gw = json_object_get(l, "gateway");
    json_t *caps = json_object_get(gw, "captures");
    assert_int_equal(json_array_size(caps), 1);
    json_t *c = json_array_get(caps, 0);
    assert_string_equal(str(c, "captureId"), str(c1, "captureId"));
    assert_string_equal(str(c, "authorizationId"), a);
    assert_string_equal(str(c, "reference"), "o-3");
    assert_string_equal(str(c, "idempotencyKey"), "capture-o-3");
    assert_int_equal(json_integer_value(json_object_get(gw, "replays")), 1);
    json_decref(l);
    /* the gateway's view: captured, with the capture id (what a retry asks first) */
    json_t *g = call("GET", auth_path(a, NULL, p, sizeof p), NULL, NULL, 200);
    assert_string_equal(str(g, "status"), "captured");
    assert_string_equal(str(g, "captureId"), str(c1, "captureId"));
    json_decref(g);
    /* another key on a captured authorization: 409; the key on another authorization: 422 */
    auth_path(a, "capture", p, sizeof p);
    json_decref(call("POST", p, "{\"amount\": 5000}", "another-key", 409));
    char *b = authorize(100, "o-4", NULL);
    char q[200];
    auth_path(b, "capture", q, sizeof q);
    json_decref(call("POST", q, "{}", "capture-o-3", 422));
    json_decref(call("POST", q, "{\"amount\": 101}", "capture-o-4", 422)); /* over the amount */
    json_decref(call("POST", q, "", "capture-o-4", 200)); /* no amount: the whole of it */
    assert_int_equal(ledger_n("gateway", "captures"), 2);
    json_decref(c1);
    json_decref(c2);
    free(a);
    free(b);
}

static void test_void_and_expire(void **state) {
    (void)state;
    char *a = authorize(700, "o-5", NULL);
    char p[200];
    json_t *v = call("POST", auth_path(a, "void", p, sizeof p), NULL, "void-o-5", 200);
    assert_string_equal(str(v, "status"), "voided");
    json_decref(v);
    json_decref(call("POST", p, NULL, "void-o-5", 200)); /* replay */
    json_decref(call("POST", p, NULL, NULL, 200));       /* again without a key: nothing more */
    json_t *l = ledger();
    json_t *gw = json_object_get(l, "gateway");
    assert_int_equal(json_array_size(json_object_get(gw, "voids")), 1);
    assert_string_equal(str(json_array_get(json_object_get(gw, "voids"), 0), "reference"), "o-5");
    assert_int_equal(json_integer_value(json_object_get(gw, "replays")), 1);
    json_decref(l);
    /* capture after void: 409 saying voided, no capture */
    json_t *e = call("POST", auth_path(a, "capture", p, sizeof p), "{}", "capture-o-5", 409);
    assert_string_equal(str(e, "status"), "voided");
    json_decref(e);
    assert_int_equal(ledger_n("gateway", "captures"), 0);
    /* the void key lives in its own space: the same text as a capture key is a new capture */
    char *b = authorize(800, "o-6", NULL);
    json_t *x = call("POST", auth_path(b, "expire", p, sizeof p), NULL, NULL, 200);
    assert_string_equal(str(x, "status"), "expired");
    json_decref(x);
    json_t *g = call("GET", auth_path(b, NULL, p, sizeof p), NULL, NULL, 200);
    assert_string_equal(str(g, "status"), "expired");
    json_decref(g);
    e = call("POST", auth_path(b, "capture", p, sizeof p), "{}", "capture-o-6", 409);
    assert_string_equal(str(e, "status"), "expired");
    json_decref(e);
    char *c = authorize(900, "o-7", NULL);
    json_decref(call("POST", auth_path(c, "capture", p, sizeof p), "{}", "void-o-5", 200));
    json_decref(call("POST", auth_path(c, "void", p, sizeof p), NULL, NULL, 409));
    json_decref(call("POST", auth_path(c, "expire", p, sizeof p), NULL, NULL, 409));
    json_decref(call("POST", auth_path("auth_nope", "void", p, sizeof p), NULL, NULL, 404));
    free(a);
    free(b);
    free(c);
}

/* ---- carrier and mailer -------------------------------------------------------------- */

static void test_carrier_lookup_and_create(void **state) {
    (void)state;
    json_t *none = call("GET", "/carrier/shipments?reference=o-8", NULL, NULL, 200);
    assert_true(json_is_null(json_object_get(none, "shipment")));
    json_decref(none);
    json_t *s1 =
        call("POST", "/carrier/shipments", "{\"reference\": \"o-8\", \"items\": 3}", NULL, 201);
    const char *t1 = str(s1, "trackingNumber");
    assert_int_equal(strlen(t1), 15);
    assert_true(strncmp(t1, "TRK", 3) == 0 && strspn(t1 + 3, "0123456789") == 12);
    json_t *found = call("GET", "/carrier/shipments?reference=o-8", NULL, NULL, 200);
    json_t *sh = json_object_get(found, "shipment");
    assert_string_equal(str(sh, "trackingNumber"), t1);
    assert_string_equal(str(sh, "reference"), "o-8");
    assert_int_equal(json_integer_value(json_object_get(sh, "items")), 3);
    json_decref(found);
    /* a real carrier ships twice when asked twice */
    json_t *s2 =
        call("POST", "/carrier/shipments", "{\"reference\": \"o-8\", \"items\": 3}", NULL, 201);
    assert_string_not_equal(str(s2, "trackingNumber"), t1);
    assert_int_equal(ledger_n("carrier", "shipments"), 2);
    assert_int_equal(ledger_n("carrier", "lookups"), 2);
    expect_400("GET", "/carrier/shipments", NULL, NULL, "reference");
    expect_400("POST", "/carrier/shipments", "{\"reference\": \"o-9\", \"items\": \"3\"}", NULL,
               "items");
    json_decref(s1);
    json_decref(s2);
}

#define MSG                                                                                        \
    "{\"to\": \"a@example.com\", \"template\": \"order-confirmation\", "                           \
    "\"reference\": \"o-10\", \"data\": {\"total\": 5000}}"

static void test_mailer_key_required_and_replayed(void **state) {
    (void)state;
    expect_400("POST", "/mailer/messages", MSG, NULL, "Idempotency-Key");
    json_t *m1 = call("POST", "/mailer/messages", MSG, "mail-o-10", 202);
    json_t *m2 = call("POST", "/mailer/messages", MSG, "mail-o-10", 202);
    assert_true(strncmp(str(m1, "messageId"), "msg_", 4) == 0);
    assert_string_equal(str(m1, "messageId"), str(m2, "messageId"));
    json_decref(call("POST", "/mailer/messages",
                     "{\"to\": \"b@example.com\", \"template\": \"order-confirmation\"}",
                     "mail-o-10", 422));
    json_t *l = ledger();
    json_t *ml = json_object_get(l, "mailer");
    assert_int_equal(json_array_size(json_object_get(ml, "messages")), 1);
    json_t *m = json_array_get(json_object_get(ml, "messages"), 0);
    assert_string_equal(str(m, "messageId"), str(m1, "messageId"));
    assert_string_equal(str(m, "idempotencyKey"), "mail-o-10");
    assert_string_equal(str(m, "to"), "a@example.com");
    assert_string_equal(str(m, "template"), "order-confirmation");
    assert_string_equal(str(m, "reference"), "o-10");
    assert_int_equal(json_integer_value(json_object_get(ml, "replays")), 1);
    json_decref(l);
    json_decref(m1);
    json_decref(m2);
}

/* ---- faults -------------------------------------------------------------------------- */

static long long fault_count(const char *kind) {
    return ledger_n("faults", kind);
}

static void test_fault_error_next(void **state) {
    (void)state;
    post_faults("{\"gateway.authorize\": {\"error_next\": 1}}");
    res r = call_t("POST", "/gateway/authorizations", "{\"amount\": 1, \"reference\": \"o-11\"}",
                   "auth-o-11", 5000);
    assert_int_equal(r.transport, EX_HTTP_OK);
    assert_int_equal(r.status, 503);
    assert_string_equal(str(r.json, "error"), "injected");
    json_decref(r.json);
    assert_int_equal(ledger_n("gateway", "authorizations"), 0);
    assert_int_equal(fault_count("errors"), 1);
    free(authorize(1, "o-11", "auth-o-11")); /* used up: the retry goes through, once */
    assert_int_equal(ledger_n("gateway", "authorizations"), 1);
    assert_int_equal(ledger_n("gateway", "replays"), 0);
}

static void test_fault_slow_next(void **state) {
    (void)state;
    char *a = authorize(300, "o-12", NULL);
    post_faults("{\"gateway.capture\": {\"slow_next\": 1, \"slow_ms\": 1500}}");
    char p[200];
    auth_path(a, "capture", p, sizeof p);
    long long t0 = th_mono_ms();
    res r = call_t("POST", p, "{}", "capture-o-12", 300);
    assert_int_equal(r.transport, EX_HTTP_ETIMEDOUT);
    assert_true(th_mono_ms() - t0 < 1400);
    /* the client gave up, but the gateway captured all the same */
    count_arg c = {"gateway", "captures", 1};
    assert_true(th_wait_until(count_is, &c, 5000));
    json_t *again = call("POST", p, "{}", "capture-o-12", 200); /* the retry: a replay */
    json_t *l = ledger();
    json_t *cap = json_array_get(json_object_get(json_object_get(l, "gateway"), "captures"), 0);
    assert_string_equal(str(again, "captureId"), str(cap, "captureId"));
    json_decref(l);
    json_decref(again);
    assert_int_equal(ledger_n("gateway", "captures"), 1);
    assert_int_equal(ledger_n("gateway", "replays"), 1);
    assert_int_equal(fault_count("slow"), 1);
    free(a);
}

static void test_fault_throttle_next(void **state) {
    (void)state;
    post_faults("{\"carrier.create\": {\"throttle_next\": 2, \"retry_after_s\": 2}}");
    const char *body = "{\"reference\": \"o-13\", \"items\": 1}";
    res r1 = call_t("POST", "/carrier/shipments", body, NULL, 5000);
    assert_int_equal(r1.status, 429);
    assert_string_equal(r1.retry_after, "2");
    long long d = -1;
    assert_int_equal(ferry_retry_after_parse_now(r1.retry_after, &d), 0);
    assert_int_equal(d, 2000);
    json_decref(r1.json);
    res r2 = call_t("POST", "/carrier/shipments", body, NULL, 5000);
    assert_int_equal(r2.status, 429);
    /* next time as an HTTP-date ("Thu, 03 Dec 2026 08:46:01 GMT"), 2 to 3 s ahead */
    assert_true(strlen(r2.retry_after) == 29 && strstr(r2.retry_after, " GMT") != NULL);
    d = -1;
    assert_int_equal(ferry_retry_after_parse_now(r2.retry_after, &d), 0);
    assert_true(d >= 1000 && d <= 3000);
    json_decref(r2.json);
    assert_int_equal(ledger_n("carrier", "shipments"), 0);
    assert_int_equal(fault_count("throttled"), 2);
    json_decref(call("POST", "/carrier/shipments", body, NULL, 201));
    assert_int_equal(ledger_n("carrier", "shipments"), 1);
}

static void test_fault_drop_next(void **state) {
    (void)state;
    post_faults("{\"mailer.send\": {\"drop_next\": 1}}");
    res r = call_t("POST", "/mailer/messages", MSG, "mail-o-10", 5000);
    assert_int_equal(r.transport, EX_HTTP_EDROPPED);
    /* sent, then the connection dropped: the mailer has it, the client does not know */
    assert_int_equal(ledger_n("mailer", "messages"), 1);
    assert_int_equal(fault_count("dropped"), 1);
    json_t *m = call("POST", "/mailer/messages", MSG, "mail-o-10", 202);
    json_t *l = ledger();
    json_t *sent = json_array_get(json_object_get(json_object_get(l, "mailer"), "messages"), 0);
    assert_string_equal(str(m, "messageId"), str(sent, "messageId"));
    json_decref(l);
    json_decref(m);
    assert_int_equal(ledger_n("mailer", "messages"), 1);
    assert_int_equal(ledger_n("mailer", "replays"), 1);
}

static void test_fault_flags_at_start(void **state) {
    (void)state;
    sp_stop(&fk, 10000);
    static const char *const args[] = {"--listen",
                                       "127.0.0.1:0",
                                       "--fault",
                                       "gateway.authorize:error_next=1",
                                       "--fault",
                                       "*:throttle_next=1",
                                       "--fault=*:retry_after=seconds",
                                       NULL};
    sp_start(&fk, "shop-fakes", args, NULL, SP_PORT);
    json_t *f = call("GET", "/faults", NULL, NULL, 200);
    json_t *ga = json_object_get(f, "gateway.authorize");
    assert_int_equal(json_integer_value(json_object_get(ga, "error_next")), 1);
    assert_int_equal(json_integer_value(json_object_get(ga, "throttle_next")), 1);
    assert_string_equal(str(json_object_get(f, "mailer.send"), "retry_after"), "seconds");
    json_decref(f);
    const char *body = "{\"amount\": 1, \"reference\": \"o-14\"}";
    /* counts in the order error, then throttle: 503, 429, then through */
    res r = call_t("POST", "/gateway/authorizations", body, NULL, 5000);
    assert_int_equal(r.status, 503);
    json_decref(r.json);
    r = call_t("POST", "/gateway/authorizations", body, NULL, 5000);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "1");
    json_decref(r.json);
    free(authorize(1, "o-14", NULL));
    r = call_t("GET", "/carrier/shipments?reference=o-14", NULL, NULL, 5000);
    assert_int_equal(r.status, 429);
    json_decref(r.json);
    assert_int_equal(fault_count("errors"), 1);
    assert_int_equal(fault_count("throttled"), 2);
}

/* Rates draw from the seeded generator: the same seed and requests give the same faults. */
static void test_fault_rates_follow_the_seed(void **state) {
    (void)state;
    char seen[2][41];
    for (int run = 0; run < 2; run++) {
        sp_stop(&fk, 10000);
        static const char *const args[] = {
            "--listen", "127.0.0.1:0", "--seed", "42", "--fault", "carrier.lookup:error_rate=0.5",
            NULL};
        sp_start(&fk, "shop-fakes", args, NULL, SP_PORT);
        for (int i = 0; i < 40; i++) {
            res r = call_t("GET", "/carrier/shipments?reference=o-15", NULL, NULL, 5000);
            assert_true(r.status == 200 || r.status == 503);
            seen[run][i] = r.status == 200 ? '.' : 'E';
            json_decref(r.json);
        }
        seen[run][40] = '\0';
    }
    assert_string_equal(seen[0], seen[1]);
    assert_non_null(strchr(seen[0], '.'));
    assert_non_null(strchr(seen[0], 'E'));
}

/* shop-fakes with args must exit 2 saying `needle` on stderr. */
static void bad_args(const char *const *args, const char *needle) {
    sp_proc p;
    sp_start(&p, "shop-fakes", args, NULL, SP_NONE);
    assert_int_equal(sp_wait_exit(&p, 10000), 2);
    if (!th_file_contains(p.err_path, needle)) {
        sp_dump(&p);
        fail_msg("%s %s: stderr does not say \"%s\"", args[0], args[1] ? args[1] : "", needle);
    }
}

static void bad_flag(const char *spec, const char *needle) {
    const char *const args[] = {"--listen", "127.0.0.1:0", "--fault", spec, NULL};
    bad_args(args, needle);
}

static void test_bad_flags(void **state) {
    (void)state;
    bad_flag("nope.op:error_rate=0.1", "unknown operation \"nope.op\"");
    bad_flag("gateway.capture:error_rate=2", "error_rate must be a number from 0 to 1");
    bad_flag("gateway.capture:fail_rate=0.1", "unknown setting \"fail_rate\"");
    bad_flag("gateway.capture", "expected OP:KEY=VALUE");
    bad_flag("*:retry_after=sometimes", "retry_after must be");
    bad_flag("mailer.send:drop_next=-1", "drop_next must be an integer");
    static const char *const listen[] = {"--listen", "localhost", NULL};
    bad_args(listen, "expected HOST:PORT");
    static const char *const seed[] = {"--seed", "x", NULL};
    bad_args(seed, "--seed");
    static const char *const unknown[] = {"--frobnicate", NULL};
    bad_args(unknown, "unknown option --frobnicate");
}

static void test_post_faults_bad_and_delete(void **state) {
    (void)state;
    post_faults("{\"gateway.get\": {\"error_next\": 5}}");
    json_t *before = call("GET", "/faults", NULL, NULL, 200);
    expect_400("POST", "/faults", "{\"gateway.get\": ", NULL, NULL);
    expect_400("POST", "/faults", "[1]", NULL, NULL);
    expect_400("POST", "/faults", "{\"gateway.capture\": {\"error_rate\": \"x\"}}", NULL,
               "gateway.capture.error_rate");
    expect_400("POST", "/faults", "{\"gateway.capture\": {\"slow_next\": 1.5}}", NULL,
               "gateway.capture.slow_next");
    expect_400("POST", "/faults", "{\"gateway.nope\": {}}", NULL, "gateway.nope");
    expect_400("POST", "/faults", "{\"*\": {\"drop\": 1}}", NULL, "*.drop");
    json_t *after = call("GET", "/faults", NULL, NULL, 200);
    assert_true(json_equal(before, after)); /* refused settings changed nothing */
    json_decref(before);
    json_decref(after);
    /* a key given replaces that operation's settings as a whole */
    json_t *now = call("POST", "/faults", "{\"gateway.get\": {\"drop_rate\": 0.25}}", NULL, 200);
    json_t *gg = json_object_get(now, "gateway.get");
    assert_int_equal(json_integer_value(json_object_get(gg, "error_next")), 0);
    assert_true(json_real_value(json_object_get(gg, "drop_rate")) == 0.25);
    json_decref(now);
    post_faults("{\"*\": {\"error_next\": 3}}");
    json_t *cleared = call("DELETE", "/faults", NULL, NULL, 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(cleared, "mailer.send"), "error_next")),
        0);
    json_decref(cleared);
    free(authorize(10, "o-16", NULL)); /* no fault any more */
    assert_int_equal(fault_count("errors"), 0);
}

/* ---- bad requests -------------------------------------------------------------------- */

static void test_bad_requests(void **state) {
    (void)state;
    const char *auths = "/gateway/authorizations";
    expect_400("POST", auths, "{\"amount\": 1, ", NULL, NULL);
    expect_400("POST", auths, "[]", NULL, NULL);
    expect_400("POST", auths, "{\"amount\": \"1\", \"reference\": \"o\"}", NULL, "amount");
    expect_400("POST", auths, "{\"amount\": 0, \"reference\": \"o\"}", NULL, "amount");
    expect_400("POST", auths, "{\"amount\": 1}", NULL, "reference");
    expect_400("POST", auths, "{\"amount\": 1, \"reference\": 7}", NULL, "reference");
    expect_400("POST", auths, "{\"amount\": 1, \"reference\": \"o\", \"amount\": 2}", NULL, NULL);
    expect_400("POST", "/mailer/messages", "{\"to\": \"a@b\", \"template\": \"t\", \"data\": 1}",
               "k", "data");
    /* a huge body: 413 before the handler */
    size_t n = 200 * 1024;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    memcpy(big, "{\"amount\": 1, \"reference\": \"", 28);
    memcpy(big + n - 2, "\"}", 2);
    memset(big + 28, 'x', n - 30);
    big[n] = '\0';
    res r = call_t("POST", auths, big, NULL, 5000);
    free(big);
    assert_int_equal(r.transport, EX_HTTP_OK);
    assert_int_equal(r.status, 413);
    json_decref(r.json);
    json_decref(call("GET", "/gateway/nothing", NULL, NULL, 404));
    json_decref(call("GET", "/gateway/authorizations/auth_x/refund", NULL, NULL, 404));
    json_decref(call("GET", "/gateway/authorizations/auth_unknown", NULL, NULL, 404));
    json_decref(call("POST", "/gateway/authorizations/auth_unknown/capture", "{}", "k", 404));
    json_decref(call("DELETE", auths, NULL, NULL, 405));
    json_decref(call("GET", "/mailer/messages", NULL, NULL, 405));
    json_decref(call("PUT", "/ledger", NULL, NULL, 405));
    json_t *h = call("GET", "/healthz", NULL, NULL, 200);
    assert_true(json_is_true(json_object_get(h, "ok")));
    json_decref(h);
    /* nothing of it reached a ledger */
    json_t *l = ledger();
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(l, "gateway"), "authorizations")), 0);
    assert_int_equal(json_array_size(json_object_get(json_object_get(l, "mailer"), "messages")), 0);
    json_decref(l);
}

static void test_ledger_bound(void **state) {
    (void)state;
    sp_stop(&fk, 10000);
    static const char *const args[] = {"--listen", "127.0.0.1:0", "--ledger-max", "2", NULL};
    sp_start(&fk, "shop-fakes", args, NULL, SP_PORT);
    free(authorize(1, "o-17", NULL));
    free(authorize(1, "o-18", NULL));
    json_t *e = call("POST", "/gateway/authorizations", "{\"amount\": 1, \"reference\": \"o-19\"}",
                     NULL, 507);
    assert_non_null(strstr(str(e, "error"), "ledger full"));
    json_decref(e);
    assert_int_equal(ledger_n("gateway", "authorizations"), 2);
}

static void test_sigterm_exits_zero(void **state) {
    (void)state;
    free(authorize(1, "o-20", NULL));
    char *out = th_slurp(fk.out_path);
    char want[64];
    snprintf(want, sizeof want, "listening on 127.0.0.1:%d\n", fk.port);
    assert_string_equal(out, want); /* exactly one stdout line */
    free(out);
    assert_int_equal(sp_stop(&fk, 10000), 0);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, start_fakes, stop_fakes)
    const struct CMUnitTest tests[] = {
        T(test_authorize_with_and_without_keys),
        T(test_capture_key_required_and_replayed),
        T(test_void_and_expire),
        T(test_carrier_lookup_and_create),
        T(test_mailer_key_required_and_replayed),
        T(test_fault_error_next),
        T(test_fault_slow_next),
        T(test_fault_throttle_next),
        T(test_fault_drop_next),
        T(test_fault_flags_at_start),
        T(test_fault_rates_follow_the_seed),
        T(test_bad_flags),
        T(test_post_faults_bad_and_delete),
        T(test_bad_requests),
        T(test_ledger_bound),
        T(test_sigterm_exits_zero),
    };
    if (ex_http_global_init() != 0) return 1;
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return th_exit(failed);
}
