/* test_dlq_ids.c - the id list of ferry_dlq_filter ("execute the plan the dry run showed")
 * against the real PostgreSQL and Redis:
 *  - list with ids returns exactly those rows (and ANDs the list with the other members);
 *  - a dry run with ids plans exactly those; executing with the same ids redrives exactly
 *    those, the others untouched; a listed row that stopped matching (redriven meanwhile)
 *    and a listed id with no row are reported SKIPPED with their reason, counted in
 *    skipped and not in matched; repeats count once; upper-case ids work;
 *  - purge with ids deletes exactly those;
 *  - an id with no row is "not found (never existed or deleted since)" when the audit never
 *    saw it, "deleted since it was chosen" when a dry run chose it, "... (purged)" when a
 *    purge deleted it: redrive and purge, dry run and executed;
 *  - refused: an empty list, over FERRY_DLQ_IDS_MAX ids, an id that is not a UUID (named by
 *    its index), nothing changed;
 *  - `ferry dlq redrive --ids-file FILE --execute` redrives exactly the rows listed (comments
 *    and blank lines ignored; an id with no row printed "not found"); a line that is not an
 *    id: exit 2, nothing changed. */
#include <stdlib.h>

#include "ferry/deadletter.h"
#include "support/cli.h"
#include "support/ob.h"

static PGconn *db;
static const char *schema;
static char prefix[64];
static ferry_redis_options rro;
static char ids[5][40];

static void record(const char *queue, const char *job_id, const char *error, char id_out[40]) {
    ferry_dlq_failure f = {.prefix = prefix,
                           .queue = queue,
                           .job_id = job_id,
                           .job_name = "charge",
                           .data = "{\"order\":7}",
                           .error = error,
                           .attempts_made = 1,
                           .job_timestamp_ms = 1000};
    ob_dlq_record(db, schema, &f, id_out);
}

static int setup(void **state) {
    (void)state;
    ob_open(&db, NULL);
    schema = ob_schema(db);
    snprintf(prefix, sizeof prefix, "%s", th_prefix());
    ferry_redis_options_init(&rro);
    rro.url = th_env_require("REDIS_URL");
    record("qa", "j0", "boom", ids[0]);
    record("qa", "j1", "boom", ids[1]);
    record("qa", "j2", "boom", ids[2]);
    record("qb", "j3", "bang", ids[3]);
    record("qb", "j4", "bang", ids[4]);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ob_close(db, NULL);
    return 0;
}

typedef struct seen {
    int n;
    char id[8][40];
    int status[8];
    char reason[8][160];
} seen;

static void item(const ferry_dlq_item *it, void *ud) {
    seen *s = ud;
    if (s->n >= 8) fail_msg("too many items");
    snprintf(s->id[s->n], 40, "%s", it->entry->id);
    s->status[s->n] = it->status;
    snprintf(s->reason[s->n], 160, "%s", it->reason ? it->reason : "");
    s->n++;
}

static int status_of(const seen *s, const char *id, const char **reason) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->id[i], id)) {
            if (reason) *reason = s->reason[i];
            return s->status[i];
        }
    return -1;
}

static int redrive(const ferry_dlq_filter *f, int execute, seen *s, ferry_dlq_action_stats *st,
                   ferry_error *e) {
    ferry_dlq_options o = {schema};
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.execute = execute;
    a.actor = "ids-test";
    a.redis = &rro;
    a.item = item;
    a.userdata = s;
    memset(s, 0, sizeof *s);
    return ferry_dlq_redrive(db, &o, f, &a, st, e);
}

static long long redrive_count(const char *id) {
    return ob_ll(db, "SELECT redrive_count FROM %s.dead_letters WHERE id = '%s'", schema, id);
}

static void test_list_with_ids(void **state) {
    (void)state;
    ferry_dlq_options o = {schema};
    const char *want[] = {ids[3], ids[1]};
    ferry_dlq_filter f = {.ids = want, .nids = 2};
    ferry_dlq_list *l = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_list_get(db, &o, &f, &l, &e), 0);
    assert_int_equal(l->n, 2);
    assert_int_equal(l->total, 2);
    assert_true(!strcmp(l->entries[0].id, ids[1]) || !strcmp(l->entries[1].id, ids[1]));
    assert_true(!strcmp(l->entries[0].id, ids[3]) || !strcmp(l->entries[1].id, ids[3]));
    ferry_dlq_list_free(l);
    /* ANDed with the rest of the filter */
    f.queue = "qb";
    assert_int_equal(ferry_dlq_list_get(db, &o, &f, &l, &e), 0);
    assert_int_equal(l->n, 1);
    assert_string_equal(l->entries[0].id, ids[3]);
    ferry_dlq_list_free(l);
}

static void test_execute_exactly_the_plan(void **state) {
    (void)state;
    seen s;
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    /* the plan: ids 0 and 1 of queue qa (2 is not in it) */
    const char *plan[] = {ids[0], ids[1], ids[0]}; /* a repeat counts once */
    ferry_dlq_filter f = {.queue = "qa", .ids = plan, .nids = 3};
    assert_int_equal(redrive(&f, 0, &s, &st, &e), 0);
    assert_int_equal(st.matched, 2);
    assert_int_equal(st.would, 2);
    assert_int_equal(status_of(&s, ids[0], NULL), FERRY_DLQ_WOULD);
    assert_int_equal(status_of(&s, ids[1], NULL), FERRY_DLQ_WOULD);
    assert_int_equal(status_of(&s, ids[2], NULL), -1);
    /* meanwhile someone redrives row 1: it stops matching (redriven rows are not taken) */
    const char *one[] = {ids[1]};
    ferry_dlq_filter f1 = {.ids = one, .nids = 1};
    assert_int_equal(redrive(&f1, 1, &s, &st, &e), 0);
    assert_int_equal(st.done, 1);
    assert_int_equal(redrive_count(ids[1]), 1);
    /* the plan executed, plus an id that has no row: exactly row 0 is redriven */
    const char *ghost = "0190a5c4-7b1e-7c3d-9f00-1234567890ab";
    const char *exec_ids[] = {ids[0], ids[1], ghost};
    ferry_dlq_filter fx = {.queue = "qa", .ids = exec_ids, .nids = 3};
    assert_int_equal(redrive(&fx, 1, &s, &st, &e), 0);
    assert_int_equal(st.matched, 1);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(status_of(&s, ids[0], NULL), FERRY_DLQ_DONE);
    const char *why = NULL;
    assert_int_equal(status_of(&s, ids[1], &why), FERRY_DLQ_SKIPPED);
    assert_non_null(strstr(why, "no longer matches"));
    assert_int_equal(status_of(&s, ghost, &why), FERRY_DLQ_SKIPPED);
    assert_string_equal(why, "not found (never existed or deleted since)");
    assert_int_equal(redrive_count(ids[0]), 1);
    assert_int_equal(redrive_count(ids[1]), 1); /* not twice */
    assert_int_equal(redrive_count(ids[2]), 0); /* not in the plan */
    assert_int_equal(redrive_count(ids[3]), 0);
    /* the job is in Redis under its redrive id */
    ferry_conn *c = th_conn();
    assert_int_equal(th_cmd_int(c, "EXISTS %s:qa:dlq-%s-1", prefix, ids[0]), 1);
    assert_int_equal(th_cmd_int(c, "EXISTS %s:qa:dlq-%s-1", prefix, ids[2]), 0);
    ferry__conn_close(c);
    /* the audit names the list */
    assert_int_equal(ob_ll(db,
                           "SELECT count(*) FROM %s.dead_letter_redrives WHERE dead_letter_id = "
                           "'%s' AND NOT dry_run AND filter LIKE '%%ids=3%%'",
                           schema, ids[0]),
                     1);
}

static void test_upper_case_and_purge(void **state) {
    (void)state;
    char up[40];
    for (size_t i = 0; i <= strlen(ids[4]); i++)
        up[i] = (char)(ids[4][i] >= 'a' && ids[4][i] <= 'f' ? ids[4][i] - 32 : ids[4][i]);
    const char *list[] = {up};
    ferry_dlq_filter f = {.ids = list, .nids = 1};
    seen s;
    ferry_dlq_options o = {schema};
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.execute = 1;
    a.actor = "ids-test";
    a.item = item;
    a.userdata = &s;
    memset(&s, 0, sizeof s);
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    assert_int_equal(ferry_dlq_purge(db, &o, &f, &a, &st, &e), 0);
    assert_int_equal(st.matched, 1);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.skipped, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.dead_letters WHERE id = '%s'", schema, ids[4]), 0);
    assert_int_equal(
        ob_ll(db, "SELECT count(*) FROM %s.dead_letters WHERE id = '%s'", schema, ids[3]), 1);
}

/* An id without a row: the reason says what the audit can tell, never more (an id no dry
 * run or purge ever saw is "not found", not "deleted since it was chosen"). */
static void test_missing_ids_reasons(void **state) {
    (void)state;
    char c[40];
    record("qd", "d1", "boom", c);
    seen s;
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    /* c is chosen by a dry run (audited), then deleted by hand, not by a purge */
    const char *one[] = {c};
    ferry_dlq_filter fc = {.ids = one, .nids = 1};
    assert_int_equal(redrive(&fc, 0, &s, &st, &e), 0);
    assert_int_equal(st.would, 1);
    PQclear(ob_sql(db, "DELETE FROM %s.dead_letters WHERE id = '%s'", schema, c));
    const char *ghost = "0190a5c4-7b1e-7c3d-9f00-00000000abcd"; /* never a row */
    const char *list[] = {ghost, ids[4], c};                    /* ids[4]: purged above */
    ferry_dlq_filter f = {.ids = list, .nids = 3};
    for (int purge = 0; purge < 2; purge++) {
        for (int execute = 0; execute < 2; execute++) {
            if (!purge) {
                assert_int_equal(redrive(&f, execute, &s, &st, &e), 0);
            } else {
                ferry_dlq_options o = {schema};
                ferry_dlq_action_options a;
                ferry_dlq_action_options_init(&a);
                a.execute = execute;
                a.actor = "ids-test";
                a.item = item;
                a.userdata = &s;
                memset(&s, 0, sizeof s);
                assert_int_equal(ferry_dlq_purge(db, &o, &f, &a, &st, &e), 0);
            }
            assert_int_equal(st.matched, 0);
            assert_int_equal(st.skipped, 3);
            assert_int_equal(s.n, 3);
            const char *why = NULL;
            assert_int_equal(status_of(&s, ghost, &why), FERRY_DLQ_SKIPPED);
            assert_string_equal(why, "not found (never existed or deleted since)");
            assert_int_equal(status_of(&s, ids[4], &why), FERRY_DLQ_SKIPPED);
            assert_string_equal(why, "deleted since it was chosen (purged)");
            assert_int_equal(status_of(&s, c, &why), FERRY_DLQ_SKIPPED);
            assert_string_equal(why, "deleted since it was chosen");
        }
    }
}

static void test_refused(void **state) {
    (void)state;
    long long before = ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", schema);
    seen s;
    ferry_dlq_action_stats st;
    ferry_error e = {0};
    const char *bad[] = {ids[0], "not-a-uuid"};
    ferry_dlq_filter f = {.ids = bad, .nids = 2};
    assert_int_equal(redrive(&f, 1, &s, &st, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "ids[1]"));
    assert_null(strstr(e.message, "not-a-uuid"));
    ferry_dlq_filter empty = {.ids = bad, .nids = 0};
    assert_int_equal(redrive(&empty, 1, &s, &st, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "ids is empty"));
    ferry_dlq_filter null_list = {.ids = NULL, .nids = 3};
    assert_int_equal(redrive(&null_list, 1, &s, &st, &e), FERRY_EINVAL);
    const char **many = calloc(FERRY_DLQ_IDS_MAX + 1, sizeof *many);
    for (size_t i = 0; i <= FERRY_DLQ_IDS_MAX; i++)
        many[i] = ids[0];
    ferry_dlq_filter big = {.ids = many, .nids = FERRY_DLQ_IDS_MAX + 1};
    assert_int_equal(redrive(&big, 1, &s, &st, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "at most 1000"));
    /* exactly the maximum is fine (a dry run) */
    big.nids = FERRY_DLQ_IDS_MAX;
    assert_int_equal(redrive(&big, 0, &s, &st, &e), 0);
    free(many);
    ferry_dlq_list *l = NULL;
    ferry_dlq_options o = {schema};
    assert_int_equal(ferry_dlq_list_get(db, &o, &f, &l, &e), FERRY_EINVAL);
    assert_null(l);
    /* only the allowed dry run left audit rows (row 0 is redriven: nothing it would do) */
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letter_redrives", schema), before);
}

static void test_cli_ids_file(void **state) {
    (void)state;
    char a[40], b[40];
    record("qc", "c1", "boom", a);
    record("qc", "c2", "boom", b);
    char text[200];
    snprintf(text, sizeof text, "# reviewed plan\n\n  %s  \n%s\n", b,
             "0190a5c4-7b1e-7c3d-9f00-00000000cdef");
    const char *path = ob_file("ids.txt", text);
    cli_run r;
    CLI(r, "dlq", "redrive", "--ids-file", path, "--queue", "qc", "--execute", "--actor", "cli",
        "--database", th_env_require("DATABASE_URL"), "--schema", schema, "--redis", cli_url(),
        "--prefix", prefix);
    CLI_EXPECT(r, 0);
    if (!strstr(r.out, "1 row redriven")) fail_msg("output: %s", r.out);
    if (!strstr(r.out, "skipped 0190a5c4-7b1e-7c3d-9f00-00000000cdef: not found (never existed "
                       "or deleted since)"))
        fail_msg("output: %s", r.out);
    if (strstr(r.out, "deleted since it was chosen")) fail_msg("output: %s", r.out);
    cli_run_free(&r);
    assert_int_equal(redrive_count(a), 0);
    assert_int_equal(redrive_count(b), 1);
    path = ob_file("bad-ids.txt", "not-an-id\n");
    CLI(r, "dlq", "redrive", "--ids-file", path, "--execute", "--database",
        th_env_require("DATABASE_URL"), "--schema", schema, "--redis", cli_url(), "--prefix",
        prefix);
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, "line 1 is not a dead letter id")) fail_msg("stderr: %s", r.err);
    cli_run_free(&r);
    assert_int_equal(redrive_count(a), 0);
}

/* An ids file that is not one is refused before anything is read into memory past 1 MiB
 * or connected to: an endless file (/dev/zero), a 2 MiB line, a directory, a NUL byte
 * hiding junk after a valid id. */
static void test_cli_ids_file_bounds(void **state) {
    (void)state;
    char a[40];
    record("qb", "b1", "boom", a);
    const char *nul = ob_file("nul-ids.txt", "");
    FILE *f = fopen(nul, "wb");
    assert_non_null(f);
    fprintf(f, "%s", a);
    fputc(0, f);
    fprintf(f, "garbage\n");
    fclose(f);
    const char *big = ob_file("big-ids.txt", "");
    f = fopen(big, "wb");
    assert_non_null(f);
    for (int i = 0; i < 2 * 1024 * 1024; i++)
        fputc('a', f);
    fclose(f);
    struct {
        const char *path, *says;
    } cases[] = {
        {"/dev/zero", "--ids-file: over 1048576 bytes"},
        {big, "--ids-file: over 1048576 bytes"},
        {th_tmpdir(), "is a directory"},
        {nul, "--ids-file: line 1 holds a NUL byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_run r;
        CLI(r, "dlq", "purge", "--ids-file", cases[i].path, "--execute", "--database",
            th_env_require("DATABASE_URL"), "--schema", schema);
        CLI_EXPECT(r, 2);
        if (!strstr(r.err, cases[i].says)) fail_msg("%s: stderr: %s", cases[i].path, r.err);
        cli_run_free(&r);
    }
    assert_int_equal(ob_ll(db, "SELECT count(*) FROM %s.dead_letters WHERE id = '%s'", schema, a),
                     1);
    /* 1000 ids and one of them again: a repeat counts once, as the library counts it; 1001
     * different ids are too many */
    for (int distinct = 1000; distinct <= 1001; distinct++) {
        const char *path = ob_file("many-ids.txt", "");
        f = fopen(path, "wb");
        assert_non_null(f);
        for (int i = 0; i < distinct; i++)
            fprintf(f, "0190a5c4-7b1e-7c3d-9f00-%012d\n", i);
        if (distinct == 1000) fprintf(f, "0190A5C4-7B1E-7C3D-9F00-%012d\n", 7);
        fclose(f);
        cli_run r;
        CLI(r, "dlq", "purge", "--ids-file", path, "--database", th_env_require("DATABASE_URL"),
            "--schema", schema);
        if (distinct == 1000) {
            CLI_EXPECT(r, 0);
        } else {
            CLI_EXPECT(r, 2);
            if (!strstr(r.err, "more than 1000 ids")) fail_msg("stderr: %s", r.err);
        }
        cli_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_with_ids),
        cmocka_unit_test(test_execute_exactly_the_plan),
        cmocka_unit_test(test_upper_case_and_purge),
        cmocka_unit_test(test_missing_ids_reasons),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_cli_ids_file),
        cmocka_unit_test(test_cli_ids_file_bounds),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    th_tmpdir_remove();
    return th_exit(rc);
}
