/* health.c - the routes `ferry serve` answers itself: /healthz (the process runs), /readyz
 * (Redis PING and PostgreSQL SELECT 1, each within the readiness deadline, and the backlog
 * SLO), /metrics (the system-wide gauges refreshed, one scrape at a time, then the
 * registry rendered as Prometheus text), /api/info (what the dashboard needs to know of
 * the server before it signs in: version, read-only, whether reads need a token, limits)
 * and /api/whoami (the name and scopes of the caller's token).
 *
 * A breached backlog SLO answers 200 with "status": "degraded", not 503: Kubernetes takes a
 * pod that fails its readiness probe out of its Service, which would hide this server's
 * API and metrics exactly when an operator needs them, and would not make the backlog any
 * shorter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/framework.h"
#include "redis/conn.h"
#include "util/clock.h"
#include "util/printable.h"

#define SLO_QUEUES_MAX 1000   /* queues the backlog check looks at */
#define SLO_BREACHES_SHOWN 20 /* queues over the SLO named in the answer */

static double elapsed_ms(int64_t t0) {
    return (double)(ferry__mono_ms() - t0);
}

static int healthz(ferry__admin_req *r, ferry__admin_resp *out) {
    (void)r;
    out->json = json_pack("{s:s}", "status", "ok");
    return 0;
}

static json_t *check_result(int ok, int64_t t0, const ferry_error *e) {
    json_t *j = json_pack("{s:b,s:f}", "ok", ok, "ms", elapsed_ms(t0));
    if (!ok && j) {
        char text[FERRY_ERROR_MESSAGE_MAX + 64];
        ferryx_printable(e->message, text, sizeof text);
        json_object_set_new(j, "error", json_string(text));
    }
    return j;
}

static int check_redis(ferry_admin_server *s, json_t *checks) {
    int64_t t0 = ferry__mono_ms();
    ferry_redis_options ro = s->redis;
    ro.connect_timeout_ms = s->ready_ms;
    ferry_conn *c = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_open(&ro, "ferry-serve-ready", &c, &e);
    if (!rc) {
        int left = s->ready_ms - (int)(ferry__mono_ms() - t0);
        ferry__conn_set_timeout(c, left > 1 ? left : 1);
        redisReply *reply = NULL;
        rc = ferry__conn_command(c, &reply, &e, "PING");
        freeReplyObject(reply);
    }
    ferry__conn_close(c);
    json_object_set_new(checks, "redis", check_result(rc == 0, t0, &e));
    return rc == 0;
}

static int check_postgres(ferry_admin_server *s, json_t *checks) {
    int64_t t0 = ferry__mono_ms();
    ferry_error e = {0};
    int rc = -1;
    /* a pooled connection may be stale (the server restarted): then one fresh try */
    for (int attempt = 0; attempt < 2 && rc; attempt++) {
        int left = s->ready_ms - (int)(ferry__mono_ms() - t0);
        if (left < 1) break;
        ferry__pgc c;
        if ((rc = ferry__admin_pgc_get(s, left, &c, &e))) break;
        rc =
            ferry__pgc_exec(&c, t0 + s->ready_ms, "readiness", NULL, "SELECT 1", 0, NULL, NULL, &e);
        ferry__admin_pgc_put(s, &c, rc != 0);
    }
    json_object_set_new(checks, "postgres", check_result(rc == 0, t0, &e));
    return rc == 0;
}

/* The queues whose oldest ready job is older than the SLO. Returns 1 when none is (or the
 * check could not finish: then "error" says why and the status is not degraded by it). */
static int check_backlog(ferry__admin_req *r, ferry_admin_server *s, json_t *checks) {
    int64_t t0 = ferry__mono_ms();
    json_t *j = json_pack("{s:f}", "sloSeconds", s->slo_s);
    json_t *breaches = json_array();
    char **names = NULL;
    size_t n = 0, checked = 0, over = 0;
    int complete = 0;
    ferry_error e = {0};
    int rc = ferry_queue_names(&s->redis, s->prefix, SLO_QUEUES_MAX, &names, &n, &complete, &e);
    for (size_t i = 0; !rc && i < n; i++) {
        if (ferry__mono_ms() - t0 > s->ready_ms) {
            snprintf(e.message, sizeof e.message, "checked %zu of %zu queues within %d ms", checked,
                     n, s->ready_ms);
            rc = -1;
            break;
        }
        ferry_queue *q = NULL;
        ferry_job_ages ages;
        if (ferry__admin_queue(r, names[i], &q, &e) == 0) {
            if (ferry_queue_ages(q, &ages, &e) == 0) {
                checked++;
                if (ages.ready_found && ages.oldest_ready_s > s->slo_s) {
                    if (over++ < SLO_BREACHES_SHOWN)
                        json_array_append_new(breaches, json_pack("{s:s,s:f}", "queue", names[i],
                                                                  "oldestReadyAgeSeconds",
                                                                  ages.oldest_ready_s));
                }
            }
            ferry__admin_queue_release(r, q);
        }
    }
    ferry_queue_job_ids_free(names, n);
    json_object_set_new(j, "ok", json_boolean(over == 0));
    json_object_set_new(j, "queuesChecked", json_integer((json_int_t)checked));
    json_object_set_new(j, "queuesOverSlo", json_integer((json_int_t)over));
    json_object_set_new(j, "breaches", breaches);
    if (rc) {
        char text[FERRY_ERROR_MESSAGE_MAX + 64];
        json_object_set_new(j, "error",
                            json_string(ferryx_printable(e.message, text, sizeof text)));
    } else if (!complete) {
        json_object_set_new(j, "error",
                            json_string("more queues than the check looks at; the rest were "
                                        "not checked"));
    }
    json_object_set_new(j, "ms", json_real(elapsed_ms(t0)));
    json_object_set_new(checks, "backlog", j);
    return over == 0;
}

static int readyz(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    json_t *checks = json_object();
    int ok = check_redis(s, checks);
    if (s->database_url && !check_postgres(s, checks)) ok = 0;
    int degraded = 0;
    if (ok && s->slo_s > 0 && !check_backlog(r, s, checks)) degraded = 1;
    out->status = ok ? 200 : 503;
    out->json = json_pack("{s:s,s:o}", "status",
                          !ok        ? "unready"
                          : degraded ? "degraded"
                                     : "ready",
                          "checks", checks);
    return 0;
}

static int metrics(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    ferry_error e = {0};
    pthread_mutex_lock(&s->scrape_mu);
    ferry__pgc pgc = {0};
    if (s->database_url && ferry__admin_pgc_get(s, 0, &pgc, &e) != 0)
        ferry__admin_event(s, FERRY_LOG_WARN, "metrics: database: %s", e.message);
    if (ferry__admin_gauges_refresh(s->gauges, &s->cfg, pgc.conn, &e) != 0)
        ferry__admin_event(s, FERRY_LOG_WARN, "metrics: %s", e.message);
    ferry__admin_pgc_put(s, &pgc, 0);
    char *text = NULL;
    size_t len = 0;
    int rc = ferry_metrics_render(s->metrics, &text, &len, &e);
    pthread_mutex_unlock(&s->scrape_mu);
    if (rc) return ferry__admin_fail_err(out, &e);
    return ferry__admin_text_answer(r, out, text, len, FERRY_METRICS_CONTENT_TYPE);
}

/* GET /api/info (open): nothing secret, nothing from Redis or PostgreSQL. */
static int info(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    json_t *limits = json_object();
    json_object_set_new(limits, "listMax", json_integer(FERRY__ADMIN_LIST_MAX));
    json_object_set_new(limits, "bodyMax", json_integer(FERRY__ADMIN_BODY_MAX));
    json_object_set_new(limits, "connections", json_integer(FERRY_ADMIN_CONNECTIONS_MAX));
    json_object_set_new(limits, "streams", json_integer(FERRY_ADMIN_STREAMS_MAX));
    json_object_set_new(limits, "streamSeconds", json_integer(FERRY_ADMIN_STREAM_SECONDS));
    json_object_set_new(limits, "findScanMax", json_integer(FERRY_QUEUE_FIND_SCAN_DEFAULT));
    json_object_set_new(limits, "tasksRunningMax", json_integer(FERRY__ADMIN_TASKS_RUNNING_MAX));
    char prefix[4 * FERRY_QUEUE_NAME_MAX + 16];
    out->json = json_object();
    json_object_set_new(out->json, "version", json_string(ferry_version()));
    json_object_set_new(out->json, "bullmq", json_string(FERRY_BULLMQ_VERSION));
    json_object_set_new(out->json, "readOnly", json_boolean(s->cfg.read_only));
    json_object_set_new(out->json, "readsNeedToken", json_boolean(s->require_read_token));
    json_object_set_new(out->json, "tokensConfigured", json_boolean(s->tokens != NULL));
    json_object_set_new(out->json, "database", json_boolean(s->database_url != NULL));
    json_object_set_new(out->json, "prefix",
                        json_string(ferryx_printable(s->prefix, prefix, sizeof prefix)));
    json_object_set_new(out->json, "limits", limits);
    return 0;
}

/* GET /api/whoami (any valid token, even when reads are open). */
static int whoami(ferry__admin_req *r, ferry__admin_resp *out) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    int scopes = 0;
    for (size_t i = 0; s->tokens && i < s->tokens->n; i++)
        if (strcmp(s->tokens->items[i].name, r->actor) == 0) scopes = s->tokens->items[i].scopes;
    json_t *list = json_array();
    json_array_append_new(list, json_string("read"));
    if (scopes & FERRY_ADMIN_SCOPE_ACT) json_array_append_new(list, json_string("act"));
    if (scopes & FERRY_ADMIN_SCOPE_REDRIVE) json_array_append_new(list, json_string("redrive"));
    /* token names are [A-Za-z0-9._@-] (ferry_admin_tokens_parse) */
    out->json = json_pack("{s:s,s:o}", "actor", r->actor, "scopes", list);
    return 0;
}

const ferry__admin_route ferry__admin_routes_builtin[] = {
    {"GET", "/healthz", FERRY__ADMIN_SCOPE_NONE, healthz},
    {"GET", "/readyz", FERRY__ADMIN_SCOPE_NONE, readyz},
    {"GET", "/metrics", FERRY__ADMIN_SCOPE_READ, metrics},
    {"GET", "/api/info", FERRY__ADMIN_SCOPE_NONE, info},
    {"GET", "/api/whoami", FERRY__ADMIN_SCOPE_TOKEN, whoami},
    {NULL, NULL, 0, NULL},
};
