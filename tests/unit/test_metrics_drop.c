/* test_metrics_drop.c - ferry__metrics_series_drop (src/metrics/metrics_module.h): a dropped
 * series leaves the rendering while its handle stays usable, comes back with its value on
 * the next lookup, still counts against the family's label bound, and bad arguments are
 * refused; an unlabelled family keeps its series. No servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/metrics.h"
#include "metrics/metrics_module.h"

static char *render(ferry_metrics *m) {
    char *t = NULL;
    ferry_error e = {0};
    if (ferry_metrics_render(m, &t, NULL, &e)) fail_msg("render: %s", e.message);
    return t;
}

static ferry_metrics_family *gauge_family(ferry_metrics *m, const char *name, size_t nlabels,
                                          size_t max_series) {
    static const char *const labels[] = {"queue"};
    ferry_metrics_spec s;
    ferry_metrics_spec_init(&s);
    s.kind = FERRY_METRICS_GAUGE;
    s.name = name;
    s.help = "test";
    s.label_names = labels;
    s.label_count = nlabels;
    s.max_series = max_series;
    ferry_metrics_family *f = NULL;
    ferry_error e = {0};
    if (ferry_metrics_register(m, &s, &f, &e)) fail_msg("register: %s", e.message);
    return f;
}

static void test_drop_and_back(void **state) {
    (void)state;
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    ferry_metrics_family *f = gauge_family(m, "ferry_test_depth", 1, 2);
    const char *a[] = {"a"}, *b[] = {"b"}, *c[] = {"c"};
    ferry_metrics_gauge *ga = NULL, *gb = NULL, *gc = NULL;
    assert_int_equal(ferry_metrics_gauge_with(f, a, &ga, &e), 0);
    assert_int_equal(ferry_metrics_gauge_with(f, b, &gb, &e), 0);
    ferry_metrics_gauge_set(ga, 7);
    ferry_metrics_gauge_set(gb, 8);
    assert_int_equal(ferry__metrics_series_drop(f, a, &e), 0);
    char *t = render(m);
    assert_null(strstr(t, "ferry_test_depth{queue=\"a\"}"));
    assert_non_null(strstr(t, "\nferry_test_depth{queue=\"b\"} 8\n"));
    free(t);
    /* the handle stays valid; updates are kept, unseen */
    ferry_metrics_gauge_set(ga, 9);
    assert_true(ferry_metrics_gauge_value(ga) == 9);
    /* still counted against the bound (2): a third combination folds */
    assert_int_equal(ferry_metrics_gauge_with(f, c, &gc, &e), 0);
    t = render(m);
    assert_non_null(strstr(t, "\nferry_test_depth{queue=\"other\"} 0\n"));
    assert_non_null(
        strstr(t, "\nferry_metrics_folded_series_total{family=\"ferry_test_depth\"} 1\n"));
    free(t);
    /* a lookup brings it back, same handle, its value */
    ferry_metrics_gauge *again = NULL;
    assert_int_equal(ferry_metrics_gauge_with(f, a, &again, &e), 0);
    assert_ptr_equal(again, ga);
    t = render(m);
    assert_non_null(strstr(t, "\nferry_test_depth{queue=\"a\"} 9\n"));
    free(t);
    /* dropping what was never looked up, or twice: nothing happens */
    const char *z[] = {"never"};
    assert_int_equal(ferry__metrics_series_drop(f, z, &e), 0);
    assert_int_equal(ferry__metrics_series_drop(f, b, &e), 0);
    assert_int_equal(ferry__metrics_series_drop(f, b, &e), 0);
    /* bad arguments */
    assert_int_equal(ferry__metrics_series_drop(NULL, a, &e), FERRY_EINVAL);
    assert_int_equal(ferry__metrics_series_drop(f, NULL, &e), FERRY_EINVAL);
    const char *nul[] = {NULL};
    assert_int_equal(ferry__metrics_series_drop(f, nul, &e), FERRY_EINVAL);
    const char *bad[] = {"\xff"};
    assert_int_equal(ferry__metrics_series_drop(f, bad, &e), FERRY_EINVAL);
    ferry_metrics_destroy(m);
}

static void test_unlabelled_kept(void **state) {
    (void)state;
    ferry_metrics *m = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_metrics_create(NULL, &m, &e), 0);
    ferry_metrics_family *f = gauge_family(m, "ferry_test_plain", 0, 0);
    assert_int_equal(ferry__metrics_series_drop(f, NULL, &e), 0);
    char *t = render(m);
    assert_non_null(strstr(t, "\nferry_test_plain 0\n"));
    free(t);
    ferry_metrics_destroy(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_and_back),
        cmocka_unit_test(test_unlabelled_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
