/* test_queue_cli_input.c - what `ferry queue add` and the other queue/job commands do with
 * bad input, run as real child processes against the fixture's Redis: a refused add writes
 * no key at all, queue names with control characters or invalid UTF-8 are refused for
 * adding and shown escaped everywhere, misspelled and `repeat` job options are refused
 * (with --allow-unknown-opts as the way out), and `queue counts` tells a missing queue and
 * a paused one apart from an empty one. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/qt.h"
#include "support/th.h"

/* How many keys match `pattern` (a KEYS pattern, already prefixed). */
static size_t count_keys(const char *pattern) {
    ferry_conn *c = th_conn();
    redisReply *k = th_cmd(c, "KEYS %s", pattern);
    size_t n = k->elements;
    freeReplyObject(k);
    ferry__conn_close(c);
    return n;
}

/* A refused command: exit 2, nothing on stdout, one line on stderr containing `want`. */
static void expect_refused(cli_run *r, const char *want) {
    CLI_EXPECT(*r, 2);
    assert_string_equal(r->out, "");
    if (cli_lines(r->err) != 1 || !strstr(r->err, want))
        fail_msg("stderr should be one line containing '%s', got: %s", want, r->err);
}

/* Item: a refused add wrote <prefix>:<queue>:meta. Every refusal now comes before the open. */
static void test_refused_add_writes_nothing(void **state) {
    (void)state;
    const char *p = th_prefix();
    static const struct {
        const char *opts, *job_id, *data, *want;
    } cases[] = {
        {"{\"priority\":-1}", NULL, NULL, "opts.priority"},
        {NULL, "meta", NULL, "opts.jobId: 'meta' is the name of one of the queue's own keys"},
        {"{\"delay\":-5}", NULL, NULL, "opts.delay"},
        {"{\"removeOnComplete\":\"yes\"}", NULL, NULL, "opts.removeOnComplete"},
        {"{\"atempts\":3}", NULL, NULL, "did you mean \"attempts\"?"},
        {"{\"repeat\":{\"every\":1000}}", NULL, NULL, "ferry scheduler upsert"},
        {"{\"jobId\":\"42\"}", NULL, NULL, "custom ids cannot be integers"},
        {"{\"sizeLimit\":2}", NULL, "{\"a\":1}", "sizeLimit"},
    };
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s:refused*", p);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_run r;
        const char *data = cases[i].data ? cases[i].data : "{}";
        if (cases[i].opts)
            CLI(r, "queue", "add", "refused", "n", data, "--opts", cases[i].opts, "--redis",
                cli_url(), "--prefix", p);
        else
            CLI(r, "queue", "add", "refused", "n", data, "--job-id", cases[i].job_id, "--redis",
                cli_url(), "--prefix", p);
        expect_refused(&r, cases[i].want);
        cli_run_free(&r);
        if (count_keys(pattern)) fail_msg("case %zu (%s) left keys behind", i, cases[i].want);
    }
    /* add-bulk whose first line is refused writes nothing either */
    cli_run r;
    CLI_IN(r, "{\"name\":\"a\",\"opts\":{\"priority\":-1}}\n", "queue", "add-bulk", "refused",
           "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 2);
    cli_run_free(&r);
    assert_int_equal(count_keys(pattern), 0);
    /* and a good add still writes meta and the job */
    CLI(r, "queue", "add", "refused", "n", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    assert_true(count_keys(pattern) > 0);
}

/* Item: control characters and invalid UTF-8 in queue names. */
static void test_queue_name_rules(void **state) {
    (void)state;
    const char *p = th_prefix();
    char pattern[256];
    snprintf(pattern, sizeof pattern, "%s:q*", p);
    static const struct {
        const char *name, *shown;
    } bad[] = {
        {"q\nfake line", "q\\nfake line"},
        {"q\x1b[31mred", "q\\x1b[31mred"},
        {"q\xff", "q\\xff"},
        {"q\xc2\x85next", "q\\u0085next"},
        {"q\x7f", "q\\x7f"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_run r;
        CLI(r, "queue", "add", bad[i].name, "n", "--redis", cli_url(), "--prefix", p);
        expect_refused(&r, bad[i].shown);
        cli_run_free(&r);
        CLI_IN(r, "{\"name\":\"n\"}\n", "queue", "add-bulk", bad[i].name, "--redis", cli_url(),
               "--prefix", p);
        expect_refused(&r, bad[i].shown);
        cli_run_free(&r);
        CLI(r, "queue", "pause", bad[i].name, "--redis", cli_url(), "--prefix", p);
        expect_refused(&r, bad[i].shown);
        cli_run_free(&r);
        assert_int_equal(count_keys(pattern), 0);
        /* reading keeps working, shown escaped on one line */
        CLI(r, "queue", "counts", bad[i].name, "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        assert_int_equal(cli_lines(r.out), 1);
        if (!strstr(r.out, bad[i].shown)) fail_msg("counts: %s", r.out);
        cli_run_free(&r);
        CLI(r, "job", "show", bad[i].name, "1", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 1);
        assert_int_equal(cli_lines(r.err), 1);
        if (!strstr(r.err, bad[i].shown)) fail_msg("job show: %s", r.err);
        cli_run_free(&r);
        CLI(r, "job", "remove", bad[i].name, "x\ny", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 1);
        assert_int_equal(cli_lines(r.err), 1);
        if (!strstr(r.err, "job x\\ny not found in queue") || !strstr(r.err, bad[i].shown))
            fail_msg("job remove: %s", r.err);
        cli_run_free(&r);
        assert_int_equal(count_keys(pattern), 0);
    }

    /* a queue Node made with such a name: job show/remove find its jobs */
    ferry_conn *c = th_conn();
    freeReplyObject(th_cmd(c, "HSET %s:q\nx:7 name n data {} opts {} timestamp 1", p));
    freeReplyObject(th_cmd(c, "LPUSH %s:q\nx:wait 7", p));
    ferry__conn_close(c);
    cli_run r;
    CLI(r, "job", "show", "q\nx", "7", "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "job", "remove", "q\nx", "7", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);

    /* the library: refused at open for adding, a read-only handle refuses adds */
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = cli_url();
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = p;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open("lib\tq", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "queue name 'lib\\tq' contains a control character"));
    assert_null(q);
    o.skip_meta_update = 1;
    assert_int_equal(ferry_queue_open("lib\tq", &o, &q, &e), 0);
    ferry_job_spec spec = {"n", NULL, NULL};
    assert_int_equal(ferry_queue_add(q, &spec, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "no jobs can be added"));
    assert_int_equal(ferry_queue_remove_job(q, "nope\n", &e), FERRY_ENOTFOUND);
    assert_string_equal(e.message, "job nope\\n not found in queue lib\\tq");
    ferry_queue_close(q);
    snprintf(pattern, sizeof pattern, "%s:lib*", p);
    assert_int_equal(count_keys(pattern), 0);
}

/* Item: misspelled job options are refused, with the nearest name; --allow-unknown-opts
 * stores them as given; the queue's default options follow the same rule. */
static void test_unknown_options(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "uo", "n", "--opts", "{\"atempts\":3}", "--redis", cli_url(), "--prefix",
        p);
    expect_refused(&r, "ferry queue add: unknown job option \"atempts\" (did you mean "
                       "\"attempts\"?)");
    cli_run_free(&r);
    CLI(r, "queue", "add", "uo", "n", "--opts", "{\"backoff\":{\"type\":\"fixed\",\"dely\":5}}",
        "--redis", cli_url(), "--prefix", p);
    expect_refused(&r, "opts.backoff: unknown member \"dely\" (did you mean \"delay\"?)");
    cli_run_free(&r);
    CLI(r, "queue", "add", "uo", "n", "--opts", "{\"atempts\":3,\"attempts\":2}",
        "--allow-unknown-opts", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char id[64];
    snprintf(id, sizeof id, "%s", r.out);
    id[strcspn(id, "\n")] = 0;
    cli_run_free(&r);
    ferry_conn *c = th_conn();
    redisReply *rep = th_cmd(c, "HGET %s:uo:%s opts", p, id);
    assert_int_equal(rep->type, REDIS_REPLY_STRING);
    assert_string_equal(rep->str, "{\"attempts\":2,\"atempts\":3}");
    freeReplyObject(rep);
    ferry__conn_close(c);
    /* repeat is refused even then */
    CLI(r, "queue", "add", "uo", "n", "--opts", "{\"repeat\":{\"every\":5}}",
        "--allow-unknown-opts", "--redis", cli_url(), "--prefix", p);
    expect_refused(&r, "`ferry scheduler upsert`, or ferry_scheduler_upsert() in C");
    cli_run_free(&r);

    /* the C API: default options are checked at open; the switch lets them through */
    ferry_redis_options ro;
    ferry_redis_options_init(&ro);
    ro.url = cli_url();
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = p;
    o.default_job_opts = "{\"removeOnComplet\":true}";
    ferry_queue *q = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_queue_open("uo", &o, &q, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "default_job_opts: unknown job option \"removeOnComplet\" "
                                      "(did you mean \"removeOnComplete\"?)"));
    o.allow_unknown_opts = 1;
    assert_int_equal(ferry_queue_open("uo", &o, &q, &e), 0);
    ferry_queue_close(q);
}

/* Every key of BullMQ 6.7.0's JobsOptions is accepted by the add path (deduplication and
 * parent are refused for what they ask, not as unknown keys). */
static void test_every_node_option_adds(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "allkeys", NULL);
    static const char *const ok[] = {
        "{\"jobId\":\"all-1\"}",
        "{\"attempts\":3}",
        "{\"backoff\":{\"type\":\"exponential\",\"delay\":10,\"jitter\":0.5}}",
        "{\"delay\":5}",
        "{\"priority\":5}",
        "{\"lifo\":true}",
        "{\"timestamp\":1700000000000}",
        "{\"removeOnComplete\":{\"age\":5,\"count\":2,\"limit\":3}}",
        "{\"removeOnFail\":7}",
        "{\"stackTraceLimit\":3}",
        "{\"keepLogs\":3}",
        "{\"sizeLimit\":100}",
        "{\"failParentOnFailure\":true}",
        "{\"continueParentOnFailure\":true}",
        "{\"ignoreDependencyOnFailure\":true}",
        "{\"removeDependencyOnFailure\":true}",
        "{\"telemetry\":{\"metadata\":\"m\",\"omitContext\":true}}",
        "{\"prevMillis\":5}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ferry_job_spec spec = {"n", NULL, ok[i]};
        char *id = NULL;
        ferry_error e = {0};
        if (ferry_queue_add(q, &spec, &id, &e)) fail_msg("%s: %s", ok[i], e.message);
        free(id);
    }
    static const char *const refused[] = {
        ("{\"deduplication\":{\"id\":\"d\",\"ttl\":5,\"extend\":true,\"replace\":false,"
         "\"reschedule\":false,\"keepLastIfActive\":false}}"),
        "{\"parent\":{\"id\":\"1\",\"queue\":\"bull:p\"}}",
        "{\"repeatJobKey\":\"k\"}",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        ferry_job_spec spec = {"n", NULL, refused[i]};
        ferry_error e = {0};
        assert_int_equal(ferry_queue_add(q, &spec, NULL, &e), FERRY_EINVAL);
        if (strstr(e.message, "unknown")) fail_msg("%s: %s", refused[i], e.message);
    }
    ferry_queue_close(q);
}

/* Item: a misspelled queue looks like an empty one; the paused state in --json. */
static void test_counts_exists_and_paused(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    /* missing */
    CLI(r, "queue", "counts", "nosuchq", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char want[256];
    snprintf(want, sizeof want,
             "queue nosuchq does not exist (no keys under %s:nosuchq:); check the name and "
             "--prefix\n",
             p);
    assert_string_equal(r.out, want);
    cli_run_free(&r);
    CLI(r, "queue", "counts", "nosuchq", "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = json_loads(r.out, 0, NULL);
    assert_non_null(j);
    assert_true(json_is_false(json_object_get(j, "exists")));
    assert_true(json_is_false(json_object_get(j, "isPaused")));
    assert_int_equal(json_integer_value(json_object_get(j, "waiting")), 0);
    json_decref(j);
    cli_run_free(&r);
    /* existing, then paused */
    CLI(r, "queue", "add", "realq", "n", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    for (int paused = 0; paused < 2; paused++) {
        if (paused) {
            CLI(r, "queue", "pause", "realq", "--redis", cli_url(), "--prefix", p);
            CLI_EXPECT(r, 0);
            cli_run_free(&r);
        }
        CLI(r, "queue", "counts", "realq", "--json", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        j = json_loads(r.out, 0, NULL);
        assert_non_null(j);
        assert_true(json_is_true(json_object_get(j, "exists")));
        assert_int_equal(json_is_true(json_object_get(j, "isPaused")), paused);
        assert_true(json_is_boolean(json_object_get(j, "isPaused")));
        assert_int_equal(json_integer_value(json_object_get(j, "waiting")), 1);
        assert_int_equal(json_integer_value(json_object_get(j, "paused")), 0); /* legacy list */
        json_decref(j);
        cli_run_free(&r);
        CLI(r, "queue", "counts", "realq", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        assert_non_null(strstr(r.out, paused ? "queue realq: PAUSED" : "queue realq: not paused"));
        /* paused appears once: no legacy row while that list is empty */
        int times = 0;
        for (const char *at = r.out; (at = strstr(at, paused ? "PAUSED" : "paused")); at++)
            times++;
        if (times != 1 || (paused && strstr(r.out, "paused")))
            fail_msg("paused should show once: %s", r.out);
        assert_non_null(strstr(r.out, "waiting           1"));
        cli_run_free(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_add_writes_nothing),
        cmocka_unit_test(test_queue_name_rules),
        cmocka_unit_test(test_unknown_options),
        cmocka_unit_test(test_every_node_option_adds),
        cmocka_unit_test(test_counts_exists_and_paused),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
