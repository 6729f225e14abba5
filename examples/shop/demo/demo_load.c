/* demo_load.c - `shop-demo load`: the demo's customers. Concurrent clients place orders
 * through shop-api (retrying what a real client retries: 502/503 and no answer), cancel
 * some right after placing them (a race with the capture that the api decides: 200 or 409),
 * and create and assign tasks through taskflow-api. What was acknowledged goes to --out, so
 * the reconciliation can check that nothing a client was told about is missing. */
#include "demo.h"

#include "ex_http.h"
#include "ex_text.h"
#include "ex_util.h"

#include <ferry/outbox.h>

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define RETRIES_MAX 10 /* attempts per request before the client gives up */

typedef struct load_cfg {
    const char *api, *taskflow;
    long orders, clients, customers, tasks, timeout_ms;
    double cancel_rate;
    unsigned long long seed;
    char (*customer_ids)[37];
    char (*tenant_ids)[37];
    FILE *out;
    pthread_mutex_t out_mu;
    atomic_long next_order, next_task;
    atomic_long placed, given_up, retried, cancel_asked, cancelled, cancel_refused, cancel_failed,
        tasks_assigned, tasks_failed;
} load_cfg;

static unsigned long long rng_next(unsigned long long *s) { /* splitmix64 */
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void uuid4(unsigned long long *s, char out[37]) {
    unsigned char b[16];
    for (int i = 0; i < 16; i += 8) {
        unsigned long long x = rng_next(s);
        memcpy(b + i, &x, 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* One acknowledged line ("order ID placed", ...) to --out. */
static void record(load_cfg *c, const char *kind, const char *id, const char *what) {
    if (!c->out) return;
    pthread_mutex_lock(&c->out_mu);
    fprintf(c->out, "%s %s %s\n", kind, id, what);
    pthread_mutex_unlock(&c->out_mu);
}

/* Whether a client would try again: no answer, or the service said it is unavailable. */
static int retryable(int rc, const ex_http_response *res) {
    if (rc != 0) return res->transport != EX_HTTP_ETOOBIG && res->transport != EX_HTTP_EOTHER;
    return res->status == 502 || res->status == 503 || res->status == 429;
}

/* One request with the client's retries. Returns 0 with *res holding the final answer (any
 * status), -1 when it never got one it accepts (res freed). */
static int call(load_cfg *c, unsigned long long *rng, const char *method, const char *url,
                const char *body, ex_http_response *res) {
    for (int attempt = 1;; attempt++) {
        ex_http_request req = {
            .method = method, .url = url, .body = body, .timeout_ms = (int)c->timeout_ms};
        int rc = ex_http_do(&req, res);
        if (!retryable(rc, res)) return rc;
        if (attempt >= RETRIES_MAX || ex_stopping()) {
            char shown[256];
            ex_log("%s %s: giving up after %d attempts (%s)", method,
                   ex_url_display(url, shown, sizeof shown), attempt,
                   rc ? res->error : "service unavailable");
            ex_http_response_free(res);
            return -1;
        }
        atomic_fetch_add(&c->retried, 1);
        ex_http_response_free(res);
        long backoff = 100L << (attempt < 5 ? attempt : 5); /* 200 ms .. 3.2 s */
        ex_sleep_ms(backoff / 2 + (long)(rng_next(rng) % (unsigned long long)(backoff / 2 + 1)));
    }
}

static int json_id(const char *body, const char *key, char out[128]) {
    json_t *j = json_loads(body, 0, NULL);
    const char *s = j ? json_string_value(json_object_get(j, key)) : NULL;
    int ok = s && strlen(s) < 128;
    if (ok) snprintf(out, 128, "%s", s);
    json_decref(j);
    return ok ? 0 : -1;
}

static void place_one(load_cfg *c, unsigned long long *rng) {
    char url[1024], id[128];
    json_t *body = json_object(), *items = json_array();
    const char *customer = c->customer_ids[rng_next(rng) % (unsigned long long)c->customers];
    json_object_set_new(body, "customerId", json_string(customer));
    int n = 1 + (int)(rng_next(rng) % 4);
    for (int i = 0; i < n; i++) {
        char sku[32];
        snprintf(sku, sizeof sku, "SKU-%03d", (int)(rng_next(rng) % 200));
        json_array_append_new(items, json_pack("{s:s,s:I,s:I}", "sku", sku, "qty",
                                               (json_int_t)(1 + rng_next(rng) % 3), "unitPrice",
                                               (json_int_t)(10000 + (rng_next(rng) % 490) * 1000)));
    }
    json_object_set_new(body, "items", items);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    snprintf(url, sizeof url, "%s/orders", c->api);
    ex_http_response res;
    int rc = text ? call(c, rng, "POST", url, text, &res) : -1;
    free(text);
    if (rc != 0 || res.status != 201 || json_id(res.body, "id", id) != 0) {
        if (rc == 0) {
            ex_log("POST /orders: %d %.200s", res.status, res.body);
            ex_http_response_free(&res);
        }
        atomic_fetch_add(&c->given_up, 1);
        return;
    }
    ex_http_response_free(&res);
    atomic_fetch_add(&c->placed, 1);
    record(c, "order", id, "placed");
    if ((double)(rng_next(rng) % 1000000) / 1e6 >= c->cancel_rate) return;
    atomic_fetch_add(&c->cancel_asked, 1);
    snprintf(url, sizeof url, "%s/orders/%s/cancel", c->api, id);
    rc = call(c, rng, "POST", url, "{}", &res);
    if (rc == 0 && res.status == 200) {
        atomic_fetch_add(&c->cancelled, 1);
        record(c, "order", id, "cancelled");
    } else if (rc == 0 && res.status == 409) {
        atomic_fetch_add(&c->cancel_refused, 1);
        record(c, "order", id, "cancel-refused");
    } else {
        if (rc == 0) ex_log("POST /orders/%s/cancel: %d %.200s", id, res.status, res.body);
        atomic_fetch_add(&c->cancel_failed, 1);
    }
    if (rc == 0) ex_http_response_free(&res);
}

static void task_one(load_cfg *c, unsigned long long *rng) {
    char url[1024], id[128], body[256], assignee[37];
    const char *tenant = c->tenant_ids[rng_next(rng) % 4];
    snprintf(body, sizeof body, "{\"tenantId\":\"%s\",\"title\":\"demo task %llu\"}", tenant,
             rng_next(rng) % 100000);
    snprintf(url, sizeof url, "%s/tasks", c->taskflow);
    ex_http_response res;
    int rc = call(c, rng, "POST", url, body, &res);
    if (rc != 0 || res.status != 201 || json_id(res.body, "id", id) != 0) {
        if (rc == 0) {
            ex_log("POST /tasks: %d %.200s", res.status, res.body);
            ex_http_response_free(&res);
        }
        atomic_fetch_add(&c->tasks_failed, 1);
        return;
    }
    ex_http_response_free(&res);
    uuid4(rng, assignee);
    snprintf(body, sizeof body, "{\"assigneeId\":\"%s\"}", assignee);
    snprintf(url, sizeof url, "%s/tasks/%s/assign", c->taskflow, id);
    rc = call(c, rng, "POST", url, body, &res);
    if (rc == 0 && res.status == 200) {
        atomic_fetch_add(&c->tasks_assigned, 1);
        char what[64];
        snprintf(what, sizeof what, "assigned %s", assignee);
        record(c, "task", id, what);
    } else {
        if (rc == 0) ex_log("POST /tasks/%s/assign: %d %.200s", id, res.status, res.body);
        atomic_fetch_add(&c->tasks_failed, 1);
    }
    if (rc == 0) ex_http_response_free(&res);
}

typedef struct client {
    load_cfg *c;
    unsigned long long rng;
    pthread_t th;
} client;

static void *client_main(void *arg) {
    client *cl = arg;
    load_cfg *c = cl->c;
    while (!ex_stopping()) {
        long i = atomic_fetch_add(&c->next_order, 1);
        if (i < c->orders) {
            place_one(c, &cl->rng);
            continue;
        }
        long t = atomic_fetch_add(&c->next_task, 1);
        if (c->taskflow && t < c->tasks) {
            task_one(c, &cl->rng);
            continue;
        }
        break;
    }
    return NULL;
}

static const char load_usage[] =
    "usage: shop-demo load --api URL [--orders N] [--clients N] [--cancel-rate P]\n"
    "                      [--customers N] [--taskflow-url URL] [--tasks N] [--out FILE]\n"
    "                      [--seed N] [--timeout-ms N]\n"
    "  --api URL          shop-api's base URL (e.g. http://127.0.0.1:8080)\n"
    "  --orders N         orders to place (default 1000)\n"
    "  --clients N        concurrent clients (default 16)\n"
    "  --cancel-rate P    share of orders cancelled right after being placed (default 0.1)\n"
    "  --customers N      distinct customers (default orders / 5, at least 1)\n"
    "  --taskflow-url URL taskflow-api's base URL; with --tasks N, N tasks are created and\n"
    "                     assigned\n"
    "  --out FILE         write what the api acknowledged, one line each ('order ID placed',\n"
    "                     'order ID cancelled', 'order ID cancel-refused', 'task ID assigned\n"
    "                     ASSIGNEE'), for `shop-demo reconcile --acks FILE`\n"
    "  --seed N           random seed (default: from the clock)\n"
    "  --timeout-ms N     per request (default 10000)\n"
    "A request that gets 502/503/429 or no answer is retried (up to 10 attempts, backoff with\n"
    "jitter), as a client of a real shop would. Exit 0 when every order was placed.\n";

int demo_load(int argc, char **argv) {
    static load_cfg c;
    memset(&c, 0, sizeof c);
    c.orders = 1000;
    c.clients = 16;
    c.cancel_rate = 0.1;
    c.customers = -1;
    c.timeout_ms = 10000;
    c.seed = (unsigned long long)time(NULL) * 2654435761ULL;
    const char *out_path = NULL;
    char err[256];
    static const struct option opts[] = {{"api", required_argument, 0, 'a'},
                                         {"orders", required_argument, 0, 'n'},
                                         {"clients", required_argument, 0, 'c'},
                                         {"cancel-rate", required_argument, 0, 'r'},
                                         {"customers", required_argument, 0, 'u'},
                                         {"taskflow-url", required_argument, 0, 't'},
                                         {"tasks", required_argument, 0, 'k'},
                                         {"out", required_argument, 0, 'o'},
                                         {"seed", required_argument, 0, 's'},
                                         {"timeout-ms", required_argument, 0, 'm'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int ch;
    long v;
    while ((ch = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'a':
            c.api = optarg;
            break;
        case 't':
            c.taskflow = optarg;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'r':
            if (ex_parse_rate(optarg, "--cancel-rate", &c.cancel_rate, err, sizeof err))
                return demo_usage_error("load", "%s", err);
            break;
        case 'h':
            fputs(load_usage, stdout);
            return 0;
        case 'n':
        case 'c':
        case 'u':
        case 'k':
        case 's':
        case 'm': {
            const char *what = ch == 'n'   ? "--orders"
                               : ch == 'c' ? "--clients"
                               : ch == 'u' ? "--customers"
                               : ch == 'k' ? "--tasks"
                               : ch == 's' ? "--seed"
                                           : "--timeout-ms";
            long min = ch == 'c' || ch == 'u' || ch == 'm' ? 1 : 0;
            long max = ch == 'c' ? 256 : ch == 'm' ? 600000 : 100000000;
            if (ch == 's') max = 0x7fffffffffffffffL;
            if (ex_parse_long(optarg, min, max, what, &v, err, sizeof err))
                return demo_usage_error("load", "%s", err);
            if (ch == 'n') c.orders = v;
            if (ch == 'c') c.clients = v;
            if (ch == 'u') c.customers = v;
            if (ch == 'k') c.tasks = v;
            if (ch == 's') c.seed = (unsigned long long)v;
            if (ch == 'm') c.timeout_ms = v;
            break;
        }
        default:
            return demo_usage_error("load", "bad option");
        }
    }
    if (optind < argc + 1)
        return demo_usage_error("load", "unexpected argument '%.64s'", argv[optind - 1]);
    if (!c.api) return demo_usage_error("load", "--api URL is required");
    if (strncmp(c.api, "http://", 7) && strncmp(c.api, "https://", 8))
        return demo_usage_error("load", "--api: expected an http:// or https:// URL");
    if (c.taskflow && strncmp(c.taskflow, "http://", 7) && strncmp(c.taskflow, "https://", 8))
        return demo_usage_error("load", "--taskflow-url: expected an http:// or https:// URL");
    if (c.tasks && !c.taskflow) return demo_usage_error("load", "--tasks needs --taskflow-url");
    if (c.customers < 0) c.customers = c.orders / 5 > 0 ? c.orders / 5 : 1;
    c.customer_ids = calloc((size_t)c.customers, sizeof *c.customer_ids);
    c.tenant_ids = calloc(4, sizeof *c.tenant_ids);
    client *cl = calloc((size_t)c.clients, sizeof *cl);
    if (!c.customer_ids || !c.tenant_ids || !cl) {
        fprintf(stderr, "shop-demo load: out of memory\n");
        return 1;
    }
    unsigned long long rng = c.seed;
    for (long i = 0; i < c.customers; i++)
        uuid4(&rng, c.customer_ids[i]);
    for (int i = 0; i < 4; i++)
        uuid4(&rng, c.tenant_ids[i]);
    if (out_path && !(c.out = fopen(out_path, "w"))) {
        fprintf(stderr, "shop-demo load: cannot write %s: %s\n", out_path, strerror(errno));
        return 1;
    }
    pthread_mutex_init(&c.out_mu, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < c.clients; i++) {
        cl[i].c = &c;
        cl[i].rng = c.seed ^ (0xA24BAED4963EE407ULL * (unsigned long long)(i + 1));
        if (pthread_create(&cl[i].th, NULL, client_main, &cl[i]) != 0) {
            fprintf(stderr, "shop-demo load: cannot start client threads\n");
            return 1;
        }
    }
    for (long i = 0; i < c.clients; i++)
        pthread_join(cl[i].th, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (c.out) fclose(c.out);
    printf("load: %ld orders placed in %.1f s (%.0f/s) by %ld clients; %ld requests retried "
           "after 502/503/429 or no answer; %ld orders given up\n",
           atomic_load(&c.placed), s, s > 0 ? (double)atomic_load(&c.placed) / s : 0.0, c.clients,
           atomic_load(&c.retried), atomic_load(&c.given_up));
    printf("load: %ld cancellations asked: %ld cancelled, %ld refused (409: the capture had "
           "claimed the payment), %ld failed\n",
           atomic_load(&c.cancel_asked), atomic_load(&c.cancelled), atomic_load(&c.cancel_refused),
           atomic_load(&c.cancel_failed));
    if (c.taskflow)
        printf("load: %ld tasks created and assigned, %ld failed\n", atomic_load(&c.tasks_assigned),
               atomic_load(&c.tasks_failed));
    fflush(stdout);
    free(cl);
    free(c.customer_ids);
    free(c.tenant_ids);
    return atomic_load(&c.given_up) || atomic_load(&c.tasks_failed) ||
                   atomic_load(&c.cancel_failed) || ex_stopping()
               ? 1
               : 0;
}
