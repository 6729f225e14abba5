/* demo_reconcile.c - `shop-demo reconcile`: the end of `make demo`.
 *
 * Waits until the outbox is published and the queues are empty, then sets what the providers
 * really did (shop-fakes' ledgers: captures, voids, shipments, emails) against what the
 * database says happened, order by order: captured exactly once, cancelled ones voided and
 * never captured or shipped, shipped exactly once, points awarded once, one confirmation
 * email per order, one email per task assignment, every poison event a dead letter and no
 * other dead letter. Whatever should exist and does not is counted as lost, whatever
 * happened twice as double; both must be 0. */
#include "demo.h"

#include "demo_redis.h"
#include "ex_http.h"
#include "ex_util.h"
#include "shop_common.h"

#include <ferry/outbox.h>
#include <ferry/queue.h>

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct rc_cfg {
    const char *db_url, *schema, *redis, *prefix, *fakes, *acks;
    const char *tf_schema, *tf_prefix, *tf_queue, *tf_template;
    long poison, timeout_s;
    long long since_ms;
    int wait_only;
} rc_cfg;

typedef struct tally {
    long lost, dbl;
} tally;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void problem(tally *t, int is_double, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(tally *t, int is_double, const char *fmt, ...) {
    if (is_double)
        t->dbl++;
    else
        t->lost++;
    if (t->lost + t->dbl <= 20) { /* the first ones in full, then only counted */
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        printf("  ! %s: %s\n", is_double ? "DOUBLE" : "LOST", msg);
    } else if (t->lost + t->dbl == 21) {
        printf("  ! ... (more: only counted from here)\n");
    }
}

/* ---- waiting for the system to drain ------------------------------------------------- */

static const char *const work_queues[] = {SHOP_Q_PAYMENTS, SHOP_Q_NOTIFICATIONS, SHOP_Q_SHIPPING,
                                          SHOP_Q_LOYALTY};

static long long pending_jobs(ferry_queue *q) {
    ferry_job_counts c;
    ferry_error e = {0};
    if (ferry_queue_counts(q, &c, &e) != 0) return -1;
    return c.waiting + c.active + c.delayed + c.prioritized + c.paused + c.waiting_children;
}

static long long unpublished(PGconn *db, const char *schema) {
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = schema;
    ferry_outbox_status *st = NULL;
    ferry_error e = {0};
    if (ferry_outbox_status_get(db, &oo, NULL, &st, &e) != 0) return -1;
    long long n = st->unpublished - st->quarantined;
    ferry_outbox_status_free(st);
    return n;
}

static long long unsettled_payments(PGconn *db) {
    PGresult *r = ex_pg_exec_params(db,
                                    "SELECT count(*) FROM payments WHERE status IN "
                                    "('authorized','capturing','voiding')",
                                    0, NULL, NULL, NULL, NULL, 0);
    long long n = PQresultStatus(r) == PGRES_TUPLES_OK ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return n;
}

/* Returns 0 when drained, with *drained_ms = when it was first seen idle; -1 when the time
 * ran out (what is left was printed). */
static int wait_drained(const rc_cfg *cfg, PGconn *db, ferry_queue **qs, size_t nq,
                        long long *drained_ms) {
    long long deadline = now_ms() + cfg->timeout_s * 1000, next_report = now_ms() + 5000;
    int calm = 0;
    *drained_ms = now_ms();
    for (;;) {
        long long ob = unpublished(db, cfg->schema);
        long long tob = cfg->tf_schema ? unpublished(db, cfg->tf_schema) : 0;
        long long pay = unsettled_payments(db), jobs = 0;
        char per[512] = "";
        size_t off = 0;
        for (size_t i = 0; i < nq; i++) {
            long long n = pending_jobs(qs[i]);
            jobs += n < 0 ? 1 : n;
            if (n && off < sizeof per - 64)
                off += (size_t)snprintf(per + off, sizeof per - off, " %s %lld",
                                        ferry_queue_name(qs[i]), n);
        }
        int idle = ob == 0 && tob == 0 && pay == 0 && jobs == 0;
        if (idle && calm == 0) *drained_ms = now_ms();
        calm = idle ? calm + 1 : 0;
        if (calm >= 3) return 0; /* three looks in a row, a second apart */
        if (now_ms() > deadline) {
            printf("reconcile: NOT drained after %ld s: outbox %lld unpublished, payments "
                   "unsettled %lld, jobs pending%s\n",
                   cfg->timeout_s, ob + tob, pay, *per ? per : " 0");
            return -1;
        }
        if (now_ms() >= next_report) {
            printf("reconcile: waiting: outbox %lld unpublished, payments unsettled %lld, jobs "
                   "pending%s\n",
                   ob + tob, pay, *per ? per : " 0");
            fflush(stdout);
            next_report = now_ms() + 5000;
        }
        if (ex_sleep_ms(idle ? 1000 : 500)) return -1;
    }
}

/* ---- reading --------------------------------------------------------------------------- */

static json_t *get_ledger(const char *fakes) {
    char url[1024];
    snprintf(url, sizeof url, "%s/ledger", fakes);
    ex_http_request req = {.url = url, .timeout_ms = 30000};
    ex_http_response res;
    json_t *j = NULL;
    if (ex_http_do(&req, &res) == 0 && res.status == 200)
        j = json_loads(res.body, 0, NULL);
    else
        fprintf(stderr, "shop-demo reconcile: GET %s: %s\n", url,
                res.transport == EX_HTTP_OK ? "not a 200 answer" : res.error);
    ex_http_response_free(&res);
    return j;
}

/* counts[key]++ in a JSON object used as a map. */
static void bump(json_t *map, const char *key) {
    if (!key) return;
    json_t *v = json_object_get(map, key);
    json_object_set_new(map, key, json_integer((v ? json_integer_value(v) : 0) + 1));
}

static long long count_of(json_t *map, const char *key) {
    json_t *v = json_object_get(map, key);
    return v ? json_integer_value(v) : 0;
}

static long long duplicated_events(redisContext *rc, const char *prefix, const char *queue) {
    if (!rc) return -1;
    char key[512], start[64] = "-";
    snprintf(key, sizeof key, "%s:%s:events", prefix, queue);
    long long n = 0;
    for (;;) {
        redisReply *r = redisCommand(rc, "XRANGE %s %s + COUNT 5000", key, start);
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            return -1;
        }
        size_t got = r->elements;
        for (size_t i = 0; i < got; i++) {
            redisReply *e = r->element[i];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 2) continue;
            redisReply *f = e->element[1];
            if (f->type == REDIS_REPLY_ARRAY && f->elements >= 2 &&
                !strcmp(f->element[1]->str ? f->element[1]->str : "", "duplicated"))
                n++;
            if (i + 1 == got) snprintf(start, sizeof start, "(%s", e->element[0]->str);
        }
        freeReplyObject(r);
        if (got < 5000) return n;
    }
}

/* ---- the reconciliation ----------------------------------------------------------------- */

static PGresult *q0(PGconn *db, const char *sql) {
    PGresult *r = ex_pg_exec_params(db, sql, 0, NULL, NULL, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "shop-demo reconcile: %s: %s", sql, PQerrorMessage(db));
        PQclear(r);
        return NULL;
    }
    return r;
}

static int reconcile(const rc_cfg *cfg, PGconn *db, redisContext *rds, json_t *ledger,
                     long long drained_ms) {
    tally t = {0, 0};
    json_t *gw = json_object_get(ledger, "gateway"), *car = json_object_get(ledger, "carrier");
    json_t *mail = json_object_get(ledger, "mailer"), *faults = json_object_get(ledger, "faults");
    json_t *captures = json_object(), *capture_ids = json_object(), *voids = json_object();
    json_t *ships = json_object(), *emails = json_object(), *auth_refs = json_object();
    json_t *keys_seen = json_object();
    size_t i;
    json_t *e;
    long long task_emails = 0, task_email_dupes = 0;
    json_array_foreach(json_object_get(gw, "captures"), i, e) {
        const char *ref = json_string_value(json_object_get(e, "reference"));
        bump(captures, ref);
        if (ref) json_object_set(capture_ids, ref, json_object_get(e, "captureId"));
    }
    json_array_foreach(json_object_get(gw, "voids"), i, e)
        bump(voids, json_string_value(json_object_get(e, "reference")));
    json_array_foreach(json_object_get(gw, "authorizations"), i, e)
        bump(auth_refs, json_string_value(json_object_get(e, "reference")));
    json_array_foreach(json_object_get(car, "shipments"), i, e)
        bump(ships, json_string_value(json_object_get(e, "reference")));
    json_array_foreach(json_object_get(mail, "messages"), i, e) {
        const char *tpl = json_string_value(json_object_get(e, "template"));
        if (tpl && !strcmp(tpl, "order-confirmation"))
            bump(emails, json_string_value(json_object_get(e, "reference")));
        else if (tpl && cfg->tf_template && !strcmp(tpl, cfg->tf_template)) {
            const char *key = json_string_value(json_object_get(e, "idempotencyKey"));
            task_emails++;
            if (key && json_object_get(keys_seen, key)) task_email_dupes++;
            bump(keys_seen, key);
        }
    }

    /* orders as the database has them */
    PGresult *orders =
        q0(db, "SELECT o.id, o.status, o.customer_id, p.status, p.amount, "
               "coalesce(p.capture_id, ''), coalesce(s.tracking_number, ''), "
               "(SELECT count(*) FROM order_notifications n WHERE n.order_id = o.id) "
               "FROM orders o JOIN payments p ON p.order_id = o.id "
               "LEFT JOIN shipments s ON s.order_id = o.id");
    PGresult *events = q0(db, "SELECT aggregate_id::text, count(*) FROM outbox_events "
                              "WHERE topic = 'payment.captured' GROUP BY 1");
    if (!orders || !events) return 1;
    json_t *captured_events = json_object(), *db_orders = json_object(),
           *expect_points = json_object();
    for (int r = 0; r < PQntuples(events); r++)
        json_object_set_new(captured_events, PQgetvalue(events, r, 0),
                            json_integer(atoll(PQgetvalue(events, r, 1))));
    long placed = PQntuples(orders), captured = 0, voided = 0, failed = 0, shipped = 0;
    for (int r = 0; r < placed; r++) {
        const char *id = PQgetvalue(orders, r, 0), *ostatus = PQgetvalue(orders, r, 1);
        const char *cust = PQgetvalue(orders, r, 2), *pstatus = PQgetvalue(orders, r, 3);
        long long amount = atoll(PQgetvalue(orders, r, 4));
        const char *cap_id = PQgetvalue(orders, r, 5), *tracking = PQgetvalue(orders, r, 6);
        long long notes = atoll(PQgetvalue(orders, r, 7));
        json_object_set_new(db_orders, id, json_true());
        long long ncap = count_of(captures, id), nship = count_of(ships, id);
        long long nmail = count_of(emails, id), nev = count_of(captured_events, id);
        if (!strcmp(pstatus, "captured")) {
            captured++;
            if (ncap == 0)
                problem(&t, 0, "order %s is captured but the gateway has no capture", id);
            if (ncap > 1) problem(&t, 1, "order %s captured %lld times at the gateway", id, ncap);
            const char *lid = json_string_value(json_object_get(capture_ids, id));
            if (ncap == 1 && (!lid || strcmp(lid, cap_id)))
                problem(&t, 0, "order %s: the payment's capture id is not the gateway's", id);
            if (nev != 1)
                problem(&t, nev > 1, "order %s has %lld payment.captured events", id, nev);
            if (nship == 0 || !*tracking) problem(&t, 0, "order %s captured but not shipped", id);
            if (nship > 1) problem(&t, 1, "order %s shipped %lld times by the carrier", id, nship);
            if (nship >= 1) shipped++;
            json_t *pts = json_object_get(expect_points, cust);
            json_object_set_new(expect_points, cust,
                                json_integer((pts ? json_integer_value(pts) : 0) + amount / 10000));
        } else if (!strcmp(pstatus, "voided")) {
            voided++;
            if (strcmp(ostatus, "cancelled"))
                problem(&t, 0, "order %s voided but not cancelled", id);
            if (count_of(voids, id) == 0)
                problem(&t, 0, "order %s voided but the gateway has no void", id);
            if (ncap) problem(&t, 1, "cancelled order %s was captured %lld times", id, ncap);
            if (nship || *tracking)
                problem(&t, 1, "cancelled order %s was shipped %lld times", id, nship);
            if (nev) problem(&t, 1, "cancelled order %s has %lld payment.captured events", id, nev);
        } else {
            failed++;
            problem(&t, 0, "order %s ended with payment %s", id, pstatus);
        }
        if (nmail == 0 || notes == 0) problem(&t, 0, "order %s has no confirmation email", id);
        if (nmail > 1) problem(&t, 1, "order %s got %lld confirmation emails", id, nmail);
    }
    /* the providers did nothing for orders the shop does not have */
    const char *ref;
    json_t *v;
    long long orphan_caps = 0, orphan_ships = 0, abandoned = 0;
    json_object_foreach(captures, ref, v) if (!json_object_get(db_orders, ref)) orphan_caps++;
    json_object_foreach(ships, ref, v) if (!json_object_get(db_orders, ref)) orphan_ships++;
    json_object_foreach(auth_refs, ref, v) if (!json_object_get(db_orders, ref)) abandoned++;
    if (orphan_caps)
        problem(&t, 1, "%lld captures at the gateway for orders the shop does not have",
                orphan_caps);
    if (orphan_ships)
        problem(&t, 1, "%lld shipments for orders the shop does not have", orphan_ships);

    /* points */
    PGresult *pts = q0(db, "SELECT customer_id::text, points FROM loyalty_accounts");
    if (!pts) return 1;
    long long points_total = 0, points_expected = 0;
    json_t *have = json_object();
    for (int r = 0; r < PQntuples(pts); r++)
        json_object_set_new(have, PQgetvalue(pts, r, 0),
                            json_integer(atoll(PQgetvalue(pts, r, 1))));
    json_object_foreach(expect_points, ref, v) {
        long long want = json_integer_value(v), got = count_of(have, ref);
        points_expected += want;
        if (got < want) problem(&t, 0, "customer %s is missing %lld points", ref, want - got);
    }
    json_object_foreach(have, ref, v) {
        long long got = json_integer_value(v), want = count_of(expect_points, ref);
        points_total += got;
        if (got > want) problem(&t, 1, "customer %s has %lld points too many", ref, got - want);
    }

    /* acknowledged to the clients */
    long acked = 0, acked_missing = 0, tasks_acked = 0;
    int bad_acks = 0;
    if (cfg->acks) {
        FILE *f = fopen(cfg->acks, "r");
        char line[512], kind[16], id[128], what[64];
        while (f && fgets(line, sizeof line, f)) {
            if (sscanf(line, "%15s %127s %63s", kind, id, what) != 3 ||
                (strcmp(kind, "order") && strcmp(kind, "task"))) {
                fprintf(stderr,
                        "shop-demo reconcile: %s: not a line `shop-demo load --out` "
                        "writes: %.80s",
                        cfg->acks, line);
                bad_acks = 1;
                continue;
            }
            if (!strcmp(kind, "order") && !strcmp(what, "placed")) {
                acked++;
                if (!json_object_get(db_orders, id)) {
                    acked_missing++;
                    problem(&t, 0, "order %s was acknowledged (201) but is not in the database",
                            id);
                }
            } else if (!strcmp(kind, "task") && !strcmp(what, "assigned")) {
                tasks_acked++;
            }
        }
        if (f)
            fclose(f);
        else
            fprintf(stderr, "shop-demo reconcile: cannot read %s\n", cfg->acks);
    }
    long long task_deliveries = -1, task_dupes = -1;
    if (cfg->tf_schema) {
        if (task_emails < tasks_acked)
            problem(&t, 0, "%lld task assignments without their email", tasks_acked - task_emails);
        if (task_email_dupes || task_emails > tasks_acked)
            problem(&t, 1, "%lld task emails too many",
                    task_email_dupes > task_emails - tasks_acked ? task_email_dupes
                                                                 : task_emails - tasks_acked);
        char sql[512];
        char *qs = PQescapeIdentifier(db, cfg->tf_schema, strlen(cfg->tf_schema));
        snprintf(sql, sizeof sql,
                 "SELECT count(*), coalesce(sum(duplicates), 0) FROM %s.notification_deliveries",
                 qs);
        PQfreemem(qs);
        PGresult *r = q0(db, sql);
        if (r) {
            task_deliveries = atoll(PQgetvalue(r, 0, 0));
            task_dupes = atoll(PQgetvalue(r, 0, 1));
            PQclear(r);
        }
        if (task_deliveries >= 0 && task_deliveries != tasks_acked)
            problem(&t, task_deliveries > tasks_acked,
                    "%lld delivery rows for %ld acknowledged task assignments", task_deliveries,
                    tasks_acked);
    }

    /* dead letters */
    char sql[1024];
    char *qs =
        cfg->tf_schema ? PQescapeIdentifier(db, cfg->tf_schema, strlen(cfg->tf_schema)) : NULL;
    snprintf(sql, sizeof sql,
             "SELECT queue, job_name, left(regexp_replace(error, '\\s+', ' ', 'g'), 110), "
             "count(*), count(*) FILTER (WHERE coalesce(data::text, data_text) LIKE "
             "'%%\"demoPoison\"%%') FROM (SELECT queue, job_name, error, data, data_text FROM "
             "dead_letters%s%s%s) d GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
             qs ? " UNION ALL SELECT queue, job_name, error, data, data_text FROM " : "",
             qs ? qs : "", qs ? ".dead_letters" : "");
    PQfreemem(qs);
    PGresult *dl = q0(db, sql);
    if (!dl) return 1;
    long long dead = 0, poison_seen = 0;
    for (int r = 0; r < PQntuples(dl); r++) {
        dead += atoll(PQgetvalue(dl, r, 3));
        poison_seen += atoll(PQgetvalue(dl, r, 4));
    }
    if (poison_seen < cfg->poison)
        problem(&t, 0, "%lld poison events did not reach the dead letters",
                (long long)cfg->poison - poison_seen);
    if (dead > poison_seen)
        problem(&t, 0, "%lld jobs failed for good that were not poison (see the dead letters)",
                dead - poison_seen);

    /* duplicates absorbed */
    PGresult *dups = q0(db, "SELECT how, count(*) FROM shop_duplicates GROUP BY 1 ORDER BY 1");
    long long by_jobid = 0;
    for (size_t k = 0; k < sizeof work_queues / sizeof *work_queues; k++) {
        long long n = duplicated_events(rds, cfg->prefix, work_queues[k]);
        if (n > 0) by_jobid += n;
    }
    if (cfg->tf_prefix && cfg->tf_queue) {
        long long n = duplicated_events(rds, cfg->tf_prefix, cfg->tf_queue);
        if (n > 0) by_jobid += n;
    }

    /* the report */
    double secs = cfg->since_ms ? (double)(drained_ms - cfg->since_ms) / 1000.0 : 0;
    printf("\n== reconciliation: the providers' ledgers against the database\n");
    printf("orders placed                      %6ld", placed);
    if (cfg->acks)
        printf("   (%ld acknowledged to clients, %ld of them missing)", acked, acked_missing);
    printf("\ncaptured exactly once              %6ld   (gateway captures %zu)\n", captured,
           json_array_size(json_object_get(gw, "captures")));
    printf("cancelled and voided               %6ld   (never captured, never shipped)\n", voided);
    printf("shipped exactly once               %6ld   (carrier shipments %zu)\n", shipped,
           json_array_size(json_object_get(car, "shipments")));
    printf("points awarded exactly once        %6lld   points over %zu customers (expected %lld)\n",
           points_total, json_object_size(have), points_expected);
    printf("confirmation emails exactly once   %6zu\n", json_object_size(emails));
    if (cfg->tf_schema)
        printf("task emails exactly once           %6lld   (%ld assignments acknowledged, %lld "
               "delivery rows)\n",
               task_emails, tasks_acked, task_deliveries);
    /* each layer, 0 included: shop_duplicates' `how` (examples/shop/worker) */
    static const char *const hows[][2] = {
        {"inbox", "by the inbox (loyalty's processed_messages)"},
        {"stored-result", "by stored results (the row said: done)"},
        {"remote-state", "by remote state (the gateway said: captured)"},
        {"lookup", "by carrier lookups (the shipment existed)"}};
    printf("duplicates absorbed\n");
    printf("  %-50s %lld\n", "by jobId (events the relay published again)", by_jobid);
    for (size_t k = 0; k < sizeof hows / sizeof *hows; k++) {
        long long n = 0;
        for (int r = 0; dups && r < PQntuples(dups); r++)
            if (!strcmp(PQgetvalue(dups, r, 0), hows[k][0])) n = atoll(PQgetvalue(dups, r, 1));
        printf("  %-50s %lld\n", hows[k][1], n);
    }
    if (task_dupes >= 0) printf("  %-50s %lld\n", "by taskflow's delivery rows", task_dupes);
    printf("  %-50s gateway %lld, mailer %lld\n", "by the providers' idempotency keys",
           (long long)json_integer_value(json_object_get(gw, "replays")),
           (long long)json_integer_value(json_object_get(mail, "replays")));
    printf(
        "faults injected                    errors %lld, slow %lld, throttled %lld, dropped %lld\n",
        (long long)json_integer_value(json_object_get(faults, "errors")),
        (long long)json_integer_value(json_object_get(faults, "slow")),
        (long long)json_integer_value(json_object_get(faults, "throttled")),
        (long long)json_integer_value(json_object_get(faults, "dropped")));
    printf("authorizations the api gave up on  %6lld   (no order: they expire at the gateway)\n",
           abandoned);
    printf("dead letters                       %6lld   (%lld poison, %ld expected)\n", dead,
           poison_seen, cfg->poison);
    for (int r = 0; r < PQntuples(dl); r++)
        printf("  %s/%s x%s: %s\n", PQgetvalue(dl, r, 0), PQgetvalue(dl, r, 1),
               PQgetvalue(dl, r, 3), PQgetvalue(dl, r, 2));
    if (failed) printf("orders with a failed payment       %6ld\n", failed);
    printf("lost %ld\n", t.lost);
    printf("double %ld\n", t.dbl);
    if (secs > 0)
        printf("time %.1f s from the first order to drained: %.1f orders/s end to end\n", secs,
               (double)placed / secs);
    PQclear(orders);
    PQclear(events);
    PQclear(pts);
    PQclear(dl);
    PQclear(dups);
    json_decref(captures);
    json_decref(capture_ids);
    json_decref(voids);
    json_decref(ships);
    json_decref(emails);
    json_decref(auth_refs);
    json_decref(keys_seen);
    json_decref(captured_events);
    json_decref(db_orders);
    json_decref(expect_points);
    json_decref(have);
    return t.lost || t.dbl || bad_acks ? 1 : 0;
}

static const char reconcile_usage[] =
    "usage: shop-demo reconcile --database URL --redis URL --fakes URL [--schema public]\n"
    "         [--prefix shop] [--acks FILE] [--poison N] [--timeout-s 150] [--since-ms MS]\n"
    "         [--taskflow-schema S --taskflow-prefix P --taskflow-queue Q --taskflow-template T]\n"
    "         [--wait-only]\n"
    "  --fakes URL       shop-fakes' base URL (its GET /ledger is read)\n"
    "  --acks FILE       what `shop-demo load --out FILE` recorded\n"
    "  --poison N        dead letters `shop-demo poison` said must follow\n"
    "  --timeout-s N     longest wait for the outbox and the queues to drain\n"
    "  --since-ms MS     when the run started (Unix ms), for the time and orders/s lines\n"
    "  --wait-only       only wait for the drain (exit 0 once drained, 1 at the timeout)\n"
    "Exit 0 when everything reconciles (lost 0, double 0, every poison a dead letter and no\n"
    "other), 1 otherwise.\n";

int demo_reconcile(int argc, char **argv) {
    rc_cfg cfg = {.db_url = ex_opt(NULL, "DATABASE_URL", NULL),
                  .redis = ex_opt(NULL, "REDIS_URL", NULL),
                  .schema = "public",
                  .prefix = SHOP_PREFIX,
                  .timeout_s = 150};
    static const struct option opts[] = {{"database", required_argument, 0, 'd'},
                                         {"redis", required_argument, 0, 'r'},
                                         {"schema", required_argument, 0, 's'},
                                         {"prefix", required_argument, 0, 'p'},
                                         {"fakes", required_argument, 0, 'f'},
                                         {"acks", required_argument, 0, 'a'},
                                         {"poison", required_argument, 0, 'P'},
                                         {"timeout-s", required_argument, 0, 't'},
                                         {"since-ms", required_argument, 0, 'S'},
                                         {"taskflow-schema", required_argument, 0, 'T'},
                                         {"taskflow-prefix", required_argument, 0, 'X'},
                                         {"taskflow-queue", required_argument, 0, 'Q'},
                                         {"taskflow-template", required_argument, 0, 'M'},
                                         {"wait-only", no_argument, 0, 'W'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    optind = 1;
    int ch;
    long v;
    char err[512];
    while ((ch = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'd':
            cfg.db_url = optarg;
            break;
        case 'r':
            cfg.redis = optarg;
            break;
        case 's':
            cfg.schema = optarg;
            break;
        case 'p':
            cfg.prefix = optarg;
            break;
        case 'f':
            cfg.fakes = optarg;
            break;
        case 'a':
            cfg.acks = optarg;
            break;
        case 'T':
            cfg.tf_schema = optarg;
            break;
        case 'X':
            cfg.tf_prefix = optarg;
            break;
        case 'Q':
            cfg.tf_queue = optarg;
            break;
        case 'M':
            cfg.tf_template = optarg;
            break;
        case 'W':
            cfg.wait_only = 1;
            break;
        case 'P':
        case 't':
        case 'S':
            if (ex_parse_long(optarg, 0, ch == 'S' ? 0x7fffffffffffffffL : 1000000,
                              ch == 'P'   ? "--poison"
                              : ch == 't' ? "--timeout-s"
                                          : "--since-ms",
                              &v, err, sizeof err))
                return demo_usage_error("reconcile", "%s", err);
            if (ch == 'P') cfg.poison = v;
            if (ch == 't') cfg.timeout_s = v;
            if (ch == 'S') cfg.since_ms = v;
            break;
        case 'h':
            fputs(reconcile_usage, stdout);
            return 0;
        default:
            return demo_usage_error("reconcile", "bad option");
        }
    }
    if (!cfg.db_url || !cfg.redis || !cfg.fakes)
        return demo_usage_error("reconcile", "--database, --redis and --fakes are required");
    if (cfg.tf_schema && !cfg.tf_template)
        return demo_usage_error("reconcile", "--taskflow-schema needs --taskflow-template");
    if (cfg.acks && !cfg.wait_only) {
        FILE *f = fopen(cfg.acks, "r");
        if (!f) {
            fprintf(stderr, "shop-demo reconcile: --acks %s: %s\n", cfg.acks, strerror(errno));
            return 1;
        }
        fclose(f);
    }
    PGconn *db = ex_pg_connect(cfg.db_url, cfg.schema, 5000, 60000, err, sizeof err);
    if (!db) {
        fprintf(stderr, "shop-demo reconcile: %s\n", err);
        return 1;
    }
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = cfg.redis;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &ro;
    qo.skip_meta_update = 1;
    ferry_queue *qs[8] = {0};
    size_t nq = 0;
    ferry_error fe = {0};
    for (size_t k = 0; k < sizeof work_queues / sizeof *work_queues; k++) {
        qo.prefix = cfg.prefix;
        if (ferry_queue_open(work_queues[k], &qo, &qs[nq], &fe) != 0) {
            fprintf(stderr, "shop-demo reconcile: queue %s: %s\n", work_queues[k], fe.message);
            return 1;
        }
        nq++;
    }
    if (cfg.tf_prefix && cfg.tf_queue) {
        qo.prefix = cfg.tf_prefix;
        if (ferry_queue_open(cfg.tf_queue, &qo, &qs[nq], &fe) != 0) {
            fprintf(stderr, "shop-demo reconcile: queue %s: %s\n", cfg.tf_queue, fe.message);
            return 1;
        }
        nq++;
    }
    long long drained_ms = 0;
    int drained = wait_drained(&cfg, db, qs, nq, &drained_ms);
    for (size_t k = 0; k < nq; k++)
        ferry_queue_close(qs[k]);
    if (cfg.wait_only) {
        PQfinish(db);
        if (drained == 0) printf("reconcile: drained\n");
        return drained == 0 ? 0 : 1;
    }
    json_t *ledger = get_ledger(cfg.fakes);
    redisContext *rds = demo_redis_connect(cfg.redis, err, sizeof err);
    if (!rds) fprintf(stderr, "shop-demo reconcile: %s (duplicates by jobId not counted)\n", err);
    int rc = ledger ? reconcile(&cfg, db, rds, ledger, drained_ms) : 1;
    if (drained != 0) {
        printf("reconcile: the system did not drain in time: FAILED\n");
        rc = 1;
    }
    printf("%s\n", rc ? "reconcile: FAILED" : "reconcile: OK");
    json_decref(ledger);
    if (rds) redisFree(rds);
    PQfinish(db);
    return rc;
}
