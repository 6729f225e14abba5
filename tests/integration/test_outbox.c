/* test_outbox.c - the outbox against real PostgreSQL and Redis: migrations (concurrent,
 * idempotent, adopting a table the application made), the append API inside the caller's
 * transaction, and the real `ferry relay` binary: commit -> job, rollback -> nothing, fan-out, the
 * envelope, NOTIFY wake-up (poll interval set far beyond the test's waits), unknown topics
 * left and reported, oversized rows quarantined, `ferry outbox status`, bad routes files,
 * start-up failures, SIGTERM, and the fault-injection crash between adding jobs and
 * committing (duplicates absorbed by jobId). */
#include <jansson.h>
#include <pthread.h>

#include "outbox/relay/relay_internal.h"
#include "pg/pg.h"
#include "support/ob.h"
#include "util/clock.h"

static PGconn *db;
static ferry_conn *rds;

OB_GROUP_FIXTURE(&db, &rds)

/* ---- migrations ---------------------------------------------------------------------- */

typedef struct mig_thread {
    const char *schema;
    int applied, rc;
    char msg[FERRY_ERROR_MESSAGE_MAX];
} mig_thread;

static void *migrate_thread(void *arg) {
    mig_thread *t = arg;
    PGconn *c = PQconnectdb(th_env_require("DATABASE_URL"));
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    ferry_migrate_options mo = {.schema = t->schema};
    ferry_error e = {0};
    t->rc = ferry_outbox_migrate(c, &mo, &t->applied, &e);
    memcpy(t->msg, e.message, sizeof t->msg);
    PQfinish(c);
    return NULL;
}

static void test_migrate_concurrent_and_idempotent(void **state) {
    (void)state;
    char schema[32];
    snprintf(schema, sizeof schema, "obm%d", (int)getpid());
    PQclear(ob_sql(db, "DROP SCHEMA IF EXISTS %s CASCADE", schema));
    mig_thread t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (mig_thread){.schema = schema};
        pthread_create(&th[i], NULL, migrate_thread, &t[i]);
    }
    int total = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        if (t[i].rc) fail_msg("replica %d: %s", i, t[i].msg);
        total += t[i].applied;
    }
    /* one replica applied everything, the others found nothing to do */
    assert_int_equal(total, ferry_outbox_schema_version());
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.ferry_schema_migrations", schema),
                     ferry_outbox_schema_version());
    ferry_migrate_options mo = {.schema = schema};
    ferry_error e = {0};
    int applied = -1;
    assert_int_equal(ferry_outbox_migrate(db, &mo, &applied, &e), 0);
    assert_int_equal(applied, 0);
    mo.dry_run = 1;
    assert_int_equal(ferry_outbox_migrate(db, &mo, &applied, &e), 0);
    assert_int_equal(applied, 0);
    /* a transaction open on the connection is refused */
    ob_exec(db, "BEGIN");
    assert_int_equal(ferry_outbox_migrate(db, &mo, &applied, &e), FERRY_ESTATE);
    ob_exec(db, "ROLLBACK");
    PQclear(ob_sql(db, "DROP SCHEMA %s CASCADE", schema));
}

/* An application made the table (and index) itself; migrate adopts it. */
static void test_migrate_adopts_seed_table(void **state) {
    (void)state;
    char schema[32];
    snprintf(schema, sizeof schema, "obs%d", (int)getpid());
    PQclear(ob_sql(db, "DROP SCHEMA IF EXISTS %s CASCADE", schema));
    PQclear(ob_sql(
        db,
        "CREATE SCHEMA %s; CREATE TABLE %s.outbox_events (id uuid PRIMARY KEY, topic text NOT "
        "NULL, aggregate_id uuid NOT NULL, payload jsonb NOT NULL, trace_id text, created_at "
        "timestamptz NOT NULL DEFAULT now(), published_at timestamptz); CREATE INDEX "
        "outbox_unpublished ON %s.outbox_events (created_at) WHERE published_at IS NULL; "
        "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload) VALUES "
        "(gen_random_uuid(), 'order.placed', gen_random_uuid(), '{\"orderId\":1}')",
        schema, schema, schema, schema));
    /* dry run lists everything, changes nothing */
    ferry_migrate_options mo = {.schema = schema, .dry_run = 1};
    ferry_error e = {0};
    int n = 0;
    assert_int_equal(ferry_outbox_migrate(db, &mo, &n, &e), 0);
    assert_int_equal(n, ferry_outbox_schema_version());
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                           "'%s'",
                           schema),
                     1);
    mo.dry_run = 0;
    if (ferry_outbox_migrate(db, &mo, &n, &e)) fail_msg("%s", e.message);
    assert_int_equal(n, ferry_outbox_schema_version());
    assert_int_equal(
        ob_ll(db,
              "SELECT count(*) FROM %s.outbox_events WHERE attempts = 0 AND last_error "
              "IS NULL AND payload->>'orderId' = '1'",
              schema),
        1);
    PQclear(ob_sql(db, "DROP SCHEMA %s CASCADE", schema));
}

/* The relay's claim (events of one transaction share created_at) reads outbox_unpublished
 * in (created_at, id) order with no sort of the whole group, also once the table has a
 * history of published rows (the planner then expects small created_at groups and would
 * take a narrower index plus an incremental sort if one existed): the real statement,
 * prepared, under a generic and a custom plan. */
static void test_claim_reads_index_order(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at, "
                   "published_at) SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(), "
                   "'{}', clock_timestamp(), clock_timestamp() FROM generate_series(1, 100000)",
                   schema));
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload) "
                   "SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(), '{}' "
                   "FROM generate_series(1, 20000)",
                   schema));
    PQclear(ob_sql(db, "ANALYZE %s.outbox_events", schema));
    char qs[FERRY__QSCHEMA_MAX], sql[3 * FERRY__QSCHEMA_MAX + 1200];
    ferry_error e = {0};
    if (ferry__pg_quote_schema(schema, qs, &e)) fail_msg("%s", e.message);
    assert_int_equal(ferry__relay_claim_sql(sql, sizeof sql, qs), 0);
    PGresult *p = PQprepare(db, "claim_plan", sql, 3, NULL);
    if (PQresultStatus(p) != PGRES_COMMAND_OK) fail_msg("prepare: %s", PQerrorMessage(db));
    PQclear(p);
    const char *modes[] = {"force_generic_plan", "force_custom_plan"};
    for (size_t m = 0; m < 2; m++) {
        PQclear(ob_sql(db, "SET plan_cache_mode = %s", modes[m]));
        ob_exec(db, "BEGIN");
        PGresult *r = ob_sql(db, "EXPLAIN EXECUTE claim_plan('{order.placed}', 1000, 16777216)");
        int reads_index = 0, group_sort = 0;
        for (int i = 0; i < PQntuples(r); i++) {
            const char *line = PQgetvalue(r, i, 0);
            if (strstr(line, "Index Scan using outbox_unpublished")) reads_index = 1;
            /* the small sorts of the locked/claimed rows are fine; a sort of the table's
             * rows is the whole created_at group */
            if (strstr(line, "Incremental Sort") || strstr(line, "Sort Key: outbox_events."))
                group_sort = 1;
        }
        if (!reads_index || group_sort) {
            for (int i = 0; i < PQntuples(r); i++)
                fprintf(stderr, "%s\n", PQgetvalue(r, i, 0));
            fail_msg("%s: the claim does not read outbox_unpublished in order", modes[m]);
        }
        PQclear(r);
        ob_exec(db, "ROLLBACK");
    }
    ob_exec(db, "RESET plan_cache_mode");
    ob_exec(db, "DEALLOCATE claim_plan");
}

/* ---- append -------------------------------------------------------------------------- */

static void test_append_validation_and_transactions(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    ferry_outbox_options o = {.schema = schema, .max_payload_bytes = 100};
    ferry_outbox_event ev = {.topic = "order.placed",
                             .aggregate_id = "6f9619ff-8b86-d011-b42d-00cf4fc964ff",
                             .payload_json = "{\"orderId\":42}"};
    char id[37];
    ferry_error e = {0};
    /* outside a transaction: refused, so an event can never commit apart from app rows */
    assert_int_equal(ferry_outbox_append(db, &o, &ev, id, &e), FERRY_ESTATE);
    assert_non_null(strstr(e.message, "BEGIN"));

    ob_exec(db, "BEGIN");
    struct {
        ferry_outbox_event ev;
        int code;
        const char *msg;
    } bad[] = {
        {{.topic = "has space", .aggregate_id = ev.aggregate_id, .payload_json = "{}"},
         FERRY_EINVAL,
         "topic"},
        {{.topic = "t", .aggregate_id = "not-a-uuid", .payload_json = "{}"},
         FERRY_EINVAL,
         "aggregate_id"},
        {{.topic = "t", .aggregate_id = ev.aggregate_id, .payload_json = "{\"a\":"},
         FERRY_EINVAL,
         "invalid JSON"},
        {{.topic = "t", .aggregate_id = ev.aggregate_id, .payload_json = "{\"a\":\"\\u0000\"}"},
         FERRY_EINVAL,
         "\\u0000"},
        {{.topic = "t", .aggregate_id = ev.aggregate_id, .payload_json = "{}", .trace_id = "00-zz"},
         FERRY_EINVAL,
         "traceparent"},
        {{.topic = "t",
          .aggregate_id = ev.aggregate_id,
          .payload_json =
              "{\"blob\":"
              "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
              "xxxxxxxxxxxxxxxxxxxxxxxxxxx\"}"},
         FERRY_ETOOBIG,
         "limit 100"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(ferry_outbox_append(db, &o, &bad[i].ev, id, &e), bad[i].code);
        if (!strstr(e.message, bad[i].msg))
            fail_msg("case %zu: message '%s' lacks '%s'", i, e.message, bad[i].msg);
        assert_string_equal(id, "");
    }
    /* none of those reached the server: the transaction is still usable */
    assert_int_equal(PQtransactionStatus(db), PQTRANS_INTRANS);
    ev.trace_id = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    if (ferry_outbox_append(db, &o, &ev, id, &e)) fail_msg("%s", e.message);
    assert_int_equal(strlen(id), 36);
    assert_int_equal(id[14], '7');
    char rolled_back[37];
    memcpy(rolled_back, id, sizeof id);
    ob_exec(db, "ROLLBACK");
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema), 0);

    /* a server error aborts the caller's transaction like any failed statement */
    ob_exec(db, "BEGIN");
    ferry_outbox_options missing = {.schema = "no_such_schema_xyz"};
    assert_int_equal(ferry_outbox_append(db, &missing, &ev, id, &e), FERRY_EDB);
    assert_non_null(strstr(e.message, "SQLSTATE 42P01"));
    assert_int_equal(PQtransactionStatus(db), PQTRANS_INERROR);
    assert_int_equal(ferry_outbox_append(db, &o, &ev, id, &e), FERRY_ESTATE);
    ob_exec(db, "ROLLBACK");

    ob_exec(db, "BEGIN");
    assert_int_equal(ferry_outbox_append(db, &o, &ev, id, &e), 0);
    ob_exec(db, "COMMIT");
    PGresult *r =
        ob_sql(db,
               "SELECT topic, aggregate_id, payload->>'orderId', trace_id, published_at IS "
               "NULL, attempts FROM %s.outbox_events WHERE id = '%s'",
               schema, id);
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 0), "order.placed");
    assert_string_equal(PQgetvalue(r, 0, 1), "6f9619ff-8b86-d011-b42d-00cf4fc964ff");
    assert_string_equal(PQgetvalue(r, 0, 2), "42");
    assert_string_equal(PQgetvalue(r, 0, 3), ev.trace_id);
    assert_string_equal(PQgetvalue(r, 0, 4), "t");
    assert_string_equal(PQgetvalue(r, 0, 5), "0");
    PQclear(r);
    assert_true(strcmp(rolled_back, id) < 0); /* UUIDv7: later ids sort later */
}

/* ---- relay end to end ---------------------------------------------------------------- */

typedef struct job_wait {
    const char *prefix, *queue, *id;
} job_wait;

static int job_exists(void *arg) {
    job_wait *w = arg;
    return th_cmd_int(rds, "EXISTS %s:%s:%s", w->prefix, w->queue, w->id) == 1;
}

static int wait_job(const char *prefix, const char *queue, const char *id, int timeout_ms) {
    job_wait w = {prefix, queue, id};
    return th_wait_until(job_exists, &w, timeout_ms);
}

static char *job_field(const char *prefix, const char *queue, const char *id, const char *field) {
    redisReply *r = th_cmd(rds, "HGET %s:%s:%s %s", prefix, queue, id, field);
    char *s = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return s;
}

static void test_relay_end_to_end(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("seed.routes", OB_SHOP_ROUTES);
    ob_relay rl;
    /* Poll interval 1 hour: every delivery below within the test's waits is a NOTIFY wake-up. */
    ob_relay_start(&rl, schema, prefix, routes,
                   (const char *const[]){"--poll-interval", "3600000", "--unknown-report", "1000",
                                         "--max-envelope", "2048", NULL},
                   NULL);

    /* commit -> job in every queue of the topic (fan-out), with the envelope */
    char id1[37];
    const char *tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    ob_append(db, schema, "order.placed", "{\"orderId\": \"o-1\", \"total\": 250000}", tp, 1, id1);
    if (!wait_job(prefix, "payments", id1, 10000)) OB_FAIL_LOG(&rl, "no payments job for %s", id1);
    if (!wait_job(prefix, "notifications", id1, 10000)) OB_FAIL_LOG(&rl, "no notifications job");
    char *data = job_field(prefix, "payments", id1, "data");
    char want[512];
    snprintf(want, sizeof want,
             "{\"eventId\":\"%s\",\"traceId\":\"%s\",\"payload\":{\"total\":250000,\"orderId\":\"o-"
             "1\"}}",
             id1, tp);
    assert_string_equal(data, want); /* jsonb orders keys by length, then bytes */
    free(data);
    char *name = job_field(prefix, "payments", id1, "name");
    assert_string_equal(name, "capture-payment");
    free(name);
    name = job_field(prefix, "notifications", id1, "name");
    assert_string_equal(name, "order-confirmation");
    free(name);
    long long left = -1;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE id = '%s' AND published_at IS NOT NULL",
             schema, id1);
    if (!ob_wait_count(db, sql, 1, 1, 10000, &left)) OB_FAIL_LOG(&rl, "row not marked published");

    /* rollback -> nothing; unknown topic -> stays; then a marker event proves the relay
     * went past both (it publishes in created order) */
    char rb[37], unk[37], marker[37];
    ob_append(db, schema, "order.cancelled", "{\"orderId\":\"o-2\"}", NULL, 0, rb);
    ob_append(db, schema, "inventory.reserved", "{\"sku\":\"x\"}", NULL, 1, unk);
    ob_append(db, schema, "order.cancelled", "{\"orderId\":\"o-3\"}", NULL, 1, marker);
    if (!wait_job(prefix, "payments", marker, 10000)) OB_FAIL_LOG(&rl, "no job for the marker");
    data = job_field(prefix, "payments", marker, "data");
    snprintf(want, sizeof want, "{\"eventId\":\"%s\",\"payload\":{\"orderId\":\"o-3\"}}", marker);
    assert_string_equal(data, want); /* no traceId when the row has none */
    free(data);
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:payments:%s", prefix, rb), 0);
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:notifications:%s", prefix, marker), 0);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events WHERE id = '%s'", schema, rb),
                     0);
    assert_int_equal(
        ob_ll(db,
              "SELECT count(*) FROM %s.outbox_events WHERE id = '%s' AND published_at IS "
              "NULL AND attempts = 0",
              schema, unk),
        1);
    if (!ob_relay_wait_log(&rl, "topic 'inventory.reserved', which no route names", 10000))
        OB_FAIL_LOG(&rl, "no warning about the unknown topic");
    assert_int_equal(th_cmd_int(rds, "LLEN %s:payments:wait", prefix), 2);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:notifications:wait", prefix), 1);

    /* a row whose job data would exceed --max-envelope is set aside, and others still flow */
    char big[37], after[37], payload[3000];
    snprintf(payload, sizeof payload, "{\"blob\":\"%02000d\"}", 7);
    ob_append(db, schema, "order.cancelled", payload, NULL, 1, big);
    ob_append(db, schema, "payment.captured", "{\"orderId\":\"o-4\"}", NULL, 1, after);
    if (!wait_job(prefix, "loyalty", after, 10000))
        OB_FAIL_LOG(&rl, "no job after the oversized row");
    if (!wait_job(prefix, "shipping", after, 10000)) OB_FAIL_LOG(&rl, "no shipping job");
    /* jobs reach Redis before their batch commits: wait for the row state */
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM %s.outbox_events WHERE id = '%s' AND published_at IS NOT NULL",
             schema, after);
    if (!ob_wait_count(db, sql, 1, 1, 10000, &left)) OB_FAIL_LOG(&rl, "row not marked published");
    assert_int_equal(th_cmd_int(rds, "EXISTS %s:payments:%s", prefix, big), 0);
    PGresult *r =
        ob_sql(db,
               "SELECT quarantined_at IS NOT NULL, published_at IS NULL, attempts, last_error "
               "FROM %s.outbox_events WHERE id = '%s'",
               schema, big);
    assert_string_equal(PQgetvalue(r, 0, 0), "t");
    assert_string_equal(PQgetvalue(r, 0, 1), "t");
    assert_string_equal(PQgetvalue(r, 0, 2), "1");
    assert_non_null(strstr(PQgetvalue(r, 0, 3), "over the relay's limit of 2048"));
    PQclear(r);

    /* status: one unknown-topic row, one quarantined with an error */
    const char *bin = getenv("FERRY_BIN");
    char cmd[1024], out_path[300];
    snprintf(out_path, sizeof out_path, "%s/status.json", th_tmpdir());
    snprintf(cmd, sizeof cmd,
             "'%s' outbox status --json --schema %s --routes '%s' --database '%s' > '%s'", bin,
             schema, routes, th_env_require("DATABASE_URL"), out_path);
    assert_int_equal(system(cmd), 0);
    char *text = th_slurp(out_path);
    json_t *st = json_loads(text, 0, NULL);
    if (!st) fail_msg("status output is not JSON: %s", text);
    assert_int_equal(json_integer_value(json_object_get(st, "unpublished")), 2);
    assert_int_equal(json_integer_value(json_object_get(st, "unknownTopicRows")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "quarantined")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "withErrors")), 1);
    assert_int_equal(json_integer_value(json_object_get(st, "schemaVersion")),
                     ferry_outbox_schema_version());
    assert_true(json_real_value(json_object_get(st, "oldestUnpublishedAgeSeconds")) > 0);
    json_t *topics = json_object_get(st, "topics");
    assert_int_equal(json_array_size(topics), 2);
    int seen_unknown = 0;
    for (size_t i = 0; i < json_array_size(topics); i++) {
        json_t *t = json_array_get(topics, i);
        if (!strcmp(json_string_value(json_object_get(t, "topic")), "inventory.reserved")) {
            seen_unknown = 1;
            assert_true(json_is_false(json_object_get(t, "routed")));
        }
    }
    assert_true(seen_unknown);
    json_decref(st);
    free(text);

    ob_relay_stop(&rl); /* SIGTERM: exit 0 */
    assert_true(ob_relay_log_contains(&rl, "SIGTERM received"));
}

/* The relay refuses to start on a bad routes file (naming file and line), a missing
 * --routes, or an unmigrated schema. */
static void test_relay_refuses_to_start(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    const char *bad = ob_file("bad.routes", "order.placed payments:capture\n\norder.cancelled\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, th_prefix(), bad, NULL, NULL);
    assert_int_equal(ob_relay_wait(&rl, 20000), 2);
    char want[300];
    snprintf(want, sizeof want, "%s:3: topic 'order.cancelled' has no targets", bad);
    if (!ob_relay_log_contains(&rl, want)) OB_FAIL_LOG(&rl, "message lacks '%s'", want);

    const char *good = ob_file("good.routes", OB_SHOP_ROUTES);
    ob_relay_start(&rl, "no_such_schema_q", th_prefix(), good, NULL, NULL);
    assert_int_equal(ob_relay_wait(&rl, 20000), 3);
    if (!ob_relay_log_contains(&rl, "run `ferry migrate`")) OB_FAIL_LOG(&rl, "no hint to migrate");
}

/* FERRY_FAULT kills the relay after the jobs were added and before the commit: the rows
 * stay unpublished, the next relay publishes them again and the queues keep one job each. */
static void test_crash_before_commit_dedups(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    const char *routes = ob_file("crash.routes", OB_SHOP_ROUTES);
    ob_insert_many(db, schema, "order.placed", 50);
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes, NULL,
                   (const char *const[]){"FERRY_FAULT=relay_after_publish", NULL});
    int st = ob_relay_wait(&rl, 20000);
    if (st != 128 + SIGKILL) OB_FAIL_LOG(&rl, "status %d, expected death by SIGKILL", st);
    assert_true(ob_relay_log_contains(&rl, "FERRY_FAULT=relay_after_publish"));
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL", schema), 50);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:payments:wait", prefix), 50);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:notifications:wait", prefix), 50);

    ob_relay_start(&rl, schema, prefix, routes, NULL, NULL);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s.outbox_events WHERE published_at IS NULL",
             schema);
    long long left = -1;
    if (!ob_wait_count(db, sql, 0, 1, 20000, &left)) OB_FAIL_LOG(&rl, "%lld rows left", left);
    ob_relay_stop(&rl);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:payments:wait", prefix), 50);
    assert_int_equal(th_cmd_int(rds, "LLEN %s:notifications:wait", prefix), 50);
    /* every row has its job, under its own id */
    PGresult *r = ob_sql(db, "SELECT id FROM %s.outbox_events", schema);
    for (int i = 0; i < PQntuples(r); i++) {
        assert_int_equal(th_cmd_int(rds, "EXISTS %s:payments:%s", prefix, PQgetvalue(r, i, 0)), 1);
        assert_int_equal(th_cmd_int(rds, "EXISTS %s:notifications:%s", prefix, PQgetvalue(r, i, 0)),
                         1);
    }
    PQclear(r);
}

/* ---- the relay's deadline-bounded connection (src/pg/pg.c) ---------------------------- */

static void test_owned_connection_pipeline(void **state) {
    (void)state;
    ferry__pgc c = {0};
    ferry__pg_session s = {th_env_require("DATABASE_URL"), "ferry test", 5000, 5000, 20000};
    ferry_error e = {0};
    if (ferry__pgc_connect(&c, &s, &e)) fail_msg("%s", e.message);
    /* an error mid-pipeline: reported with its SQLSTATE, the rest skipped, connection usable */
    const char *p41[] = {"41"};
    ferry__pg_stmt st[] = {{"begin", NULL, "BEGIN", 0, NULL},
                           {"divide", NULL, "SELECT 1/0", 0, NULL},
                           {"after", NULL, "SELECT $1::int + 1", 1, p41}};
    PGresult *out[3] = {NULL, NULL, NULL};
    assert_int_equal(ferry__pgc_pipeline(&c, ferry__mono_ms() + 5000, st, 3, out, &e), FERRY_EDB);
    assert_non_null(strstr(e.message, "divide: division by zero (SQLSTATE 22012)"));
    assert_null(out[0]);
    assert_false(c.broken);
    assert_int_equal(PQtransactionStatus(c.conn), PQTRANS_INERROR);
    assert_int_equal(ferry__pgc_exec(&c, ferry__mono_ms() + 5000, "rollback", NULL, "ROLLBACK", 0,
                                     NULL, NULL, &e),
                     0);
    assert_int_equal(ferry__pgc_pipeline(&c, ferry__mono_ms() + 5000, st + 2, 1, out, &e), 0);
    assert_string_equal(PQgetvalue(out[0], 0, 0), "42");
    PQclear(out[0]);
    /* the server's statement_timeout applies to the session */
    assert_int_equal(ferry__pgc_exec(&c, ferry__mono_ms() + 10000, "sleep", NULL,
                                     "SET statement_timeout = 100; SELECT pg_sleep(5)", 0, NULL,
                                     NULL, &e),
                     FERRY_EDB);
    assert_non_null(strstr(e.message, "SQLSTATE 57014"));
    assert_false(c.broken);
    /* the client deadline ends a call the server does not answer in time */
    assert_int_equal(ferry__pgc_exec(&c, ferry__mono_ms() + 10000, "reset", NULL,
                                     "SET statement_timeout = 0", 0, NULL, NULL, &e),
                     0);
    assert_int_equal(ferry__pgc_exec(&c, ferry__mono_ms() + 200, "sleep", NULL,
                                     "SELECT pg_sleep(3)", 0, NULL, NULL, &e),
                     FERRY_ETIMEDOUT);
    assert_true(c.broken);
    ferry__pgc_close(&c);
    /* connect refused: an error, not a hang */
    s.url = "postgresql://ferry@127.0.0.1:1/ferry";
    assert_int_equal(ferry__pgc_connect(&c, &s, &e), FERRY_EIO);
    assert_null(c.conn);
}

/* ---- the library relay, in process ----------------------------------------------------- */

typedef struct captured_log {
    pthread_mutex_t mu;
    char text[16384];
    size_t len;
} captured_log;

static void capture_log(int level, const char *message, void *ud) {
    captured_log *l = ud;
    pthread_mutex_lock(&l->mu);
    int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%d %s\n", level, message);
    if (n > 0 && l->len + (size_t)n < sizeof l->text) l->len += (size_t)n;
    pthread_mutex_unlock(&l->mu);
}

typedef struct relay_thread {
    ferry_relay *relay;
    int rc;
    ferry_error err;
} relay_thread;

static void *relay_thread_main(void *arg) {
    relay_thread *t = arg;
    t->rc = ferry_relay_run(t->relay, &t->err);
    return NULL;
}

typedef struct stats_wait {
    ferry_relay *relay;
    unsigned long long published;
} stats_wait;

static int stats_reached(void *arg) {
    stats_wait *w = arg;
    ferry_relay_stats st;
    ferry_relay_get_stats(w->relay, &st);
    return st.published >= w->published;
}

/* Options of an in-process relay on the fixture's servers: NOTIFY only (no polling), no
 * retention, its log captured into *log. The routes are the caller's to set. */
static void lib_relay_options(ferry_relay_options *o, ferry_redis_options *ro, captured_log *log,
                              const char *schema, const char *prefix) {
    ferry_redis_options_init(ro);
    ro->url = th_env_require("REDIS_URL");
    ferry_relay_options_init(o);
    o->database_url = th_env_require("DATABASE_URL");
    o->schema = schema;
    o->redis = ro;
    o->prefix = prefix;
    o->poll_interval_ms = 3600000; /* NOTIFY only */
    o->retention_s = -1;
    o->log = capture_log;
    o->log_userdata = log;
}

static void test_library_relay_in_process(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    const char *text = "order.placed lib-q:handle\n";
    assert_int_equal(ferry_routes_parse(text, strlen(text), NULL, &routes, &e), 0);
    ferry_redis_options ro;
    captured_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ferry_relay_options o;
    lib_relay_options(&o, &ro, &log, schema, prefix);
    o.default_job_opts = "{\"attempts\":3}";

    /* option checks */
    ferry_relay *relay = NULL;
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL); /* no routes */
    o.routes = routes;
    o.routes_file = "/nonexistent";
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL); /* both */
    o.routes_file = NULL;
    o.batch_size = 10001;
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "batch_size"));
    o.batch_size = 0;
    o.schema = "";
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    o.schema = schema;
    ro.url = "redis://host:99999";
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    ro.url = th_env_require("REDIS_URL");
    assert_null(relay);

    if (ferry_relay_create(&o, &relay, &e)) fail_msg("%s", e.message);
    ferry_routes_free(routes); /* the relay keeps its own copy */
    relay_thread t = {.relay = relay};
    pthread_t th;
    pthread_create(&th, NULL, relay_thread_main, &t);
    char id[37];
    ob_append(db, schema, "order.placed", "{\"n\":1}", NULL, 1, id);
    if (!wait_job(prefix, "lib-q", id, 10000)) fail_msg("no job; log:\n%s", log.text);
    stats_wait sw = {relay, 1};
    assert_true(th_wait_until(stats_reached, &sw, 10000));
    char *opts = job_field(prefix, "lib-q", id, "opts");
    assert_non_null(strstr(opts, "\"attempts\":3"));
    free(opts);
    ferry_relay_stop(relay);
    ferry_relay_stop(relay); /* idempotent */
    pthread_join(th, NULL);
    if (t.rc) fail_msg("run: %s", t.err.message);
    ferry_relay_stats st;
    ferry_relay_get_stats(relay, &st);
    assert_int_equal(st.published, 1);
    assert_int_equal(st.jobs_added, 1);
    assert_true(st.batches >= 1);
    assert_int_equal(st.failed_batches, 0);
    assert_int_equal(st.backing_off, 0);
    assert_non_null(strstr(log.text, "relay: started"));
    assert_non_null(strstr(log.text, "relay: stopped"));
    ferry_relay_free(relay);
    ferry_relay_free(NULL);
}

/* queue_defaults: a queue's own default job options replace the relay's for its jobs as a
 * whole (the other queue keeps the relay's); a bad entry is refused at create, naming it. */
static void test_relay_queue_defaults(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    const char *text = "order.placed qd-pay:capture qd-mail:confirm\n";
    assert_int_equal(ferry_routes_parse(text, strlen(text), NULL, &routes, &e), 0);
    ferry_redis_options ro;
    captured_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ferry_relay_options o;
    lib_relay_options(&o, &ro, &log, schema, prefix);
    o.routes = routes;
    o.default_job_opts = "{\"attempts\":8,\"removeOnFail\":{\"age\":1209600}}";
    ferry_relay *relay = NULL;

    ferry_relay_queue_defaults bad[2] = {{"nowhere", "{\"attempts\":2}"}, {NULL, NULL}};
    o.queue_defaults = bad;
    o.nqueue_defaults = 1;
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "'nowhere' is not a target of any route"));
    bad[0].queue = "qd-pay";
    bad[0].job_opts = "{\"attempts\":\"x\"}";
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "queue_defaults[0].job_opts"));
    bad[0].job_opts = "{\"attempts\":2}";
    bad[1] = bad[0];
    o.nqueue_defaults = 2;
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "given twice"));
    o.nqueue_defaults = 1;
    o.queue_defaults = NULL;
    assert_int_equal(ferry_relay_create(&o, &relay, &e), FERRY_EINVAL);
    assert_null(relay);

    ferry_relay_queue_defaults qd[1] = {
        {"qd-pay", "{\"attempts\":12,\"backoff\":{\"type\":\"capped\"},\"removeOnFail\":false}"}};
    o.queue_defaults = qd;
    o.nqueue_defaults = 1;
    if (ferry_relay_create(&o, &relay, &e)) fail_msg("%s", e.message);
    ferry_routes_free(routes);
    relay_thread t = {.relay = relay};
    pthread_t th;
    pthread_create(&th, NULL, relay_thread_main, &t);
    char id[37];
    ob_append(db, schema, "order.placed", "{\"n\":1}", NULL, 1, id);
    if (!wait_job(prefix, "qd-pay", id, 10000)) fail_msg("no job; log:\n%s", log.text);
    if (!wait_job(prefix, "qd-mail", id, 10000)) fail_msg("no job; log:\n%s", log.text);
    char *pay = job_field(prefix, "qd-pay", id, "opts");
    char *mail = job_field(prefix, "qd-mail", id, "opts");
    assert_non_null(strstr(pay, "\"attempts\":12"));
    assert_non_null(strstr(pay, "\"capped\""));
    assert_null(strstr(pay, "1209600")); /* replaced as a whole, not merged */
    assert_non_null(strstr(mail, "\"attempts\":8"));
    assert_non_null(strstr(mail, "1209600"));
    free(pay);
    free(mail);
    ferry_relay_stop(relay);
    pthread_join(th, NULL);
    if (t.rc) fail_msg("run: %s", t.err.message);
    ferry_relay_free(relay);
}

/* Routes take every name a queue takes: a FERRY_QUEUE_NAME_MAX-byte queue parses and
 * relays (the unit test checks that one byte more is refused naming the limit). */
static void test_relay_longest_queue_name(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    char queue[FERRY_QUEUE_NAME_MAX + 1], text[FERRY_QUEUE_NAME_MAX + 64];
    memset(queue, 'q', FERRY_QUEUE_NAME_MAX);
    queue[FERRY_QUEUE_NAME_MAX] = 0;
    snprintf(text, sizeof text, "route.longest %s:handle\n", queue);
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    if (ferry_routes_parse(text, strlen(text), NULL, &routes, &e)) fail_msg("%s", e.message);
    ferry_redis_options ro;
    captured_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ferry_relay_options o;
    lib_relay_options(&o, &ro, &log, schema, prefix);
    o.routes = routes;
    ferry_relay *relay = NULL;
    if (ferry_relay_create(&o, &relay, &e)) fail_msg("%s", e.message);
    ferry_routes_free(routes);
    relay_thread t = {.relay = relay};
    pthread_t th;
    pthread_create(&th, NULL, relay_thread_main, &t);
    char id[37];
    ob_append(db, schema, "route.longest", "{\"n\":1}", NULL, 1, id);
    if (!wait_job(prefix, queue, id, 10000)) fail_msg("no job; log:\n%s", log.text);
    char *name = job_field(prefix, queue, id, "name");
    assert_string_equal(name, "handle");
    free(name);
    ferry_relay_stop(relay);
    pthread_join(th, NULL);
    if (t.rc) fail_msg("run: %s", t.err.message);
    ferry_relay_free(relay);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_concurrent_and_idempotent),
        cmocka_unit_test(test_migrate_adopts_seed_table),
        cmocka_unit_test(test_claim_reads_index_order),
        cmocka_unit_test(test_append_validation_and_transactions),
        cmocka_unit_test(test_relay_end_to_end),
        cmocka_unit_test(test_relay_refuses_to_start),
        cmocka_unit_test(test_crash_before_commit_dedups),
        cmocka_unit_test(test_owned_connection_pipeline),
        cmocka_unit_test(test_library_relay_in_process),
        cmocka_unit_test(test_relay_queue_defaults),
        cmocka_unit_test(test_relay_longest_queue_name),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
