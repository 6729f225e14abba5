/* test_inbox_metrics.c - ferry_inbox_duplicates_total{consumer} against a real PostgreSQL:
 * counted by ferry_inbox_claim and ferry_inbox_run on duplicates only, per consumer, shared
 * by two option structs on one registry (found, not registered twice), nothing counted
 * without a registry, a registry holding the name with other labels left alone (the claim
 * unaffected), and the rendering accepted by the real promtool. */
#include "ferry/inbox.h"
#include "support/ob.h"
#include "support/pm.h"

static PGconn *db;

OB_GROUP_FIXTURE(&db, NULL)

#define ID1 "6f9619ff-8b86-d011-b42d-00cf4fc964ff"
#define ID2 "7f9619ff-8b86-d011-b42d-00cf4fc964ff"

static ferry_outcome effect_ok(PGconn *c, void *ud) {
    (void)c;
    (void)ud;
    return FERRY_COMPLETED;
}

static uint64_t dups(ferry_metrics *m, const char *consumer) {
    ferry_metrics_family *f = ferry_metrics_family_find(m, "ferry_inbox_duplicates_total");
    if (!f) return 0;
    const char *v[] = {consumer};
    ferry_metrics_counter *c = NULL;
    ferry_error e = {0};
    if (ferry_metrics_counter_with(f, v, &c, &e)) fail_msg("lookup: %s", e.message);
    return ferry_metrics_counter_value(c);
}

static int claim(ferry_inbox_options *o, const char *consumer, const char *id) {
    ferry_error e = {0};
    int claimed = -1;
    ob_exec(db, "BEGIN");
    if (ferry_inbox_claim(db, o, consumer, id, &claimed, &e)) fail_msg("claim: %s", e.message);
    ob_exec(db, "COMMIT");
    return claimed;
}

static void test_duplicates_counted(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    ferry_inbox_options a, b;
    ferry_inbox_options_init(&a);
    assert_null(a.metrics);
    a.schema = s;
    a.metrics = m;
    b = a;

    /* first claims count nothing; the family is not even there yet */
    assert_int_equal(claim(&a, "billing", ID1), 1);
    assert_null(ferry_metrics_family_find(m, "ferry_inbox_duplicates_total"));
    assert_int_equal(claim(&a, "billing", ID1), 0);
    assert_int_equal(dups(m, "billing"), 1);
    /* a second user of the same registry finds the family */
    assert_int_equal(claim(&b, "billing", ID1), 0);
    assert_int_equal(dups(m, "billing"), 2);
    /* per consumer: the same id is new for another consumer */
    assert_int_equal(claim(&b, "loyalty", ID1), 1);
    assert_int_equal(dups(m, "loyalty"), 0);

    /* ferry_inbox_run: the first run applies the effect, the second is a duplicate */
    ferry_inbox_result res;
    assert_int_equal(ferry_inbox_run(db, &a, "loyalty", ID2, effect_ok, NULL, &res),
                     FERRY_COMPLETED);
    assert_int_equal(res.duplicate, 0);
    assert_int_equal(dups(m, "loyalty"), 0);
    assert_int_equal(ferry_inbox_run(db, &b, "loyalty", ID2, effect_ok, NULL, &res),
                     FERRY_COMPLETED);
    assert_int_equal(res.duplicate, 1);
    assert_int_equal(dups(m, "loyalty"), 1);
    assert_int_equal(dups(m, "billing"), 2);

    /* without a registry: the same duplicate, nothing counted anywhere */
    ferry_inbox_options none;
    ferry_inbox_options_init(&none);
    none.schema = s;
    assert_int_equal(claim(&none, "billing", ID1), 0);
    assert_int_equal(dups(m, "billing"), 2);

    char *text = NULL;
    assert_int_equal(ferry_metrics_render(m, &text, NULL, &e), 0);
    assert_non_null(strstr(text, "\nferry_inbox_duplicates_total{consumer=\"billing\"} 2\n"));
    assert_non_null(strstr(text, "\nferry_inbox_duplicates_total{consumer=\"loyalty\"} 1\n"));
    assert_non_null(strstr(text, "# TYPE ferry_inbox_duplicates_total counter\n"));
    pm_promtool_check(text, "inbox_duplicates");
    free(text);
    ferry_metrics_destroy(m);
}

/* A registry where the name means something else: the claim works, that family untouched. */
static void test_foreign_family(void **state) {
    (void)state;
    const char *s = ob_schema(db);
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    static const char *const labels[] = {"consumer", "region"};
    ferry_metrics_spec sp;
    ferry_metrics_spec_init(&sp);
    sp.kind = FERRY_METRICS_COUNTER;
    sp.name = "ferry_inbox_duplicates_total";
    sp.help = "someone else's";
    sp.label_names = labels;
    sp.label_count = 2;
    assert_int_equal(ferry_metrics_register(m, &sp, NULL, &e), 0);
    ferry_inbox_options o;
    ferry_inbox_options_init(&o);
    o.schema = s;
    o.metrics = m;
    assert_int_equal(claim(&o, "billing", ID1), 1);
    assert_int_equal(claim(&o, "billing", ID1), 0);
    char *text = NULL;
    assert_int_equal(ferry_metrics_render(m, &text, NULL, &e), 0);
    assert_null(strstr(text, "ferry_inbox_duplicates_total{"));
    free(text);
    ferry_metrics_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duplicates_counted),
        cmocka_unit_test(test_foreign_family),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
