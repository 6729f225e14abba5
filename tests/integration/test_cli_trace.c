/* test_cli_trace.c - `ferry trace EVENT_ID` (the real binary) on state built by the real
 * pipeline (trace_fixture.h):
 *  - the text output has one section per hop with what each holds (topic, routes, the
 *    jobs and their states, the consumer, the dead letters, the redrives);
 *  - --json prints one object of the API's shape (jobs with redriveOf, both dead letters);
 *  - without --routes the jobs are still found (every queue under the prefix), and the
 *    routes section says they were not given;
 *  - an id nothing knows: exit 1 and a message; not a UUID: exit 2, the text not echoed; a
 *    bad routes file: exit 2. */
#include <stdlib.h>

#include "support/cli.h"
#include "support/ob.h"
#include "trace_fixture.h"

static PGconn *db;
static const char *schema;
static char prefix[64];
static tf_state st;

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    tf_build(db, schema, prefix, &st);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ob_close(db, NULL);
    return 0;
}

#define TRACE(r, ...)                                                                              \
    CLI(r, "trace", __VA_ARGS__, "--database", th_env_require("DATABASE_URL"), "--schema", schema, \
        "--redis", cli_url(), "--prefix", prefix)

static void expect_in(const cli_run *r, const char *needle) {
    if (!strstr(r->out, needle)) fail_msg("output lacks \"%s\":\n%s", needle, r->out);
}

static void test_text(void **state) {
    (void)state;
    cli_run r;
    TRACE(r, st.event_id, "--routes", st.routes_path);
    CLI_EXPECT(r, 0);
    const char *sections[] = {"\noutbox:\n", "\nroutes:\n",       "\njobs:\n",
                              "\ninbox:\n",  "\ndead letters:\n", "\nredrives:\n"};
    const char *last = r.out;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        const char *at = strstr(last, sections[i]);
        if (!at) fail_msg("section %s missing or out of order:\n%s", sections[i], r.out);
        last = at;
    }
    expect_in(&r, "topic order.placed");
    expect_in(&r, "trace id " TF_TRACE_ID);
    expect_in(&r, "  pay:capture\n  notify:confirm\n");
    char line[256];
    snprintf(line, sizeof line, "notify job %s (confirm): completed", st.event_id);
    expect_in(&r, line);
    snprintf(line, sizeof line, "pay job %s (capture): failed", st.event_id);
    expect_in(&r, line);
    snprintf(line, sizeof line, "redrive of dead letter %s", st.dl1);
    expect_in(&r, line);
    expect_in(&r, TF_CONSUMER " processed it ");
    /* the reason's line break is escaped, not printed */
    expect_in(&r, "error: " TF_REASON "\\nat the bank");
    snprintf(line, sizeof line, "dry-run redrive of %s by tracer", st.dl1);
    expect_in(&r, line);
    snprintf(line, sizeof line, "redrive of %s by tracer -> job %s", st.dl1, st.redrive_job);
    expect_in(&r, line);
    assert_null(strstr(r.out, "4111-secret"));
    cli_run_free(&r);
    /* without --routes */
    TRACE(r, st.event_id);
    CLI_EXPECT(r, 0);
    expect_in(&r, "(not given: --routes FILE)");
    snprintf(line, sizeof line, "notify job %s (confirm): completed", st.event_id);
    expect_in(&r, line);
    cli_run_free(&r);
}

static void test_json(void **state) {
    (void)state;
    cli_run r;
    TRACE(r, st.event_id, "--json", "--routes", st.routes_path);
    CLI_EXPECT(r, 0);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    if (!o) fail_msg("not JSON (%s): %s", je.text, r.out);
    assert_string_equal(json_string_value(json_object_get(o, "eventId")), st.event_id);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "outbox"), "topic")),
                        "order.placed");
    assert_int_equal(json_array_size(json_object_get(o, "routes")), 2);
    json_t *jobs = json_object_get(o, "jobs");
    assert_int_equal(json_array_size(jobs), 3);
    int redriven = 0;
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        const char *of = json_string_value(json_object_get(j, "redriveOf"));
        if (of) {
            assert_string_equal(of, st.dl1);
            assert_string_equal(json_string_value(json_object_get(j, "id")), st.redrive_job);
            redriven++;
        }
    }
    assert_int_equal(redriven, 1);
    assert_int_equal(json_array_size(json_object_get(o, "deadLetters")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "redrives")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "inbox")), 1);
    assert_true(json_is_true(json_object_get(o, "found")));
    json_decref(o);
    cli_run_free(&r);
}

static void test_errors(void **state) {
    (void)state;
    cli_run r;
    TRACE(r, "0190a5c4-7b1e-7c3d-9f00-1234567890ab");
    CLI_EXPECT(r, 1);
    /* the message as docs/operations.md shows it, with the command's prefix once */
    assert_non_null(
        strstr(r.err, "ferry trace: no outbox event, job, inbox marker or dead letter"));
    cli_run_free(&r);
    TRACE(r, "secret-looking-text");
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "ferry trace: the event id is not a UUID"));
    assert_null(strstr(r.err, "secret-looking-text"));
    cli_run_free(&r);
    const char *bad = ob_file("bad-routes", "order.placed nocolon\n");
    TRACE(r, st.event_id, "--routes", bad);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--routes"));
    cli_run_free(&r);
    CLI(r, "trace");
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_errors),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(rc);
}
