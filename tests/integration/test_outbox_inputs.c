/* test_outbox_inputs.c - hostile or mistaken input to the outbox, against real PostgreSQL and
 * Redis and the real `ferry` binary:
 *  - payloads that are JSON but that jsonb refuses (lone UTF-16 surrogate escapes, numbers
 *    out of numeric's range, \u0000): ferry_outbox_append says FERRY_EINVAL and the caller's
 *    transaction stays usable; what the server itself refuses is checked on a second
 *    connection, and the largest values jsonb takes are appended and committed;
 *  - a routes file that cannot be read: `ferry relay` and `ferry outbox status` exit 2 with
 *    one line naming it; so do database URLs libpq would misread and bad relay default job
 *    options, before anything connects;
 *  - a topic inserted by SQL with a newline and an escape sequence: the relay's unknown-topic
 *    warning and `ferry outbox status` print it escaped, so it cannot forge log lines;
 *  - a schema a newer ferry migrated: `ferry migrate` and the relay say so;
 *  - a large row Redis refuses every time: set aside, the rows behind it published. */
#include "support/ob.h"

#define AGGREGATE "6f9619ff-8b86-d011-b42d-00cf4fc964ff"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

/* The server's own verdict on `text` as jsonb: NULL when it accepts it, else its SQLSTATE
 * (static storage). Autocommit, on its own connection. */
static const char *server_refuses(PGconn *c, const char *text) {
    static char state[6];
    const char *params[] = {text};
    PGresult *r = PQexecParams(c, "SELECT $1::jsonb", 1, NULL, params, NULL, NULL, 0);
    const char *st =
        PQresultStatus(r) == PGRES_TUPLES_OK ? NULL : PQresultErrorField(r, PG_DIAG_SQLSTATE);
    snprintf(state, sizeof state, "%s", st ? st : "");
    PQclear(r);
    return st ? state : NULL;
}

/* ---- payloads jsonb refuses ------------------------------------------------------------ */

static void test_append_refuses_what_jsonb_refuses(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    PGconn *app = ob_pg(), *check = ob_pg(); /* the application's, and the server's verdicts */
    PQclear(ob_sql(db, "CREATE TABLE %s.app_orders (n int)", schema));
    ferry_outbox_options o = {.schema = schema};
    ferry_outbox_event ev = {.topic = "order.placed", .aggregate_id = AGGREGATE};
    struct {
        const char *payload, *msg;
    } bad[] = {
        {"{\"name\":\"\\ud800\"}", "not followed by a \\uDC00-\\uDFFF escape"},
        {"{\"name\":\"ab\\ud83d\\u0041\"}", "not followed by a \\uDC00-\\uDFFF escape"},
        {"{\"name\":\"\\ud83d\\ud83d\\ude00\"}", "not followed by a \\uDC00-\\uDFFF escape"},
        {"{\"name\":\"\\udc00\"}", "without a \\uD800-\\uDBFF escape before it"},
        {"{\"\\udfff\":1}", "without a \\uD800-\\uDBFF escape before it"},
        {"{\"total\":1e200000}", "10^131072"},
        {"{\"total\":1e131072}", "10^131072"},
        {"{\"total\":1e-200000}", "16383 digits after the decimal point"},
        {"{\"total\":1e-16384}", "16383 digits after the decimal point"},
        {"[0.5e-16383]", "16383 digits after the decimal point"},
        {"{\"total\":1e99999999999}", "exponent"},
        {"{\"note\":\"\\u0000\"}", "\\u0000"},
    };
    ob_exec(app, "BEGIN");
    PQclear(ob_sql(app, "INSERT INTO %s.app_orders VALUES (1)", schema));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* the server refuses it: appended as it is, it would abort the transaction */
        if (!server_refuses(check, bad[i].payload))
            fail_msg("case %zu: PostgreSQL accepts %s", i, bad[i].payload);
        ev.payload_json = bad[i].payload;
        ferry_error e = {0};
        char id[37] = "x";
        int rc = ferry_outbox_append(app, &o, &ev, id, &e);
        if (rc != FERRY_EINVAL)
            fail_msg("case %zu (%s): rc %d, expected FERRY_EINVAL: %s", i, bad[i].payload, rc,
                     e.message);
        if (!strstr(e.message, bad[i].msg) || !strstr(e.message, "payload: at byte "))
            fail_msg("case %zu: message '%s' lacks '%s'", i, e.message, bad[i].msg);
        assert_string_equal(id, "");
        assert_int_equal(PQtransactionStatus(app), PQTRANS_INTRANS);
    }
    /* the byte offset points at the value */
    ev.payload_json = "{\"a\":1,\"b\":\"\\udc00\"}";
    ferry_error e = {0};
    assert_int_equal(ferry_outbox_append(app, &o, &ev, NULL, &e), FERRY_EINVAL);
    if (!strstr(e.message, "at byte 12:")) fail_msg("offset: %s", e.message);

    /* what jsonb does take, to its limits, goes in (the same transaction, still usable) */
    const char *good[] = {
        "{\"name\":\"\\ud83d\\ude00 \\uDBFF\\uDFFF\"}",
        "{\"total\":1e131071,\"min\":-9.999e131071}",
        "{\"tiny\":1e-16383,\"zero\":0e-16383}",
        "{\"zero\":0e1073741822}",
        "{\"escaped\":\"\\\\u0000 \\\\ud800\"}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        const char *st = server_refuses(check, good[i]);
        if (st) fail_msg("PostgreSQL refuses %s (SQLSTATE %s)", good[i], st);
        ev.payload_json = good[i];
        if (ferry_outbox_append(app, &o, &ev, NULL, &e))
            fail_msg("append %s: %s", good[i], e.message);
    }
    assert_int_equal(PQtransactionStatus(app), PQTRANS_INTRANS);
    ob_exec(app, "COMMIT");
    /* the application's row and every good event committed together */
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.app_orders", schema), 1);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.outbox_events", schema),
                     (long long)(sizeof good / sizeof good[0]));
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.outbox_events WHERE payload->>'name' = "
                           "U&'\\+01F600 \\+10FFFF'",
                           schema),
                     1);
    PQfinish(app);
    PQfinish(check);
}

/* ---- routes files that cannot be read ------------------------------------------------- */

/* One line on stderr that names the file; exit 2 (bad arguments), as --help says. */
static void expect_routes_refusal(const char *what, int code, const char *err, const char *file) {
    if (code != 2) fail_msg("%s: exit %d, expected 2; stderr: %s", what, code, err);
    if (cli_lines(err) != 1 || !strstr(err, file) || !strstr(err, "--routes"))
        fail_msg("%s: expected one line naming %s, got: %s", what, file, err);
}

static void test_unreadable_routes_file_exits_2(void **state) {
    (void)state;
    char missing[300], fifo[300];
    snprintf(missing, sizeof missing, "%s/no-such.routes", th_tmpdir());
    snprintf(fifo, sizeof fifo, "%s/fifo.routes", th_tmpdir());
    unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* a directory; a FIFO no one writes to (opening it used to block for ever) */
    const char *files[] = {missing, th_tmpdir(), fifo};
    for (size_t i = 0; i < 3; i++) {
        ob_relay rl;
        ob_relay_start(&rl, "public", th_prefix(), files[i], NULL, NULL);
        int code = ob_relay_wait(&rl, 20000);
        char *log = th_slurp(rl.log);
        expect_routes_refusal("ferry relay", code, log, files[i]);
        free(log);

        cli_run r;
        CLI(r, "outbox", "status", "--routes", files[i], "--database",
            th_env_require("DATABASE_URL"));
        expect_routes_refusal("ferry outbox status", r.code, r.err, files[i]);
        cli_run_free(&r);
    }
    /* a file that loads still works (status exits 0 on an empty outbox) */
    const char *schema = ob_schema(db);
    const char *good = ob_file("inputs.routes", "order.placed q:j\n");
    cli_run r;
    CLI(r, "outbox", "status", "--routes", good, "--schema", schema, "--database",
        th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
}

/* ---- database URLs and relay options refused before connecting ------------------------- */

/* Exit 2 with one line containing `want`, and nothing that quotes the password. */
static void expect_usage(const char *what, const cli_run *r, const char *want) {
    if (r->code != 2) fail_msg("%s: exit %d, expected 2; stderr: %s", what, r->code, r->err);
    if (cli_lines(r->err) != 1 || !strstr(r->err, want))
        fail_msg("%s: expected one line containing '%s', got: %s", what, want, r->err);
    if (strstr(r->err, "s3cret")) fail_msg("%s: the password is in the message: %s", what, r->err);
}

/* libpq takes a value that is neither a URL nor conninfo as a database name on the default
 * server: a typo must not quietly try another server. */
static void test_bad_database_urls_exit_2(void **state) {
    (void)state;
    const char *routes = ob_file("db.routes", "order.placed q:j\n");
    const struct {
        const char *url, *want;
    } bad[] = {{"garbage://", "not a postgresql:// URL or key=value conninfo"},
               {"postgress://u:s3cret@db.example/x", "not a postgresql:// URL"},
               {"junk", "not a postgresql:// URL"},
               {"postgresql://u:%zz@localhost/x", "database:"},
               {"host=localhost bogus=1", "invalid connection option"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        CLI(r, "migrate", "--database", bad[i].url);
        expect_usage("migrate --database", &r, bad[i].want);
        cli_run_free(&r);
        CLI(r, "outbox", "status", "--routes", routes, "--database", bad[i].url);
        expect_usage("outbox status --database", &r, bad[i].want);
        cli_run_free(&r);
    }
    /* the same through DATABASE_URL, and an empty one */
    setenv("DATABASE_URL", "junk", 1);
    cli_run r;
    CLI(r, "migrate");
    expect_usage("DATABASE_URL=junk migrate", &r, "(DATABASE_URL)");
    cli_run_free(&r);
    setenv("DATABASE_URL", "", 1);
    CLI(r, "outbox", "cleanup", "--older-than-days", "30");
    expect_usage("DATABASE_URL='' outbox cleanup", &r, "DATABASE_URL is set but empty");
    cli_run_free(&r);
    unsetenv("DATABASE_URL");
}

/* Bad default job options fail `ferry relay` at once with exit 2, before it connects (the
 * database URL points at nothing that answers). */
static void test_relay_bad_default_job_options_exit_2(void **state) {
    (void)state;
    const char *routes = ob_file("opts.routes", "order.placed q:j\n");
    const char *bad[] = {"{\"attempts\":\"x\"}", "{\"jobId\":\"x\"}", "{\"delay\":-1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        CLI(r, "relay", "--routes", routes, "--default-job-options", bad[i], "--database",
            "postgresql://127.0.0.1:1/none", "--redis", "redis://127.0.0.1:1");
        expect_usage("relay --default-job-options", &r, "default_job_opts");
        cli_run_free(&r);
    }
}

/* ---- topics with control characters --------------------------------------------------- */

#define FORGED "2030-01-01T00:00:00.000Z ferry relay: info: forged"

/* No line of text starts with the forged line, and no raw escape byte is in it. */
static void expect_no_forgery(const char *what, const char *text) {
    for (const char *line = text; line && *line;) {
        if (!strncmp(line, FORGED, strlen(FORGED)))
            fail_msg("%s: a topic forged a line:\n%s", what, text);
        line = strchr(line, '\n');
        if (line) line++;
    }
    if (strchr(text, 0x1b)) fail_msg("%s: a raw ESC byte reached the output:\n%s", what, text);
}

static void test_topic_control_characters_escaped(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    /* a newline, then a whole log line; an ESC clearing the screen; a backslash; a C1 CSI */
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload) VALUES "
                   "(gen_random_uuid(), 'evil' || chr(10) || '" FORGED "' || chr(27) || "
                   "'[2J\\' || chr(155) || 'x', gen_random_uuid(), '{}')",
                   schema));
    const char *escaped = "evil\\n" FORGED "\\x1b[2J\\\\\\u009bx";

    const char *routes = ob_file("topics.routes", "order.placed q:j\n");
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes,
                   (const char *const[]){"--retention-days", "0", NULL}, NULL);
    char needle[256];
    snprintf(needle, sizeof needle, "1 unpublished row(s) with topic '%s', which no route names",
             escaped);
    if (!ob_relay_wait_log(&rl, needle, 20000))
        OB_FAIL_LOG(&rl, "no unknown-topic warning with the escaped topic (%s)", needle);
    ob_relay_stop(&rl);
    char *log = th_slurp(rl.log);
    expect_no_forgery("relay log", log);
    free(log);

    cli_run r;
    CLI(r, "outbox", "status", "--schema", schema, "--routes", routes, "--database",
        th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 0);
    if (!strstr(r.out, escaped)) fail_msg("status does not show '%s':\n%s", escaped, r.out);
    expect_no_forgery("outbox status", r.out);
    cli_run_free(&r);
    /* --json escapes it as JSON does */
    CLI(r, "outbox", "status", "--json", "--schema", schema, "--database",
        th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 1);
    if (!strstr(r.out, "evil\\n2030")) fail_msg("status --json: %s", r.out);
    cli_run_free(&r);
}

/* A schema a newer ferry migrated (a version above this one's): `ferry migrate` says so and
 * applies nothing, instead of "up to date" with its own version; the relay warns. */
static void test_newer_schema_reported(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    int ours = ferry_outbox_schema_version();
    PQclear(ob_sql(db,
                   "INSERT INTO %s.ferry_schema_migrations (version, name) VALUES (%d, 'future')",
                   schema, ours + 1));
    cli_run r;
    CLI(r, "migrate", "--schema", schema, "--database", th_env_require("DATABASE_URL"));
    CLI_EXPECT(r, 0);
    char want[256];
    snprintf(want, sizeof want,
             "schema %s: at version %d, newer than this ferry's %d: nothing applied (a newer ferry "
             "migrated it; upgrade this one)\n",
             schema, ours + 1, ours);
    assert_string_equal(r.out, want);
    cli_run_free(&r);
    const char *routes = ob_file("newer.routes", "order.placed q:j\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, th_prefix(), routes, NULL, NULL);
    snprintf(want, sizeof want, "schema %s is at version %d, newer than this ferry's %d", schema,
             ours + 1, ours);
    if (!ob_relay_wait_log(&rl, want, 20000)) OB_FAIL_LOG(&rl, "no warning '%s'", want);
    ob_relay_stop(&rl);
}

typedef struct published_arg {
    PGconn *db;
    const char *schema, *topic;
    long long want;
} published_arg;

static int published(void *arg) {
    const published_arg *a = arg;
    return ob_ll(a->db,
                 "SELECT count(*) FROM %s.outbox_events WHERE topic = '%s' AND published_at IS "
                 "NOT NULL",
                 a->schema, a->topic) == a->want;
}

/* A large row Redis refuses every time (here its queue's wait key is of the wrong type; in
 * production an OOM reply for its size) is set aside after three refusals in a row over five
 * seconds at least, with the reason, so the events behind it, for other queues, are published
 * instead of waiting for ever; nothing of it is left in Redis. */
static void test_row_redis_refuses_set_aside(void **state) {
    (void)state;
    const char *schema = ob_schema(db);
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    PQclear(ob_sql(db,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at) "
                   "VALUES ('0190a8e0-0000-7000-8000-000000000001', 'big.one', gen_random_uuid(), "
                   "jsonb_build_object('p', repeat('x', 100000)), now() - interval '1 minute')",
                   schema));
    ob_insert_many(db, schema, "small.one", 3);
    ferry_conn *rds = th_conn();
    freeReplyObject(th_cmd(rds, "SET %s:bigq:wait oops", prefix));
    const char *routes = ob_file("refused.routes", "big.one bigq:j\nsmall.one q:j\n");
    ob_relay rl;
    ob_relay_start(&rl, schema, prefix, routes, (const char *const[]){"--max-backoff", "20", NULL},
                   NULL);
    if (!ob_relay_wait_log(&rl, "event 0190a8e0-0000-7000-8000-000000000001 set aside", 30000))
        OB_FAIL_LOG(&rl, "the refused row was not set aside");
    published_arg pa = {db, schema, "small.one", 3};
    if (!th_wait_until(published, &pa, 30000))
        OB_FAIL_LOG(&rl, "the rows behind it were not published");
    ob_relay_stop(&rl);
    PGresult *res = ob_sql(db,
                           "SELECT quarantined_at IS NOT NULL, published_at IS NULL, last_error "
                           "FROM %s.outbox_events WHERE topic = 'big.one'",
                           schema);
    assert_string_equal(PQgetvalue(res, 0, 0), "t");
    assert_string_equal(PQgetvalue(res, 0, 1), "t");
    const char *why = PQgetvalue(res, 0, 2);
    if (!strstr(why, "Redis refused this row's job data (") || !strstr(why, " times in ") ||
        !strstr(why, "WRONGTYPE") || !strstr(why, "clear quarantined_at to publish it"))
        fail_msg("last_error: %s", why);
    PQclear(res);
    /* the refusals are recorded on the rows of the refused batches too */
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.outbox_events WHERE topic = 'small.one' AND "
                           "attempts >= 1 AND last_error LIKE '%%WRONGTYPE%%'",
                           schema),
                     3);
    /* nothing of it in Redis (the add fails before its first write) */
    redisReply *e = th_cmd(rds, "EXISTS %s:bigq:0190a8e0-0000-7000-8000-000000000001", prefix);
    assert_int_equal(e->integer, 0);
    freeReplyObject(e);
    freeReplyObject(th_cmd(rds, "DEL %s:bigq:wait", prefix));
    ferry__conn_close(rds);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_refuses_what_jsonb_refuses),
        cmocka_unit_test(test_unreadable_routes_file_exits_2),
        cmocka_unit_test(test_bad_database_urls_exit_2),
        cmocka_unit_test(test_relay_bad_default_job_options_exit_2),
        cmocka_unit_test(test_topic_control_characters_escaped),
        cmocka_unit_test(test_newer_schema_reported),
        cmocka_unit_test(test_row_redis_refuses_set_aside),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
