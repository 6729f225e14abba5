/* relay_retention.c - the retention task: published rows older than retention_s are
 * deleted in bounded batches. Every relay runs this thread on its own connection (so a long
 * delete never delays publishing), but only one deletes at a time (session advisory lock)
 * and only once per retention interval across all of them (the claim on the ferry_tasks
 * row), so N replicas behave as one scheduled job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outbox/relay/relay_internal.h"
#include "pg/migrations.h"
#include "util/clock.h"
#include "util/error.h"

#define TASK_NAME "outbox-retention"
#define FIRST_RUN_DELAY_MS 1000 /* let the relay settle before the first run */
#define RECONNECT_MS 30000

static int task_exec(ferry_relay *r, ferry__pgc *pg, const char *what, const char *sql, int n,
                     const char *const *params, PGresult **out, ferry_error *err) {
    return ferry__pgc_exec(pg, ferry__relay_deadline(r), what, NULL, sql, n, params, out, err);
}

/* Claim this interval's run: 1 claimed, 0 someone ran it recently, <0 error. */
static int claim(ferry_relay *r, ferry__pgc *pg, ferry_error *err) {
    char sql[FERRY__QSCHEMA_MAX + 256], interval[32];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.ferry_tasks (name) VALUES ('" TASK_NAME "') ON CONFLICT DO NOTHING",
             r->qs);
    int rc = task_exec(r, pg, "retention claim", sql, 0, NULL, NULL, err);
    if (rc) return rc;
    snprintf(interval, sizeof interval, "%d", r->retention_interval_ms);
    snprintf(
        sql, sizeof sql,
        "UPDATE %s.ferry_tasks SET last_run_at = now() WHERE name = '" TASK_NAME "' AND "
        "(last_run_at IS NULL OR last_run_at <= now() - make_interval(secs => $1::float8 / 1000))",
        r->qs);
    const char *params[] = {interval};
    PGresult *res = NULL;
    rc = task_exec(r, pg, "retention claim", sql, 1, params, &res, err);
    if (rc) return rc;
    int claimed = atoi(PQcmdTuples(res)) == 1;
    PQclear(res);
    return claimed;
}

static void run_once(ferry_relay *r, ferry__pgc *pg) {
    ferry_error e = {0};
    const char *lock_params[] = {r->schema};
    PGresult *res = NULL;
    if (task_exec(r, pg, "retention lock",
                  "SELECT pg_try_advisory_lock(" FERRY__LOCK_RETENTION_STR ", hashtext($1))", 1,
                  lock_params, &res, &e)) {
        ferry__relay_log(r, FERRY_LOG_WARN, "relay: retention: %s", e.message);
        return;
    }
    int locked = !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    if (!locked) return; /* another relay is deleting right now */
    int c = claim(r, pg, &e);
    if (c < 0) ferry__relay_log(r, FERRY_LOG_WARN, "relay: retention: %s", e.message);
    if (c == 1) {
        char sql[2 * FERRY__QSCHEMA_MAX + 320], age[32], lim[16];
        ferry__outbox_cleanup_sql(r->qs, sql, sizeof sql);
        snprintf(age, sizeof age, "%lld", r->retention_s);
        snprintf(lim, sizeof lim, "%d", r->retention_batch);
        const char *params[] = {age, lim};
        long long total = 0;
        int failed = 0;
        while (!atomic_load(&r->stopping)) {
            if (task_exec(r, pg, "retention delete", sql, 2, params, &res, &e)) {
                ferry__relay_log(r, FERRY_LOG_WARN, "relay: retention: %s", e.message);
                failed = 1;
                break;
            }
            long long n = atoll(PQcmdTuples(res));
            PQclear(res);
            total += n;
            pthread_mutex_lock(&r->mu);
            r->stats.retention_deleted += (unsigned long long)n;
            pthread_mutex_unlock(&r->mu);
            if (n < r->retention_batch) break;
        }
        if (total || failed) {
            ferry_relay_event ev = {.kind = FERRY_RELAY_EVENT_RETENTION,
                                    .level = failed ? FERRY_LOG_WARN : FERRY_LOG_INFO,
                                    .count = total,
                                    .older_than_s = r->retention_s,
                                    .code = failed ? e.code : 0,
                                    .reason = failed ? e.message : NULL};
            ferry__relay_event(r, &ev,
                               "relay: retention: deleted %lld published row(s) older than %lld "
                               "s%s",
                               total, r->retention_s, failed ? " before failing" : "");
        }
        char result[64], usql[FERRY__QSCHEMA_MAX + 128];
        snprintf(result, sizeof result, "%s %lld rows", failed ? "failed after" : "deleted", total);
        snprintf(usql, sizeof usql,
                 "UPDATE %s.ferry_tasks SET last_result = $1 WHERE name = '" TASK_NAME "'", r->qs);
        const char *up[] = {result};
        if (!pg->broken) task_exec(r, pg, "retention result", usql, 1, up, NULL, &e);
    }
    if (!pg->broken)
        task_exec(r, pg, "retention unlock",
                  "SELECT pg_advisory_unlock(" FERRY__LOCK_RETENTION_STR ", hashtext($1))", 1,
                  lock_params, NULL, &e);
}

static void *retention_main(void *arg) {
    ferry_relay *r = arg;
    ferry__pgc pg = {0};
    ferry__pg_session s;
    ferry__relay_session(r, &s, "ferry relay retention");
    int64_t next = ferry__mono_ms() + FIRST_RUN_DELAY_MS;
    while (ferry__relay_wait(r, -1, next) != 1) {
        if (!pg.conn || pg.broken) {
            ferry_error e = {0};
            ferry__pgc_close(&pg);
            if (ferry__pgc_connect(&pg, &s, &e)) {
                ferry__relay_log(r, FERRY_LOG_WARN, "relay: retention: database: %s", e.message);
                int wait = r->retention_interval_ms < RECONNECT_MS ? r->retention_interval_ms
                                                                   : RECONNECT_MS;
                next = ferry__mono_ms() + wait;
                continue;
            }
        }
        run_once(r, &pg);
        next = ferry__mono_ms() + r->retention_interval_ms;
    }
    ferry__pgc_close(&pg);
    return NULL;
}

int ferry__relay_retention_start(ferry_relay *r, pthread_t *thread, ferry_error *err) {
    if (pthread_create(thread, NULL, retention_main, r) != 0)
        return ferry__err(err, FERRY_ENOMEM, "relay: cannot start the retention thread");
    return 0;
}
