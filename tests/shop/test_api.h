/* test_api.h - helpers of the shop-api tests (test_api.c, test_api_errors.c), prefix at_:
 * shop-fakes started once per test binary (the gateway shop-api calls), a fresh schema per
 * test migrated by the real `ferry migrate`, shop-api started on it, raw HTTP through
 * libcurl (any method, header and body, the answer's headers kept), the row counts that
 * prove "nothing written", and the fakes' faults and ledger. Header-only (static): each test
 * file is its own executable. */
#ifndef SHOP_TEST_API_H
#define SHOP_TEST_API_H

#include "support/ob.h"

#include "sp.h"

#include <ctype.h>
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <strings.h>

static PGconn *at_db;
static sp_proc at_fakes;
static char at_gateway[128]; /* http://127.0.0.1:PORT/gateway */

/* ---- HTTP ----------------------------------------------------------------------------- */

typedef struct at_res {
    long status; /* 0 when no answer came */
    char *body;  /* NUL-terminated, "" when none */
    size_t len;
    char *headers; /* the raw header block */
    size_t hlen;
    json_t *json; /* the body parsed, NULL when it is not JSON */
} at_res;

typedef struct at_buf {
    char **p;
    size_t *n;
} at_buf;

static inline size_t at_collect(char *data, size_t size, size_t nmemb, void *ud) {
    at_buf *b = ud;
    size_t k = size * nmemb;
    char *q = realloc(*b->p, *b->n + k + 1);
    if (!q) return 0;
    memcpy(q + *b->n, data, k);
    *b->n += k;
    q[*b->n] = '\0';
    *b->p = q;
    return k;
}

/* One request (method, url, body[0..len) or none when body is NULL, extra header lines
 * "Name: value", NULL-terminated or NULL). Thread-safe (no cmocka call); *r is filled in
 * (status 0 on a transport failure). Free with at_res_free. */
static inline int at_http_raw(const char *method, const char *url, const char *body, size_t len,
                              const char *const *headers, at_res *r) {
    memset(r, 0, sizeof *r);
    r->body = calloc(1, 1);
    r->headers = calloc(1, 1);
    CURL *c = curl_easy_init();
    if (!c) return -1;
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    for (int i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    at_buf bb = {&r->body, &r->len}, hb = {&r->headers, &r->hlen};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD")) curl_easy_setopt(c, CURLOPT_NOBODY, 1L); /* no body follows */
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, at_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &bb);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, at_collect);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    r->json = json_loadb(r->body, r->len, 0, NULL);
    return rc == CURLE_OK ? 0 : -1;
}

static inline void at_res_free(at_res *r) {
    free(r->body);
    free(r->headers);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* As at_http_raw with a NUL-terminated body (or NULL); fails the test when no answer. */
static inline void at_http(const char *method, const char *url, const char *body,
                           const char *const *headers, at_res *r) {
    if (at_http_raw(method, url, body, body ? strlen(body) : 0, headers, r) != 0)
        fail_msg("%s %s: no answer", method, url);
}

/* The value of response header `name` (case-insensitive) in buf, or NULL when absent. */
static inline const char *at_header(const at_res *r, const char *name, char *buf, size_t cap) {
    size_t n = strlen(name);
    for (const char *l = r->headers; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t ll = e ? (size_t)(e - l) : strlen(l);
        if (ll > n && !strncasecmp(l, name, n) && l[n] == ':') {
            const char *v = l + n + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(l + ll - v);
            while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            snprintf(buf, cap, "%.*s", (int)vl, v);
            return buf;
        }
        l = e ? e + 1 : NULL;
    }
    return NULL;
}

/* A string member of the answer's JSON ("" when absent). */
static inline const char *at_str(const at_res *r, const char *key) {
    const char *s = json_string_value(json_object_get(r->json, key));
    return s ? s : "";
}

/* Fail with the answer when its status is not `want`. */
#define AT_EXPECT(r, want)                                                                         \
    do {                                                                                           \
        if ((r).status != (want))                                                                  \
            fail_msg("status %ld, want %d; body: %s", (r).status, (int)(want), (r).body);          \
    } while (0)

/* ---- the fakes ------------------------------------------------------------------------ */

static inline void at_fakes_url(const char *path, char *buf, size_t cap) {
    sp_url(&at_fakes, path, buf, cap);
}

/* POST /faults with `json` (e.g. {"gateway.authorize":{"error_next":1}}); DELETE with NULL. */
static inline void at_faults(const char *json) {
    char url[256];
    at_fakes_url("/faults", url, sizeof url);
    at_res r;
    at_http(json ? "POST" : "DELETE", url, json, NULL, &r);
    AT_EXPECT(r, 200);
    at_res_free(&r);
}

/* GET /ledger (caller json_decref's). */
static inline json_t *at_ledger(void) {
    char url[256];
    at_fakes_url("/ledger", url, sizeof url);
    at_res r;
    at_http("GET", url, NULL, NULL, &r);
    AT_EXPECT(r, 200);
    json_t *j = json_incref(r.json);
    at_res_free(&r);
    if (!j) fail_msg("ledger is not JSON");
    return j;
}

/* Number of elements of ledger.<provider>.<list>. */
static inline size_t at_ledger_count(const char *provider, const char *list) {
    json_t *l = at_ledger();
    size_t n = json_array_size(json_object_get(json_object_get(l, provider), list));
    json_decref(l);
    return n;
}

/* The gateway authorization with reference `ref` (a copy, NULL when none). */
static inline json_t *at_authorization(const char *ref) {
    json_t *l = at_ledger(), *found = NULL, *a;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(l, "gateway"), "authorizations"), i, a) {
        const char *r = json_string_value(json_object_get(a, "reference"));
        if (r && !strcmp(r, ref)) found = json_deep_copy(a);
    }
    json_decref(l);
    return found;
}

/* ---- schema and shop-api -------------------------------------------------------------- */

/* A fresh schema ("at<pid>_<n>", dropped at the end) migrated by `ferry migrate`. */
static inline const char *at_schema(void) {
    if (ob_schema_count >= OB_SCHEMAS_MAX) fail_msg("too many schemas");
    char *s = ob_schema_names[ob_schema_count++];
    snprintf(s, sizeof ob_schema_names[0], "at%d_%d", (int)getpid(), ob_schema_count);
    PQclear(ob_sql(at_db, "DROP SCHEMA IF EXISTS %s CASCADE", s));
    cli_run r;
    CLI(r, "migrate", "--schema", s, "--database", th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    return s;
}

/* Children still running when the test program ends (a failed assertion skips their stop)
 * are killed, so no failing test leaves a server behind. */
#define AT_PIDS_MAX 64
static pid_t at_pids[AT_PIDS_MAX];
static int at_npids;

static inline void at_kill_leftovers(void) {
    for (int i = 0; i < at_npids; i++)
        if (at_pids[i] > 0 && waitpid(at_pids[i], NULL, WNOHANG) == 0) {
            kill(at_pids[i], SIGKILL);
            waitpid(at_pids[i], NULL, 0);
        }
}

/* sp_start, remembering the child for at_kill_leftovers (sp_start itself kills one that
 * never became ready). */
static inline void at_start(sp_proc *p, const char *prog, const char *const *args,
                            const char *const *env, int want) {
    if (at_npids == 0) atexit(at_kill_leftovers);
    sp_start(p, prog, args, env, want);
    if (at_npids < AT_PIDS_MAX) at_pids[at_npids++] = p->pid;
}

/* Start shop-api on schema with the fakes' gateway, a free port, a 500 ms provider timeout
 * and extra args (NULL-terminated or NULL; later flags win). */
static inline void at_api_start_args(sp_proc *p, const char *schema, const char *const *extra) {
    const char *args[32] = {
        "--listen", "127.0.0.1:0",   "--database", th_env_require("DATABASE_URL"), "--schema",
        schema,     "--gateway-url", at_gateway,   "--provider-timeout-ms",        "500"};
    int n = 10;
    for (int i = 0; extra && extra[i] && n < 31; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    at_start(p, "shop-api", args, NULL, SP_PORT);
}

static inline void at_api_start(sp_proc *p, const char *schema) {
    at_api_start_args(p, schema, NULL);
}

/* SIGTERM shop-api; it must exit 0 within 10 s. */
static inline void at_api_stop(sp_proc *p) {
    int st = sp_stop(p, 10000);
    if (st != 0) {
        sp_dump(p);
        fail_msg("shop-api exit status %d, want 0", st);
    }
}

/* Rows in the shop's and ferry's tables of schema. */
typedef struct at_counts {
    long long orders, payments, events;
} at_counts;

static inline at_counts at_count(const char *schema) {
    at_counts c;
    c.orders = ob_ll(at_db, "SELECT count(*) FROM %s.orders", schema);
    c.payments = ob_ll(at_db, "SELECT count(*) FROM %s.payments", schema);
    c.events = ob_ll(at_db, "SELECT count(*) FROM %s.outbox_events", schema);
    return c;
}

#define AT_EXPECT_COUNTS(schema, o, p, e)                                                          \
    do {                                                                                           \
        at_counts c_ = at_count(schema);                                                           \
        if (c_.orders != (o) || c_.payments != (p) || c_.events != (e))                            \
            fail_msg("orders %lld payments %lld events %lld, want %d %d %d", c_.orders,            \
                     c_.payments, c_.events, (int)(o), (int)(p), (int)(e));                        \
    } while (0)

/* A valid order body for customer with one line (sku, qty, unit price). */
static inline const char *at_order(char *buf, size_t cap, const char *customer, const char *sku,
                                   int qty, long long price) {
    snprintf(buf, cap,
             "{\"customerId\":\"%s\",\"items\":[{\"sku\":\"%s\",\"qty\":%d,\"unitPrice\":%lld}]}",
             customer, sku, qty, price);
    return buf;
}

/* URL of shop-api + path. */
static inline const char *at_url(const sp_proc *api, const char *path, char *buf, size_t cap) {
    return sp_url(api, path, buf, cap);
}

/* ---- the group fixture ---------------------------------------------------------------- */

static inline int at_group_setup(void **state) {
    (void)state;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ob_open(&at_db, NULL);
    at_start(&at_fakes, "shop-fakes", CLI_ARGV("--listen", "127.0.0.1:0"), NULL, SP_PORT);
    sp_url(&at_fakes, "/gateway", at_gateway, sizeof at_gateway);
    return 0;
}

static inline int at_group_teardown(void **state) {
    (void)state;
    sp_stop(&at_fakes, 10000);
    ob_close(at_db, NULL);
    curl_global_cleanup();
    return 0;
}

/* Each test starts without faults. */
static inline int at_setup(void **state) {
    (void)state;
    at_faults(NULL);
    return 0;
}

#endif
