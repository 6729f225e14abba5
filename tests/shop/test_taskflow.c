/* test_taskflow.c - taskflow (examples/taskflow) as real processes against the fixture's
 * PostgreSQL and Redis: `ferry migrate --schema taskflow_<pid>`, shop-fakes (the mailer),
 * taskflow-api and taskflow-worker (with its relay), started once for the group.
 *
 *   - create + assign a task: one task-assigned email in the mailer's ledger with the
 *     event's messageId as Idempotency-Key, one delivery row; the outbox row holds exactly
 *     the contract's members (no title, no secret, nothing else), validates against the
 *     contract, carries the request's traceparent; an assignment to the current assignee
 *     writes no event; a reassignment is a new event and a second email;
 *   - the mailer sends and the answer is lost (dropped connection): the retry resends
 *     under the same key, the mailer answers from it: one email;
 *   - the same message delivered 10 times (10 jobs with distinct jobIds and one envelope,
 *     added at once so they race; and the event re-inserted into the outbox 10 times, as a
 *     relay that crashed before marking would republish it): one email, one delivery row,
 *     9 duplicates absorbed;
 *   - an unknown schemaVersion and payloads breaking the schema reach dead_letters with the
 *     contract's reason after one attempt, and send nothing;
 *   - bad API requests get 4xx naming the problem and write nothing;
 *   - SIGTERM: both programs exit 0. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_http.h"
#include "ferry/contract.h"
#include "ferry/queue.h"
#include "sp.h"
#include "support/ob.h"
#include "taskflow_event.h"

static PGconn *db;
static char schema[40];
static const char *prefix;
static sp_proc fakes, api, worker;

#define TRACEPARENT "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* ---- HTTP ------------------------------------------------------------------------------ */

typedef struct answer {
    int status;
    json_t *json; /* NULL when the body is not JSON */
    char allow[64];
} answer;

static answer http(const sp_proc *p, const char *method, const char *path, const char *body,
                   const char *traceparent) {
    char url[512];
    ex_http_request rq = {.method = method,
                          .url = sp_url(p, path, url, sizeof url),
                          .body = body,
                          .traceparent = traceparent,
                          .timeout_ms = 10000};
    ex_http_response rs;
    if (ex_http_do(&rq, &rs) != 0) fail_msg("%s %s: no answer: %s", method, path, rs.error);
    answer a = {.status = rs.status};
    a.json = json_loadb(rs.body, rs.body_len, 0, NULL);
    ex_http_response_free(&rs);
    return a;
}

/* A call that must answer `want`; returns the JSON body (caller decrefs). */
static json_t *call(const sp_proc *p, const char *method, const char *path, const char *body,
                    int want) {
    answer a = http(p, method, path, body, NULL);
    if (a.status != want || !a.json) {
        char *t = a.json ? json_dumps(a.json, 0) : NULL;
        fail_msg("%s %s -> %d %s (want %d)", method, path, a.status, t ? t : "(not JSON)", want);
    }
    return a.json;
}

static const char *str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    if (!s) fail_msg("no string \"%s\" in the answer", key);
    return s;
}

static void new_uuid(char out[37]) {
    if (ferry_uuid7(out)) fail_msg("uuid");
}

/* POST /tasks; the new task's id into id. */
static void create_task(const char *tenant, const char *title, char id[37]) {
    char body[512];
    snprintf(body, sizeof body, "{\"tenantId\":\"%s\",\"title\":\"%s\"}", tenant, title);
    json_t *t = call(&api, "POST", "/tasks", body, 201);
    snprintf(id, 37, "%s", str(t, "id"));
    assert_string_equal(str(t, "tenantId"), tenant);
    assert_string_equal(str(t, "title"), title);
    assert_true(json_is_null(json_object_get(t, "assigneeId")));
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 1);
    json_decref(t);
}

/* POST /tasks/{id}/assign; returns the task (caller decrefs). */
static json_t *assign(const char *id, const char *assignee, const char *traceparent) {
    char path[128], body[128];
    snprintf(path, sizeof path, "/tasks/%s/assign", id);
    snprintf(body, sizeof body, "{\"assigneeId\":\"%s\"}", assignee);
    answer a = http(&api, "POST", path, body, traceparent);
    if (a.status != 200 || !a.json) fail_msg("assign -> %d", a.status);
    return a.json;
}

/* The mailer's ledger entries whose `field` is `value` (idempotencyKey, reference). */
static json_t *emails_where(const char *field, const char *value) {
    json_t *l = call(&fakes, "GET", "/ledger", NULL, 200);
    json_t *msgs = json_object_get(json_object_get(l, "mailer"), "messages");
    if (!json_is_array(msgs)) fail_msg("the ledger has no mailer.messages");
    json_t *out = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        const char *k = json_string_value(json_object_get(m, field));
        if (k && !strcmp(k, value)) json_array_append(out, m);
    }
    json_decref(l);
    return out;
}

static json_t *emails_with_key(const char *key) {
    return emails_where("idempotencyKey", key);
}

/* Emails about task id, whatever their key. */
static size_t emails_about(const char *id) {
    json_t *e = emails_where("reference", id);
    size_t n = json_array_size(e);
    json_decref(e);
    return n;
}

static size_t emails_count(const char *key) {
    json_t *e = emails_with_key(key);
    size_t n = json_array_size(e);
    json_decref(e);
    return n;
}

static void wait_sql(const char *what, long long want, const char *fmt, ...) FERRY_PRINTF(3, 4);
static void wait_sql(const char *what, long long want, const char *fmt, ...) {
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    long long last = -1;
    if (!ob_wait_count(db, sql, want, 1, 20000, &last)) {
        sp_dump(&worker);
        fail_msg("%s: %lld, want %lld (%s)", what, last, want, sql);
    }
}

/* ---- group fixture --------------------------------------------------------------------- */

static int setup(void **state) {
    (void)state;
    if (ex_http_global_init()) fail_msg("curl");
    db = ob_pg();
    snprintf(schema, sizeof schema, "taskflow_%d", (int)getpid());
    prefix = th_prefix();
    const char *url = th_env_require("DATABASE_URL");
    PQclear(ob_sql(db, "DROP SCHEMA IF EXISTS %s CASCADE", schema));
    cli_run r;
    CLI(r, "migrate", "--schema", schema, "--database", url);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);

    sp_start(&fakes, "shop-fakes", (const char *const[]){"--listen", "127.0.0.1:0", NULL}, NULL,
             SP_PORT);
    sp_start(&api, "taskflow-api",
             (const char *const[]){"--listen", "127.0.0.1:0", "--database", url, "--schema", schema,
                                   NULL},
             NULL, SP_PORT);
    char mailer[128];
    snprintf(mailer, sizeof mailer, "http://127.0.0.1:%d/mailer", fakes.port);
    sp_start(&worker, "taskflow-worker",
             (const char *const[]){"--database", url, "--redis", th_env_require("REDIS_URL"),
                                   "--schema", schema, "--prefix", prefix, "--mailer-url", mailer,
                                   NULL},
             NULL, SP_READY);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    sp_kill(&worker);
    sp_kill(&api);
    sp_kill(&fakes);
    PQclear(PQexec(db, "SET client_min_messages = warning"));
    char sql[128];
    snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %s CASCADE", schema);
    PQclear(PQexec(db, sql));
    PQfinish(db);
    th_tmpdir_remove();
    return 0;
}

/* ---- tests ----------------------------------------------------------------------------- */

/* The contract of task-assigned.v1 schemaVersion 1, from the source tree. */
static const char *contract_path(void) {
    static char path[1024];
    const char *src = getenv("FERRY_SOURCE_DIR");
    if (!src) fail_msg("FERRY_SOURCE_DIR is not set; run through ctest");
    snprintf(path, sizeof path, "%s/examples/taskflow/contracts/task-assigned.v1@1.json", src);
    return path;
}

/* The contract's property names, sorted, joined with ','. */
static void contract_members(char *out, size_t cap) {
    json_error_t je;
    json_t *c = json_load_file(contract_path(), 0, &je);
    if (!c) fail_msg("%s: %s", contract_path(), je.text);
    json_t *props = json_object_get(c, "properties");
    const char *names[32];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) {
        if (n < 32) names[n++] = k;
    }
    qsort(names, n, sizeof *names, th_cmp_str);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "", names[i]);
    json_decref(c);
}

static void test_assign_sends_one_email(void **state) {
    (void)state;
    char tenant[37], assignee[37], other[37], id[37], msg[37], msg2[37];
    new_uuid(tenant);
    new_uuid(assignee);
    new_uuid(other);
    create_task(tenant, "Write the outbox runbook", id);

    json_t *t = assign(id, assignee, TRACEPARENT);
    assert_string_equal(str(t, "assigneeId"), assignee);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 2);
    snprintf(msg, sizeof msg, "%s", str(t, "assignmentMessageId"));
    json_decref(t);

    wait_sql("delivery rows", 1,
             "SELECT count(*) FROM %s.notification_deliveries WHERE message_id = '%s'", schema,
             msg);
    json_t *emails = emails_with_key(msg);
    assert_int_equal(json_array_size(emails), 1);
    json_t *e = json_array_get(emails, 0);
    assert_string_equal(str(e, "template"), "task-assigned");
    assert_string_equal(str(e, "reference"), id);
    PGresult *r = ob_sql(db,
                         "SELECT task_id, tenant_id, assignee_id, provider_message_id, duplicates, "
                         "template FROM %s.notification_deliveries WHERE message_id = '%s'",
                         schema, msg);
    assert_string_equal(PQgetvalue(r, 0, 0), id);
    assert_string_equal(PQgetvalue(r, 0, 1), tenant);
    assert_string_equal(PQgetvalue(r, 0, 2), assignee);
    assert_string_equal(PQgetvalue(r, 0, 3), str(e, "messageId"));
    assert_string_equal(PQgetvalue(r, 0, 4), "0");
    assert_string_equal(PQgetvalue(r, 0, 5), "task-assigned");
    PQclear(r);
    json_decref(emails);

    /* the outbox row: one, published, exactly the contract's members, the request's trace */
    r = ob_sql(db,
               "SELECT payload::text, topic, trace_id, published_at IS NOT NULL, "
               "(SELECT string_agg(k, ',' ORDER BY k COLLATE \"C\") "
               "   FROM jsonb_object_keys(payload) k), "
               "payload->>'messageId', payload->>'taskId', payload->>'assigneeId', "
               "payload->>'tenantId', payload->>'traceparent', payload->'schemaVersion' "
               "FROM %s.outbox_events WHERE aggregate_id = '%s'",
               schema, id);
    assert_int_equal(PQntuples(r), 1);
    const char *payload = PQgetvalue(r, 0, 0);
    assert_string_equal(PQgetvalue(r, 0, 1), "task.assigned.v1");
    assert_string_equal(PQgetvalue(r, 0, 2), TRACEPARENT);
    assert_string_equal(PQgetvalue(r, 0, 3), "t");
    char members[512];
    contract_members(members, sizeof members);
    assert_string_equal(PQgetvalue(r, 0, 4), members);
    assert_string_equal(PQgetvalue(r, 0, 5), msg);
    assert_string_equal(PQgetvalue(r, 0, 6), id);
    assert_string_equal(PQgetvalue(r, 0, 7), assignee);
    assert_string_equal(PQgetvalue(r, 0, 8), tenant);
    assert_string_equal(PQgetvalue(r, 0, 9), TRACEPARENT);
    assert_string_equal(PQgetvalue(r, 0, 10), "1");
    if (strstr(payload, "runbook")) fail_msg("the payload holds the title: %s", payload);
    ferry_contract *contract = NULL;
    ferry_error fe = {0};
    if (ferry_contract_load(contract_path(), &contract, &fe)) fail_msg("%s", fe.message);
    ferry_contract_violation v;
    if (ferry_contract_validate(contract, payload, strlen(payload), &v) != 0)
        fail_msg("the outbox payload breaks the contract at %s (%s)", v.path, v.keyword);
    ferry_contract_free(contract);
    PQclear(r);

    /* the same assignee again: nothing changes, no event */
    t = assign(id, assignee, NULL);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 2);
    assert_string_equal(str(t, "assignmentMessageId"), msg);
    json_decref(t);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.outbox_events WHERE aggregate_id = '%s'", schema, id),
        1);

    /* a reassignment is a new fact: a new message, a second email */
    t = assign(id, other, NULL);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 3);
    snprintf(msg2, sizeof msg2, "%s", str(t, "assignmentMessageId"));
    json_decref(t);
    assert_string_not_equal(msg, msg2);
    wait_sql("delivery rows", 2,
             "SELECT count(*) FROM %s.notification_deliveries WHERE task_id = '%s'", schema, id);
    assert_int_equal(emails_count(msg), 1);
    assert_int_equal(emails_count(msg2), 1);
    assert_int_equal(emails_about(id), 2);
    char path[128];
    snprintf(path, sizeof path, "/tasks/%s", id);
    t = call(&api, "GET", path, NULL, 200);
    assert_string_equal(str(t, "assigneeId"), other);
    assert_string_equal(str(t, "assignmentMessageId"), msg2);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 3);
    json_decref(t);
}

/* The mailer sends, then the connection drops before its answer (the worker cannot know
 * whether the email went out): the retry resends under the same key and the mailer
 * answers from it. One email, after two attempts. */
static void test_lost_answer_sends_once(void **state) {
    (void)state;
    char tenant[37], assignee[37], id[37], msg[37];
    new_uuid(tenant);
    new_uuid(assignee);
    create_task(tenant, "Answer lost", id);
    json_decref(call(&fakes, "POST", "/faults", "{\"mailer.send\":{\"drop_next\":1}}", 200));
    json_t *l = call(&fakes, "GET", "/ledger", NULL, 200);
    long long replays =
        json_integer_value(json_object_get(json_object_get(l, "mailer"), "replays"));
    json_decref(l);

    json_t *t = assign(id, assignee, NULL);
    snprintf(msg, sizeof msg, "%s", str(t, "assignmentMessageId"));
    json_decref(t);
    wait_sql("delivery rows", 1,
             "SELECT count(*) FROM %s.notification_deliveries WHERE message_id = '%s'", schema,
             msg);
    json_decref(call(&fakes, "DELETE", "/faults", NULL, 200));
    assert_int_equal(emails_count(msg), 1);
    assert_int_equal(emails_about(id), 1);
    l = call(&fakes, "GET", "/ledger", NULL, 200);
    assert_true(json_integer_value(json_object_get(json_object_get(l, "mailer"), "replays")) >
                replays);
    json_decref(l);
    /* the job: completed on its second attempt, under the event id the relay gave it */
    ferry_conn *rc = th_conn();
    char key[256];
    char *event_id = NULL;
    PGresult *r =
        ob_sql(db, "SELECT id FROM %s.outbox_events WHERE aggregate_id = '%s'", schema, id);
    assert_int_equal(PQntuples(r), 1);
    event_id = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    snprintf(key, sizeof key, "%s:notifications:%s", prefix, event_id);
    th_expect_field(rc, key, "atm", "2"); /* attemptsMade counts the completing one */
    free(event_id);
    ferry__conn_close(rc);
}

/* The payload of an assignment event of task id, as taskflow-api writes it, with a new
 * messageId (into msg). */
static char *event_for(const char *tenant, const char *id, char msg[37]) {
    tf_event ev = {.occurred_at = "2026-12-03T08:00:00.000000Z"};
    new_uuid(msg);
    snprintf(ev.message_id, sizeof ev.message_id, "%s", msg);
    snprintf(ev.tenant_id, sizeof ev.tenant_id, "%s", tenant);
    snprintf(ev.task_id, sizeof ev.task_id, "%s", id);
    new_uuid(ev.assignee_id);
    snprintf(ev.traceparent, sizeof ev.traceparent, "%s", TRACEPARENT);
    char *p = tf_event_payload(&ev);
    assert_non_null(p);
    return p;
}

static void test_ten_deliveries_one_email(void **state) {
    (void)state;
    char tenant[37], id[37], msg[37], event_id[37];
    new_uuid(tenant);
    create_task(tenant, "Triage the dead letters", id);
    char *payload = event_for(tenant, id, msg);
    new_uuid(event_id);
    char data[2048];
    snprintf(data, sizeof data, "{\"eventId\":\"%s\",\"traceId\":\"%s\",\"payload\":%s}", event_id,
             TRACEPARENT, payload);

    /* ten jobs, distinct jobIds, one envelope, added at once: the worker's ten handler
     * threads race on them */
    ferry_queue *q = th_queue_open(prefix, "notifications", NULL, 0);
    ferry_job_spec specs[10];
    char opts[10][128];
    for (int i = 0; i < 10; i++) {
        snprintf(opts[i], sizeof opts[i], "{\"jobId\":\"dup-%s-%d\"}", event_id, i);
        specs[i] =
            (ferry_job_spec){.name = "task-assigned.v1", .data_json = data, .opts_json = opts[i]};
    }
    ferry_error fe = {0};
    char *ids[10];
    if (ferry_queue_add_bulk(q, specs, 10, ids, &fe)) fail_msg("add: %s", fe.message);
    for (int i = 0; i < 10; i++)
        free(ids[i]);
    wait_sql("deliveries of the message, counted", 1,
             "SELECT count(*) FROM %s.notification_deliveries WHERE message_id = '%s' "
             "AND duplicates = 9",
             schema, msg);
    assert_int_equal(emails_count(msg), 1);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.notification_deliveries WHERE task_id = '%s'",
                           schema, id),
                     1);
    /* every job completed: one sent it, nine found it sent */
    ferry_conn *rc = th_conn();
    int duplicates = 0;
    for (int i = 0; i < 10; i++) {
        char key[256];
        snprintf(key, sizeof key, "%s:notifications:dup-%s-%d", prefix, event_id, i);
        char *rv = th_hget(rc, key, "returnvalue");
        if (!rv) fail_msg("job %d has no return value", i);
        json_t *j = json_loads(rv, 0, NULL);
        if (!json_is_object(j)) fail_msg("job %d returned %s", i, rv);
        duplicates += json_is_true(json_object_get(j, "duplicate"));
        json_decref(j);
        free(rv);
    }
    assert_int_equal(duplicates, 9);
    ferry__conn_close(rc);
    ferry_queue_close(q);
    free(payload);

    /* the event inserted into the outbox ten times (a relay that crashed after publishing
     * and before marking republishes it, under new event ids here): one email */
    char msg2[37];
    payload = event_for(tenant, id, msg2);
    for (int i = 0; i < 10; i++) {
        ob_exec(db, "BEGIN");
        ferry_outbox_options oo = {.schema = schema};
        ferry_outbox_event ev = {.topic = "task.assigned.v1",
                                 .aggregate_id = id,
                                 .payload_json = payload,
                                 .trace_id = TRACEPARENT};
        if (ferry_outbox_append(db, &oo, &ev, NULL, &fe)) fail_msg("append: %s", fe.message);
        ob_exec(db, "COMMIT");
    }
    wait_sql("deliveries of the republished message, counted", 1,
             "SELECT count(*) FROM %s.notification_deliveries WHERE message_id = '%s' "
             "AND duplicates = 9",
             schema, msg2);
    assert_int_equal(emails_count(msg2), 1);
    assert_int_equal(emails_about(id), 2); /* nothing under another key either */
    free(payload);
}

/* Poison events: each reaches dead_letters with the contract's reason, after one attempt,
 * and sends nothing. */
static void test_contract_refusals_reach_dead_letters(void **state) {
    (void)state;
    char tenant[37], id[37];
    new_uuid(tenant);
    create_task(tenant, "Poison", id); /* a real task: without the check, emails would go */
    struct {
        const char *change; /* applied to a good payload with jansson */
        const char *reason;
        char msg[37];
    } cases[] = {
        {"schemaVersion=2", "contract task-assigned.v1: unknown schemaVersion \"2\"", ""},
        {"assigneeId=not-a-uuid", "contract task-assigned.v1@1: /assigneeId: format", ""},
        {"email=someone@example.com", "contract task-assigned.v1@1: /email: additionalProperties",
         ""},
        {"-taskId", "contract task-assigned.v1@1: /taskId: required", ""},
        {"occurredAt=yesterday", "contract task-assigned.v1@1: /occurredAt: format", ""},
    };
    size_t n = sizeof cases / sizeof cases[0];
    ferry_error fe = {0};
    for (size_t i = 0; i < n; i++) {
        char *good = event_for(tenant, id, cases[i].msg);
        json_t *p = json_loads(good, 0, NULL);
        free(good);
        const char *c = cases[i].change;
        if (c[0] == '-') {
            json_object_del(p, c + 1);
        } else {
            char key[64];
            const char *eq = strchr(c, '=');
            snprintf(key, sizeof key, "%.*s", (int)(eq - c), c);
            json_object_set_new(p, key,
                                !strcmp(key, "schemaVersion") ? json_integer(atoi(eq + 1))
                                                              : json_string(eq + 1));
        }
        char *text = json_dumps(p, JSON_COMPACT);
        json_decref(p);
        ob_exec(db, "BEGIN");
        ferry_outbox_options oo = {.schema = schema};
        ferry_outbox_event ev = {
            .topic = "task.assigned.v1", .aggregate_id = id, .payload_json = text};
        if (ferry_outbox_append(db, &oo, &ev, NULL, &fe)) fail_msg("append: %s", fe.message);
        ob_exec(db, "COMMIT");
        free(text);
    }
    for (size_t i = 0; i < n; i++) {
        wait_sql("dead letters", 1,
                 "SELECT count(*) FROM %s.dead_letters WHERE data->'payload'->>'messageId' = '%s'",
                 schema, cases[i].msg);
        PGresult *r = ob_sql(db,
                             "SELECT error, job_name, queue, prefix, attempts_made "
                             "FROM %s.dead_letters WHERE data->'payload'->>'messageId' = '%s'",
                             schema, cases[i].msg);
        assert_string_equal(PQgetvalue(r, 0, 0), cases[i].reason);
        assert_string_equal(PQgetvalue(r, 0, 1), "task-assigned.v1");
        assert_string_equal(PQgetvalue(r, 0, 2), "notifications");
        assert_string_equal(PQgetvalue(r, 0, 3), prefix);
        assert_string_equal(PQgetvalue(r, 0, 4), "1"); /* permanent: never retried */
        PQclear(r);
    }
    for (size_t i = 0; i < n; i++)
        assert_int_equal(emails_count(cases[i].msg), 0);
    assert_int_equal(emails_about(id), 0);
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.notification_deliveries WHERE task_id = '%s'",
                           schema, id),
                     0);
}

static void test_bad_requests_write_nothing(void **state) {
    (void)state;
    char tenant[37], id[37], nobody[37];
    new_uuid(tenant);
    new_uuid(nobody);
    create_task(tenant, "Untouched", id);
    long long tasks = ob_ll(db, "SELECT count(*) FROM %s.tasks", schema);
    long long events = ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema);

    char big[20000];
    memset(big, ' ', sizeof big - 1);
    big[0] = '{';
    big[sizeof big - 2] = '}';
    big[sizeof big - 1] = '\0';
    char long_title[512], title[300];
    memset(title, 'x', 201);
    title[201] = '\0';
    snprintf(long_title, sizeof long_title, "{\"tenantId\":\"%s\",\"title\":\"%s\"}", tenant,
             title);
    char get_nobody[64], assign_nobody[80], assign_id[80], get_id[64], assign_ok[80];
    snprintf(get_nobody, sizeof get_nobody, "/tasks/%s", nobody);
    snprintf(assign_nobody, sizeof assign_nobody, "/tasks/%s/assign", nobody);
    snprintf(assign_id, sizeof assign_id, "/tasks/%s/assign", id);
    snprintf(get_id, sizeof get_id, "/tasks/%s", id);
    snprintf(assign_ok, sizeof assign_ok, "{\"assigneeId\":\"%s\"}", nobody);
    char wrong_type[128], unknown[160];
    snprintf(wrong_type, sizeof wrong_type, "{\"tenantId\":\"%s\",\"title\":[\"x\"]}", tenant);
    snprintf(unknown, sizeof unknown, "{\"tenantId\":\"%s\",\"title\":\"x\",\"secret\":\"s\"}",
             tenant);
    struct {
        const char *method, *path, *body;
        int status;
        const char *field; /* NULL: no field */
    } cases[] = {
        {"POST", "/tasks", "{\"tenantId\":", 400, NULL},
        {"POST", "/tasks", "", 400, NULL},
        {"POST", "/tasks", "[]", 400, NULL},
        {"POST", "/tasks", "{\"tenantId\":5,\"title\":\"x\"}", 400, "tenantId"},
        {"POST", "/tasks", wrong_type, 400, "title"},
        {"POST", "/tasks", long_title, 400, "title"},
        {"POST", "/tasks", unknown, 400, "secret"},
        {"POST", "/tasks", big, 413, NULL},
        {"GET", "/tasks", NULL, 405, NULL},
        {"DELETE", get_id, NULL, 405, NULL},
        {"GET", assign_id, NULL, 405, NULL},
        {"GET", "/tasks/42", NULL, 400, "id"},
        {"POST", "/tasks/42/assign", assign_ok, 400, "id"},
        {"GET", get_nobody, NULL, 404, NULL},
        {"POST", assign_nobody, assign_ok, 404, NULL},
        {"POST", assign_id, "{\"assigneeId\":\"bob\"}", 400, "assigneeId"},
        {"POST", assign_id, "{\"assignee\":\"bob\"}", 400, "assignee"},
        {"POST", assign_id, "not json", 400, NULL},
        {"GET", "/nowhere", NULL, 404, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        answer a = http(&api, cases[i].method, cases[i].path, cases[i].body, NULL);
        if (a.status != cases[i].status)
            fail_msg("%s %s: %d, want %d", cases[i].method, cases[i].path, a.status,
                     cases[i].status);
        if (!json_is_string(json_object_get(a.json, "error")))
            fail_msg("%s %s: no JSON error", cases[i].method, cases[i].path);
        const char *field = json_string_value(json_object_get(a.json, "field"));
        if (cases[i].field ? !field || strcmp(field, cases[i].field) : field != NULL)
            fail_msg("%s %s: field %s, want %s", cases[i].method, cases[i].path,
                     field ? field : "(none)", cases[i].field ? cases[i].field : "(none)");
        json_decref(a.json);
    }
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.tasks", schema), tasks);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema), events);
    json_t *t = call(&api, "GET", get_id, NULL, 200);
    assert_int_equal(json_integer_value(json_object_get(t, "version")), 1);
    assert_true(json_is_null(json_object_get(t, "assigneeId")));
    json_decref(t);
}

static void test_sigterm_exits_zero(void **state) {
    (void)state;
    assert_int_equal(sp_stop(&worker, 45000), 0);
    assert_int_equal(sp_stop(&api, 15000), 0);
    if (!th_file_contains(worker.err_path, "stopped")) {
        sp_dump(&worker);
        fail_msg("the worker did not say it stopped");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_sends_one_email),
        cmocka_unit_test(test_lost_answer_sends_once),
        cmocka_unit_test(test_ten_deliveries_one_email),
        cmocka_unit_test(test_contract_refusals_reach_dead_letters),
        cmocka_unit_test(test_bad_requests_write_nothing),
        cmocka_unit_test(test_sigterm_exits_zero),
    };
    return th_exit(cmocka_run_group_tests(tests, setup, teardown));
}
