/* test_cli_inbox.c - `ferry inbox status` and `ferry inbox cleanup` against a real
 * PostgreSQL: counts per consumer in text and JSON, cleanup in bounded batches keeping the
 * recent markers, and bad input (a bad duration, a batch out of range, a schema that is not
 * migrated, an unreachable database) refused with a clear message and no row touched. */
#include <jansson.h>

#include "ferry/inbox.h"
#include "support/cli.h"
#include "support/ob.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

static void test_status_and_cleanup(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    const char *url = th_env_require("DATABASE_URL");
    /* 1200 old markers of "mailer", 5 recent of "loyalty" */
    PQclear(ob_sql(db,
                   "INSERT INTO %s.processed_messages (consumer, message_id, processed_at) "
                   "SELECT 'mailer', gen_random_uuid(), now() - interval '10 days' "
                   "FROM generate_series(1, 1200)",
                   s));
    PQclear(ob_sql(db,
                   "INSERT INTO %s.processed_messages (consumer, message_id) "
                   "SELECT 'loyalty', gen_random_uuid() FROM generate_series(1, 5)",
                   s));
    cli_run r;
    CLI(r, "inbox", "status", "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "markers: 1205"));
    assert_non_null(strstr(r.out, "mailer"));
    assert_non_null(strstr(r.out, "10.0 d"));
    cli_run_free(&r);

    CLI(r, "inbox", "status", "--json", "--database", url, "--schema", s);
    CLI_EXPECT(r, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "totalRows")), 1205);
    json_t *first = json_array_get(json_object_get(j, "consumers"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "consumer")), "mailer");
    assert_int_equal(json_integer_value(json_object_get(first, "rows")), 1200);
    assert_true(json_real_value(json_object_get(first, "oldestAgeSeconds")) > 9 * 86400);
    json_decref(j);
    cli_run_free(&r);

    /* bad input: nothing deleted */
    CLI(r, "inbox", "cleanup", "--older-than", "7 days", "--database", url, "--schema", s);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--older-than"));
    cli_run_free(&r);
    CLI(r, "inbox", "cleanup", "--older-than", "7d", "--batch", "0", "--database", url, "--schema",
        s);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    CLI(r, "inbox", "cleanup", "--older-than", "7d", "--database", url, "--schema", "nosuch");
    CLI_EXPECT(r, 1);
    assert_true(strlen(r.err) > 0);
    cli_run_free(&r);
    CLI(r, "inbox", "status", "--database", "postgresql://u:hunter2@127.0.0.1:1/x", "--db-timeout",
        "2000");
    CLI_EXPECT(r, 1);
    assert_null(strstr(r.err, "hunter2"));
    cli_run_free(&r);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", s), 1205);

    CLI(r, "inbox", "cleanup", "--older-than", "7d", "--batch", "500", "--database", url,
        "--schema", s);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "deleted 1200 marker(s)"));
    cli_run_free(&r);
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.processed_messages", s), 5);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_and_cleanup),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
