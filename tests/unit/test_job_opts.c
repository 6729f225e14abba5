/* test_job_opts.c - JobsOptions parsing, normalisation to the stored form, merging,
 * keepJobs values, the lenient reader of Node-written opts, and the JSON helpers. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "queue/job_opts.h"
#include "queue/job_opts_ext.h"
#include "util/nearest_name.h"
#include "util/json_text.h"

/* Parse and expect success; returns stored_json compared as JSON against `want`. */
static void expect_stored(const char *in, const char *want) {
    ferry__job_opts o;
    ferry_error e = {0};
    int rc = ferry__job_opts_parse(in, &o, &e);
    if (rc) fail_msg("parse %s: %s", in, e.message);
    json_error_t je;
    json_t *a = json_loads(o.stored_json, 0, &je), *b = json_loads(want, 0, &je);
    assert_non_null(a);
    assert_non_null(b);
    if (!json_equal(a, b)) fail_msg("stored %s, want %s", o.stored_json, want);
    json_decref(a);
    json_decref(b);
    ferry__job_opts_free(&o);
}

/* As expect_stored, parsed with FERRY__OPTS_ALLOW_UNKNOWN. */
static void expect_stored_lax(const char *in, const char *want) {
    ferry__job_opts o;
    ferry_error e = {0};
    int rc = ferry__job_opts_parse_flags(NULL, in, FERRY__OPTS_ALLOW_UNKNOWN, &o, NULL, &e);
    if (rc) fail_msg("parse %s: %s", in, e.message);
    json_t *a = json_loads(o.stored_json, 0, NULL), *b = json_loads(want, 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    if (!json_equal(a, b)) fail_msg("stored %s, want %s", o.stored_json, want);
    json_decref(a);
    json_decref(b);
    ferry__job_opts_free(&o);
}

static void expect_error(const char *in, int code, const char *msg_part) {
    ferry__job_opts o;
    ferry_error e = {0};
    int rc = ferry__job_opts_parse(in, &o, &e);
    if (rc != code) fail_msg("parse %s: rc %d (%s), want %d", in, rc, e.message, code);
    assert_int_equal(e.code, code);
    if (!strstr(e.message, msg_part)) fail_msg("message \"%s\" lacks \"%s\"", e.message, msg_part);
    assert_null(o.stored_json);
    assert_null(o.job_id);
}

static void test_empty_and_defaults(void **state) {
    (void)state;
    ferry__job_opts o;
    assert_int_equal(ferry__job_opts_parse(NULL, &o, NULL), 0);
    assert_string_equal(o.stored_json, "{\"attempts\":0}");
    assert_null(o.job_id);
    assert_int_equal(o.attempts, 0);
    assert_int_equal(o.timestamp, -1);
    assert_int_equal(o.stack_trace_limit, -1);
    assert_int_equal(o.delay_ms, 0);
    assert_int_equal(o.priority, 0);
    assert_false(o.backoff.set);
    assert_false(o.remove_on_complete.set);
    ferry__job_opts_free(&o);
    assert_int_equal(ferry__job_opts_parse("", &o, NULL), 0);
    assert_string_equal(o.stored_json, "{\"attempts\":0}");
    ferry__job_opts_free(&o);
    ferry__job_opts_free(NULL);
}

static void test_full_options(void **state) {
    (void)state;
    ferry__job_opts o;
    ferry_error e = {0};
    const char *in =
        "{\"jobId\":\"order-42\",\"attempts\":3,\"backoff\":{\"type\":\"exponential\","
        "\"delay\":1000,\"jitter\":0.5},\"delay\":250,\"priority\":7,\"lifo\":true,"
        "\"timestamp\":1700000000000,\"removeOnComplete\":true,\"removeOnFail\":{\"age\":3600,"
        "\"count\":10},\"stackTraceLimit\":3,\"keepLogs\":5,\"sizeLimit\":100000}";
    assert_int_equal(ferry__job_opts_parse(in, &o, &e), 0);
    assert_string_equal(o.job_id, "order-42");
    assert_int_equal(o.attempts, 3);
    assert_true(o.backoff.set);
    assert_string_equal(o.backoff.type, "exponential");
    assert_int_equal(o.backoff.delay_ms, 1000);
    assert_true(o.backoff.jitter == 0.5);
    assert_int_equal(o.delay_ms, 250);
    assert_int_equal(o.priority, 7);
    assert_true(o.lifo);
    assert_int_equal(o.timestamp, 1700000000000LL);
    assert_true(o.remove_on_complete.set);
    assert_int_equal(o.remove_on_complete.count, 0);
    assert_true(o.remove_on_fail.set);
    assert_int_equal(o.remove_on_fail.count, 10);
    assert_int_equal(o.remove_on_fail.age_s, 3600);
    assert_int_equal(o.remove_on_fail.limit, 0);
    assert_int_equal(o.stack_trace_limit, 3);
    ferry__job_opts_free(&o);
    expect_stored(in,
                  "{\"attempts\":3,\"jobId\":\"order-42\",\"backoff\":{\"type\":\"exponential\","
                  "\"delay\":1000,\"jitter\":0.5},\"delay\":250,\"priority\":7,\"lifo\":true,"
                  "\"timestamp\":1700000000000,\"removeOnComplete\":true,\"removeOnFail\":"
                  "{\"age\":3600,\"count\":10},\"stackTraceLimit\":3,\"kl\":5,"
                  "\"sizeLimit\":100000}");
}

static void test_backoff_normalised(void **state) {
    (void)state;
    expect_stored("{\"backoff\":300}",
                  "{\"attempts\":0,\"backoff\":{\"type\":\"fixed\",\"delay\":300}}");
    expect_stored("{\"backoff\":0}",
                  "{\"attempts\":0,\"backoff\":{\"type\":\"fixed\",\"delay\":0}}");
    expect_stored("{\"backoff\":{\"type\":\"myStrategy\"}}",
                  "{\"attempts\":0,\"backoff\":{\"type\":\"myStrategy\"}}");
    expect_stored("{\"backoff\":{\"delay\":1e3,\"type\":\"fixed\",\"jitter\":1}}",
                  "{\"attempts\":0,\"backoff\":{\"type\":\"fixed\",\"delay\":1000,\"jitter\":1}}");
    ferry__job_opts o;
    assert_int_equal(ferry__job_opts_parse("{\"backoff\":300}", &o, NULL), 0);
    assert_string_equal(o.backoff.type, "fixed");
    assert_int_equal(o.backoff.delay_ms, 300);
    assert_true(o.backoff.jitter == 0);
    assert_string_equal(o.stored_json,
                        "{\"attempts\":0,\"backoff\":{\"type\":\"fixed\",\"delay\":300}}");
    ferry__job_opts_free(&o);

    expect_error("{\"backoff\":-1}", FERRY_EINVAL, "opts.backoff: expected");
    expect_error("{\"backoff\":1.5}", FERRY_EINVAL, "opts.backoff");
    expect_error("{\"backoff\":\"fixed\"}", FERRY_EINVAL, "opts.backoff");
    expect_error("{\"backoff\":{\"delay\":5}}", FERRY_EINVAL, "opts.backoff.type");
    expect_error("{\"backoff\":{\"type\":\"\"}}", FERRY_EINVAL, "opts.backoff.type");
    expect_error("{\"backoff\":{\"type\":"
                 "\"x234567890123456789012345678901234567890123456789012345678901234\"}}",
                 FERRY_EINVAL, "at most 63 bytes");
    expect_error("{\"backoff\":{\"type\":\"fixed\",\"jitter\":1.5}}", FERRY_EINVAL,
                 "opts.backoff.jitter: expected a number between 0 and 1, got 1.5");
    expect_error("{\"backoff\":{\"type\":\"fixed\",\"jitter\":-0.1}}", FERRY_EINVAL, "jitter");
    expect_error("{\"backoff\":{\"type\":\"fixed\",\"delay\":\"5\"}}", FERRY_EINVAL,
                 "opts.backoff.delay");
    expect_error("{\"backoff\":{\"type\":\"fixed\",\"dleay\":5}}", FERRY_EINVAL,
                 "unknown member \"dleay\"");
    /* a 63-byte custom type fits */
    expect_stored("{\"backoff\":{\"type\":"
                  "\"x23456789012345678901234567890123456789012345678901234567890123\"}}",
                  "{\"attempts\":0,\"backoff\":{\"type\":"
                  "\"x23456789012345678901234567890123456789012345678901234567890123\"}}");
}

static void test_type_errors_name_the_option(void **state) {
    (void)state;
    expect_error("{\"attempts\":\"3\"}", FERRY_EINVAL,
                 "opts.attempts: expected a non-negative integer up to 2^53-1, got \"3\"");
    expect_error("{\"attempts\":-1}", FERRY_EINVAL, "opts.attempts");
    expect_error("{\"attempts\":2.5}", FERRY_EINVAL, "opts.attempts");
    expect_error("{\"attempts\":true}", FERRY_EINVAL, "opts.attempts");
    expect_error("{\"delay\":-5}", FERRY_EINVAL, "opts.delay: expected a non-negative integer");
    expect_error("{\"delay\":9007199254740992}", FERRY_EINVAL,
                 "opts.delay: expected a non-negative integer up to 2^53-1, got 9007199254740992");
    expect_error("{\"priority\":2097152}", FERRY_EINVAL,
                 "opts.priority: expected an integer from 0 to 2097151, got 2097152");
    expect_error("{\"priority\":-1}", FERRY_EINVAL, "opts.priority");
    expect_error("{\"priority\":1.5}", FERRY_EINVAL, "opts.priority");
    expect_error("{\"lifo\":1}", FERRY_EINVAL, "opts.lifo: expected a boolean, got 1");
    expect_error("{\"timestamp\":\"now\"}", FERRY_EINVAL, "opts.timestamp");
    expect_error("{\"stackTraceLimit\":-2}", FERRY_EINVAL, "opts.stackTraceLimit");
    expect_error("{\"keepLogs\":\"5\"}", FERRY_EINVAL, "opts.keepLogs");
    expect_error("{\"sizeLimit\":[]}", FERRY_EINVAL, "opts.sizeLimit");
    expect_error("{\"jobId\":42}", FERRY_EINVAL, "opts.jobId: expected a string, got 42");
    expect_error("{\"failParentOnFailure\":\"yes\"}", FERRY_EINVAL, "opts.failParentOnFailure");
    expect_error("{\"telemetry\":{\"metadata\":5}}", FERRY_EINVAL, "opts.telemetry");
    expect_error("{\"parent\":{\"id\":\"1\"}}", FERRY_EINVAL, "opts.parent");
    expect_error("{\"repeatJobKey\":\"x\"}", FERRY_EINVAL, "opts.repeatJobKey");
    expect_error("{\"debounce\":{\"id\":\"x\"}}", FERRY_EINVAL, "use deduplication");
    /* a long value is cut in the message */
    expect_error(
        "{\"attempts\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
        FERRY_EINVAL, "...");
}

static void test_integral_reals_accepted(void **state) {
    (void)state;
    expect_stored("{\"attempts\":3.0,\"delay\":1e3,\"priority\":5E0}",
                  "{\"attempts\":3,\"delay\":1000,\"priority\":5}");
    ferry__job_opts o;
    assert_int_equal(ferry__job_opts_parse("{\"attempts\":3.0,\"delay\":1e3}", &o, NULL), 0);
    assert_int_equal(o.attempts, 3);
    assert_int_equal(o.delay_ms, 1000);
    assert_non_null(strstr(o.stored_json, "\"attempts\":3,"));
    ferry__job_opts_free(&o);
}

static void test_job_id_rules(void **state) {
    (void)state;
    expect_error("{\"jobId\":\"0\"}", FERRY_EINVAL, "cannot be '0' or start with '0:'");
    expect_error("{\"jobId\":\"0:abc\"}", FERRY_EINVAL, "cannot be '0' or start with '0:'");
    expect_error("{\"jobId\":\"123\"}", FERRY_EINVAL, "cannot be integers");
    expect_error("{\"jobId\":\"-7\"}", FERRY_EINVAL, "cannot be integers");
    expect_error("{\"jobId\":\"10000000000000000000\"}", FERRY_EINVAL, "cannot be integers");
    /* Node's test is `${parseInt(id, 10)}` === id, which "NaN" passes; "Infinity" does not */
    expect_error("{\"jobId\":\"NaN\"}", FERRY_EINVAL, "cannot be integers");
    expect_stored("{\"jobId\":\"Infinity\"}", "{\"attempts\":0,\"jobId\":\"Infinity\"}");
    expect_error("{\"jobId\":\"a:b\"}", FERRY_EINVAL, "cannot contain ':'");
    expect_error("{\"jobId\":\"a:b:c:d\"}", FERRY_EINVAL, "cannot contain ':'");
    /* the names of the queue's own keys: a job would be taken for a duplicate and never be
     * added (Node lets them through and loses the job) */
    const char *reserved[] = {
        "meta", "wait", "id", "events", "marker", "stalled-check", "metrics:completed:data"};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        char opts[96], want[128];
        snprintf(opts, sizeof opts, "{\"jobId\":\"%s\"}", reserved[i]);
        snprintf(want, sizeof want, "opts.jobId: '%s' is the name of one of the queue's own keys",
                 reserved[i]);
        expect_error(opts, FERRY_EINVAL, want);
    }
    expect_stored("{\"jobId\":\"metadata\"}", "{\"attempts\":0,\"jobId\":\"metadata\"}");
    /* what Node accepts */
    expect_stored("{\"jobId\":\"0123\"}", "{\"attempts\":0,\"jobId\":\"0123\"}");
    expect_stored("{\"jobId\":\"-0\"}", "{\"attempts\":0,\"jobId\":\"-0\"}");
    expect_stored("{\"jobId\":\"+5\"}", "{\"attempts\":0,\"jobId\":\"+5\"}");
    expect_stored("{\"jobId\":\"12a\"}", "{\"attempts\":0,\"jobId\":\"12a\"}");
    expect_stored("{\"jobId\":\"1.5\"}", "{\"attempts\":0,\"jobId\":\"1.5\"}");
    /* 2^53+1 does not survive parseInt, so Node does not call it an integer */
    expect_stored("{\"jobId\":\"9007199254740993\"}",
                  "{\"attempts\":0,\"jobId\":\"9007199254740993\"}");
    expect_stored("{\"jobId\":\"12345678901234567890\"}",
                  "{\"attempts\":0,\"jobId\":\"12345678901234567890\"}");
    expect_stored("{\"jobId\":\"repeat:abc:1700000000000\"}",
                  "{\"attempts\":0,\"jobId\":\"repeat:abc:1700000000000\"}");
    /* empty jobId = generated id, and not stored (Node treats it as no id) */
    expect_stored("{\"jobId\":\"\"}", "{\"attempts\":0}");
    /* length limit */
    char big[FERRY_JOB_ID_MAX + 40];
    memset(big, 0, sizeof big);
    strcpy(big, "{\"jobId\":\"");
    memset(big + strlen(big), 'a', FERRY_JOB_ID_MAX + 1);
    strcat(big, "\"}");
    expect_error(big, FERRY_EINVAL, "longer than 1024 bytes");
}

static void test_keep_jobs(void **state) {
    (void)state;
    ferry__job_opts o;
    assert_int_equal(
        ferry__job_opts_parse("{\"removeOnComplete\":false,\"removeOnFail\":25}", &o, NULL), 0);
    assert_true(o.remove_on_complete.set);
    assert_int_equal(o.remove_on_complete.count, -1);
    assert_int_equal(o.remove_on_fail.count, 25);
    ferry__job_opts_free(&o);
    assert_int_equal(
        ferry__job_opts_parse("{\"removeOnComplete\":{\"age\":60,\"limit\":50}}", &o, NULL), 0);
    assert_int_equal(o.remove_on_complete.count, -1);
    assert_int_equal(o.remove_on_complete.age_s, 60);
    assert_int_equal(o.remove_on_complete.limit, 50);
    assert_string_equal(o.stored_json,
                        "{\"attempts\":0,\"removeOnComplete\":{\"age\":60,\"limit\":50}}");
    ferry__job_opts_free(&o);
    assert_int_equal(
        ferry__job_opts_parse("{\"removeOnComplete\":{\"age\":0,\"count\":5}}", &o, NULL), 0);
    /* age 0: the finish trims everything finished up to now, this job included */
    assert_int_equal(o.remove_on_complete.count, 5);
    assert_true(o.remove_on_complete.age_set && o.remove_on_complete.age_s == 0);
    ferry__job_opts_free(&o);
    /* seconds with a fraction, as Node accepts them, kept as given */
    assert_int_equal(ferry__job_opts_parse("{\"removeOnFail\":{\"age\":0.5}}", &o, NULL), 0);
    assert_true(o.remove_on_fail.age_s == 0.5);
    assert_int_equal(o.remove_on_fail.count, -1);
    ferry__job_opts_free(&o);
    assert_int_equal(ferry__job_opts_parse("{\"removeOnFail\":{\"age\":0.0001}}", &o, NULL), 0);
    assert_true(o.remove_on_fail.age_s == 0.0001);
    ferry__job_opts_free(&o);
    expect_error("{\"removeOnFail\":{\"age\":\"60\"}}", FERRY_EINVAL,
                 "opts.removeOnFail.age: expected a non-negative number of seconds");
    expect_error("{\"removeOnFail\":{\"age\":1e300}}", FERRY_EINVAL, "opts.removeOnFail.age");
    expect_error("{\"removeOnComplete\":-1}", FERRY_EINVAL,
                 "opts.removeOnComplete: expected true, false");
    expect_error("{\"removeOnFail\":\"yes\"}", FERRY_EINVAL, "opts.removeOnFail");
    expect_error("{\"removeOnFail\":{\"age\":-1}}", FERRY_EINVAL, "opts.removeOnFail.age");
    expect_error("{\"removeOnFail\":{\"count\":1.5}}", FERRY_EINVAL, "opts.removeOnFail.count");
    expect_error("{\"removeOnFail\":{\"limit\":0}}", FERRY_EINVAL, "opts.removeOnFail.limit");
    expect_error("{\"removeOnFail\":{\"cnt\":1}}", FERRY_EINVAL, "unknown member \"cnt\"");

    ferry__keep_jobs k;
    ferry_error e = {0};
    assert_int_equal(ferry__keep_jobs_parse("true", &k, &e), 0);
    assert_true(k.set);
    assert_int_equal(k.count, 0);
    assert_int_equal(ferry__keep_jobs_parse("false", &k, &e), 0);
    assert_int_equal(k.count, -1);
    assert_int_equal(ferry__keep_jobs_parse("100", &k, &e), 0);
    assert_int_equal(k.count, 100);
    assert_int_equal(ferry__keep_jobs_parse(" {\"age\": 86400, \"count\": 1000} ", &k, &e), 0);
    assert_int_equal(k.count, 1000);
    assert_int_equal(k.age_s, 86400);
    assert_int_equal(ferry__keep_jobs_parse(NULL, &k, &e), 0);
    assert_false(k.set);
    assert_int_equal(ferry__keep_jobs_parse("{}", &k, &e), 0);
    assert_true(k.set);
    assert_int_equal(k.count, -1);
    assert_int_equal(ferry__keep_jobs_parse("-3", &k, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "keepJobs: expected"));
    assert_false(k.set);
    assert_int_equal(ferry__keep_jobs_parse("{\"age\":", &k, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "invalid JSON"));
    assert_int_equal(ferry__keep_jobs_parse("tru", &k, &e), FERRY_EINVAL);
}

static void test_aliases_and_passthrough(void **state) {
    (void)state;
    expect_stored_lax(
        "{\"failParentOnFailure\":false,\"keepLogs\":5,\"telemetry\":{\"metadata\":\"tp\","
        "\"omitContext\":true},\"prevMillis\":17,\"custom\":{\"a\":[1,2,{}],\"b\":null},"
        "\"parent\":{\"id\":\"p1\",\"queue\":\"bull:parents\"}}",
        "{\"attempts\":0,\"fpof\":false,\"kl\":5,\"tm\":\"tp\",\"omc\":true,\"prevMillis\":17,"
        "\"custom\":{\"a\":[1,2,{}]},\"parent\":{\"id\":\"p1\",\"queue\":\"bull:parents\"}}");
    expect_stored("{\"deduplication\":{\"id\":\"d1\",\"ttl\":60000}}",
                  "{\"attempts\":0,\"de\":{\"id\":\"d1\",\"ttl\":60000}}");
    expect_stored("{\"removeDependencyOnFailure\":true,\"idof\":false,\"cpof\":false}",
                  "{\"attempts\":0,\"rdof\":true,\"idof\":false,\"cpof\":false}");
    expect_error("{\"failParentOnFailure\":true,\"ignoreDependencyOnFailure\":true}", FERRY_EINVAL,
                 "cannot be used together");
    expect_error("{\"deduplication\":{\"ttl\":5}}", FERRY_EINVAL, "opts.deduplication.id");
    expect_error("{\"deduplication\":{\"id\":\"x\",\"ttl\":\"5\"}}", FERRY_EINVAL,
                 "opts.deduplication.ttl");
    /* null members are dropped (as Node's msgpack round trip does), also for known keys */
    expect_stored_lax("{\"attempts\":null,\"delay\":null,\"x\":null}", "{\"attempts\":0}");

    ferry__job_opts o;
    ferry__job_opts_extra x;
    assert_int_equal(
        ferry__job_opts_parse_over(
            NULL,
            "{\"de\":{\"id\":\"a\"},\"sizeLimit\":10,\"parent\":{\"id\":\"1\",\"queue\":\"b:q\"}}",
            &o, &x, NULL),
        0);
    assert_true(x.has_dedup);
    assert_true(x.has_parent);
    assert_int_equal(x.size_limit, 10);
    ferry__job_opts_free(&o);
}

static void test_stored_strings_escaped(void **state) {
    (void)state;
    ferry__job_opts o;
    assert_int_equal(
        ferry__job_opts_parse("{\"jobId\":\"q\\\"uo\\\\te/\\u00e9\\n\\u0001\"}", &o, NULL), 0);
    assert_string_equal(o.job_id, "q\"uo\\te/\xc3\xa9\n\x01");
    assert_string_equal(o.stored_json,
                        "{\"attempts\":0,\"jobId\":\"q\\\"uo\\\\te/\xc3\xa9\\n\\u0001\"}");
    ferry__job_opts_free(&o);
    /* reals: shortest round-trip form, like JSON.stringify */
    assert_int_equal(ferry__job_opts_parse_flags(NULL,
                                                 "{\"x\":0.1,\"y\":-2.5e-7,\"z\":1e300,\"w\":-0.0}",
                                                 FERRY__OPTS_ALLOW_UNKNOWN, &o, NULL, NULL),
                     0);
    assert_string_equal(o.stored_json,
                        "{\"attempts\":0,\"x\":0.1,\"y\":-2.5e-07,\"z\":1e+300,\"w\":0}");
    ferry__job_opts_free(&o);
}

/* A key BullMQ 6.7.0's JobsOptions does not know is refused with the nearest known name,
 * at the top level and inside the objects of fixed shape; with FERRY__OPTS_ALLOW_UNKNOWN it
 * is stored as given. */
static void test_unknown_keys_refused(void **state) {
    (void)state;
    static const struct {
        const char *in, *msg;
    } cases[] = {
        {"{\"atempts\":3}", "unknown job option \"atempts\" (did you mean \"attempts\"?)"},
        {"{\"Attempts\":3}", "unknown job option \"Attempts\" (did you mean \"attempts\"?)"},
        {"{\"removeOnComplet\":true}", "(did you mean \"removeOnComplete\"?)"},
        {"{\"jobid\":\"x\"}", "(did you mean \"jobId\"?)"},
        {"{\"delya\":5}", "(did you mean \"delay\"?)"},
        {"{\"stackTraceLimt\":2}", "(did you mean \"stackTraceLimit\"?)"},
        {"{\"zzzzzz\":1}", "unknown job option \"zzzzzz\" (not a BullMQ 6.7.0 job option)"},
        {"{\"q\\nfake\":1}", "unknown job option \"q\\nfake\""}, /* escaped, one line */
        {"{\"backoff\":{\"type\":\"fixed\",\"dealy\":5}}",
         "opts.backoff: unknown member \"dealy\" (did you mean \"delay\"?)"},
        {"{\"removeOnFail\":{\"cuont\":1}}",
         "opts.removeOnFail: unknown member \"cuont\" (did you mean \"count\"?)"},
        {"{\"removeOnFail\":{\"xyz\":1}}",
         "opts.removeOnFail: unknown member \"xyz\" (expected age, count, limit)"},
        {"{\"deduplication\":{\"id\":\"a\",\"tl\":5}}",
         "opts.deduplication: unknown member \"tl\" (did you mean \"ttl\"?)"},
        {"{\"parent\":{\"id\":\"1\",\"queue\":\"b:q\",\"qeueu\":1}}",
         "opts.parent: unknown member \"qeueu\" (did you mean \"queue\"?)"},
        {"{\"telemetry\":{\"metdata\":\"x\"}}", "opts.telemetry"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_error(cases[i].in, FERRY_EINVAL, cases[i].msg);
        /* the defaults of a queue are held to the same rule */
        ferry_error e = {0};
        json_t *defs = json_loads(cases[i].in, 0, NULL);
        assert_non_null(defs);
        ferry__job_opts o;
        assert_int_equal(ferry__job_opts_parse_over(defs, "{}", &o, NULL, &e), FERRY_EINVAL);
        if (!strstr(e.message, cases[i].msg)) fail_msg("defaults: %s", e.message);
        json_decref(defs);
    }
    /* allowed: kept as given, nested members too */
    expect_stored_lax("{\"atempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":5,\"steps\":2},"
                      "\"removeOnFail\":{\"count\":1,\"future\":true}}",
                      "{\"attempts\":0,\"atempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":5,"
                      "\"steps\":2},\"removeOnFail\":{\"count\":1,\"future\":true}}");
}

/* Every key of BullMQ 6.7.0's JobsOptions type (and the stored short spellings) parses. */
static void test_every_node_key_accepted(void **state) {
    (void)state;
    static const char *const ok[] = {
        "{\"jobId\":\"abc\"}",
        "{\"attempts\":3}",
        "{\"backoff\":{\"type\":\"exponential\",\"delay\":10,\"jitter\":0.5}}",
        "{\"backoff\":5}",
        "{\"delay\":5}",
        "{\"priority\":5}",
        "{\"lifo\":true}",
        "{\"timestamp\":1700000000000}",
        "{\"removeOnComplete\":{\"age\":5,\"count\":2,\"limit\":3}}",
        "{\"removeOnFail\":7}",
        "{\"stackTraceLimit\":3}",
        "{\"keepLogs\":3}",
        "{\"sizeLimit\":100}",
        ("{\"deduplication\":{\"id\":\"d\",\"ttl\":5,\"extend\":true,\"replace\":false,"
         "\"reschedule\":false,\"keepLastIfActive\":false}}"),
        "{\"failParentOnFailure\":true}",
        "{\"continueParentOnFailure\":true}",
        "{\"ignoreDependencyOnFailure\":true}",
        "{\"removeDependencyOnFailure\":true}",
        "{\"telemetry\":{\"metadata\":\"m\",\"omitContext\":true}}",
        "{\"parent\":{\"id\":\"1\",\"queue\":\"bull:p\"}}",
        "{\"prevMillis\":5}",
        ("{\"kl\":1,\"de\":{\"id\":\"x\"},\"fpof\":false,\"cpof\":false,\"idof\":false,"
         "\"rdof\":false,\"tm\":\"t\",\"omc\":false}"),
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        ferry__job_opts o;
        ferry_error e = {0};
        if (ferry__job_opts_parse(ok[i], &o, &e)) fail_msg("%s: %s", ok[i], e.message);
        ferry__job_opts_free(&o);
    }
    /* known, but refused with their own reason (not as unknown) */
    expect_error("{\"repeatJobKey\":\"k\"}", FERRY_EINVAL, "set only by job schedulers");
    expect_error("{\"debounce\":{\"id\":\"x\"}}", FERRY_EINVAL, "use deduplication");
}

/* BullMQ 6.7.0 dropped opts.repeat from Queue.add: refused, naming the scheduler, even when
 * unknown keys are allowed. */
static void test_repeat_refused(void **state) {
    (void)state;
    expect_error("{\"repeat\":{\"every\":1000}}", FERRY_EINVAL, "ferry scheduler upsert");
    expect_error("{\"repeat\":{\"pattern\":\"* * * * *\"}}", FERRY_EINVAL,
                 "ferry_scheduler_upsert()");
    ferry__job_opts o;
    ferry_error e = {0};
    assert_int_equal(ferry__job_opts_parse_flags(NULL, "{\"repeat\":{\"every\":5}}",
                                                 FERRY__OPTS_ALLOW_UNKNOWN, &o, NULL, &e),
                     FERRY_EINVAL);
    assert_non_null(strstr(e.message, "opts.repeat"));
}

static void test_nearest_name(void **state) {
    (void)state;
    static const char *const names[] = {"age", "count", "limit"};
    assert_string_equal(ferryx_nearest_name("cuont", names, 3), "count");
    assert_string_equal(ferryx_nearest_name("LIMIT", names, 3), "limit");
    assert_null(ferryx_nearest_name("x", names, 3));
    assert_null(ferryx_nearest_name("banana", names, 3));
}

static void test_bad_json_and_limits(void **state) {
    (void)state;
    expect_error("{", FERRY_EINVAL, "opts: invalid JSON");
    expect_error("[1]", FERRY_EINVAL, "opts: expected a JSON object, got [1]");
    expect_error("5", FERRY_EINVAL, "opts");
    expect_error("{\"a\":1,\"a\":2}", FERRY_EINVAL, "duplicate");
    expect_error("{\"a\":1} x", FERRY_EINVAL, "invalid JSON");
    /* depth */
    char deep[200] = "{\"x\":";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    for (int i = 0; i < 40; i++)
        strcat(deep, "]");
    strcat(deep, "}");
    expect_error(deep, FERRY_EINVAL, "nested deeper than 32 levels");
    /* size */
    size_t n = FERRY_JOB_OPTS_MAX + 10;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = '{';
    big[n - 1] = '}';
    big[n] = 0;
    expect_error(big, FERRY_ETOOBIG, "opts JSON is 65546 bytes, limit 65536");
    free(big);
}

static void test_merge_over_defaults(void **state) {
    (void)state;
    ferry_error e = {0};
    char *m =
        ferry__json_merge_shallow("{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":5},"
                                  "\"removeOnComplete\":true}",
                                  "{\"backoff\":1000,\"delay\":5,\"removeOnComplete\":null}", &e);
    assert_non_null(m);
    assert_string_equal(m,
                        "{\"attempts\":3,\"backoff\":1000,\"removeOnComplete\":null,\"delay\":5}");
    free(m);
    m = ferry__json_merge_shallow(NULL, NULL, &e);
    assert_string_equal(m, "{}");
    free(m);
    m = ferry__json_merge_shallow("{\"a\":1}", NULL, &e);
    assert_string_equal(m, "{\"a\":1}");
    free(m);
    assert_null(ferry__json_merge_shallow("[1]", "{}", &e));
    assert_int_equal(e.code, FERRY_EINVAL);
    assert_null(ferry__json_merge_shallow("{}", "nope", &e));
    assert_int_equal(e.code, FERRY_EINVAL);

    /* parse over pre-parsed defaults: job keys win, shallow (backoff replaced whole) */
    json_t *defs = json_loads("{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":100,"
                              "\"jitter\":0.2},\"removeOnFail\":50}",
                              0, NULL);
    assert_non_null(defs);
    ferry__job_opts o;
    assert_int_equal(ferry__job_opts_parse_over(
                         defs, "{\"backoff\":{\"type\":\"fixed\"},\"lifo\":true}", &o, NULL, &e),
                     0);
    assert_int_equal(o.attempts, 3);
    assert_string_equal(o.backoff.type, "fixed");
    assert_int_equal(o.backoff.delay_ms, 0);
    assert_true(o.backoff.jitter == 0);
    assert_int_equal(o.remove_on_fail.count, 50);
    assert_true(o.lifo);
    assert_string_equal(o.stored_json, "{\"attempts\":3,\"backoff\":{\"type\":\"fixed\"},"
                                       "\"removeOnFail\":50,\"lifo\":true}");
    ferry__job_opts_free(&o);
    /* null in the job's opts unsets a default */
    assert_int_equal(ferry__job_opts_parse_over(defs, "{\"removeOnFail\":null}", &o, NULL, &e), 0);
    assert_false(o.remove_on_fail.set);
    assert_null(strstr(o.stored_json, "removeOnFail"));
    ferry__job_opts_free(&o);
    /* defaults untouched and reusable */
    assert_int_equal(ferry__job_opts_parse_over(defs, NULL, &o, NULL, &e), 0);
    assert_int_equal(o.remove_on_fail.count, 50);
    ferry__job_opts_free(&o);
    assert_int_equal(json_object_size(defs), 3);
    json_decref(defs);
}

/* Opts as Node/cjson write them: \/, exponent numbers, {} for empty arrays, aliases. */
static void test_from_stored_node_forms(void **state) {
    (void)state;
    ferry__job_opts o;
    ferry__job_opts_from_stored(
        "{\"kl\":5,\"sizeLimit\":100000,\"removeOnFail\":{\"age\":3600,\"count\":10},"
        "\"stackTraceLimit\":3,\"fpof\":false,\"removeOnComplete\":true,\"backoff\":{\"type\":"
        "\"exponential\",\"delay\":1000,\"jitter\":0.5},\"attempts\":3}",
        &o);
    assert_int_equal(o.attempts, 3);
    assert_string_equal(o.backoff.type, "exponential");
    assert_int_equal(o.backoff.delay_ms, 1000);
    assert_true(o.backoff.jitter == 0.5);
    assert_int_equal(o.remove_on_complete.count, 0);
    assert_int_equal(o.remove_on_fail.count, 10);
    assert_int_equal(o.remove_on_fail.age_s, 3600);
    assert_int_equal(o.stack_trace_limit, 3);
    assert_int_equal(o.timestamp, -1);
    assert_non_null(o.stored_json);
    ferry__job_opts_free(&o);

    ferry__job_opts_from_stored("{\"repeat\":{\"pattern\":\"*\\/2 * * * * *\",\"x\":{}},"
                                "\"jobId\":\"repeat:abc:1\",\"delay\":1.2345678901234e+14,"
                                "\"priority\":5,\"timestamp\":1.795978463239e+12,"
                                "\"backoff\":250,\"lifo\":true,\"attempts\":99999999999999999999}",
                                &o);
    assert_string_equal(o.job_id, "repeat:abc:1");
    assert_int_equal(o.delay_ms, 123456789012340LL);
    assert_int_equal(o.priority, 5);
    assert_int_equal(o.timestamp, 1795978463239LL);
    assert_string_equal(o.backoff.type, "fixed");
    assert_int_equal(o.backoff.delay_ms, 250);
    assert_true(o.lifo);
    assert_int_equal(o.attempts, FERRY__JS_SAFE_MAX);
    ferry__job_opts_free(&o);

    /* odd values never fail, they fall back to defaults */
    ferry__job_opts_from_stored("{\"attempts\":\"x\",\"backoff\":{\"type\":7},\"priority\":-4,"
                                "\"removeOnComplete\":false,\"removeOnFail\":{\"age\":0}}",
                                &o);
    assert_int_equal(o.attempts, 0);
    assert_true(o.backoff.set);
    assert_string_equal(o.backoff.type, "");
    assert_int_equal(o.priority, 0);
    assert_int_equal(o.remove_on_complete.count, -1);
    assert_int_equal(o.remove_on_fail.count, -1);
    assert_true(o.remove_on_fail.age_set && o.remove_on_fail.age_s == 0);
    ferry__job_opts_free(&o);
    /* numbers past what JavaScript holds exactly are clamped, never cast out of range */
    ferry__job_opts_from_stored("{\"removeOnComplete\":2e27,\"backoff\":1e300,"
                                "\"removeOnFail\":{\"count\":1e300,\"limit\":9e18}}",
                                &o);
    assert_int_equal(o.remove_on_complete.count, FERRY__JS_SAFE_MAX);
    assert_int_equal(o.backoff.delay_ms, FERRY__JS_SAFE_MAX);
    assert_int_equal(o.remove_on_fail.count, FERRY__JS_SAFE_MAX);
    assert_int_equal(o.remove_on_fail.limit, FERRY__JS_SAFE_MAX);
    ferry__job_opts_free(&o);
    /* a Node-written negative age is passed on as it is (Node trims later scores too) */
    ferry__job_opts_from_stored("{\"removeOnFail\":{\"age\":-2.5}}", &o);
    assert_true(o.remove_on_fail.age_set && o.remove_on_fail.age_s == -2.5);
    ferry__job_opts_free(&o);
    /* a Node-written fraction below one second is an age limit, not "none" */
    ferry__job_opts_from_stored("{\"removeOnComplete\":{\"age\":0.25,\"count\":3}}", &o);
    assert_true(o.remove_on_complete.age_s == 0.25);
    assert_int_equal(o.remove_on_complete.count, 3);
    ferry__job_opts_free(&o);
    const char *garbage[] = {NULL, "", "nope", "[1,2]", "{\"a\":", "\"str\""};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        ferry__job_opts_from_stored(garbage[i], &o);
        assert_int_equal(o.attempts, 0);
        assert_false(o.backoff.set);
        assert_string_equal(o.stored_json, "{}");
        ferry__job_opts_free(&o);
    }
    /* string numbers, as some writers produce */
    ferry__job_opts_from_stored("{\"attempts\":\"4\",\"delay\":\"10\"}", &o);
    assert_int_equal(o.attempts, 4);
    assert_int_equal(o.delay_ms, 10);
    ferry__job_opts_free(&o);
}

/* What ferry writes reads back the same through the lenient reader. */
static void test_round_trip(void **state) {
    (void)state;
    ferry__job_opts a, b;
    assert_int_equal(
        ferry__job_opts_parse("{\"jobId\":\"x1\",\"attempts\":5,\"backoff\":{\"type\":"
                              "\"exponential\",\"delay\":200,\"jitter\":0.25},\"delay\":"
                              "10,\"priority\":3,\"removeOnFail\":{\"count\":2}}",
                              &a, NULL),
        0);
    ferry__job_opts_from_stored(a.stored_json, &b);
    assert_string_equal(a.job_id, b.job_id);
    assert_int_equal(a.attempts, b.attempts);
    assert_string_equal(a.backoff.type, b.backoff.type);
    assert_int_equal(a.backoff.delay_ms, b.backoff.delay_ms);
    assert_true(a.backoff.jitter == b.backoff.jitter);
    assert_int_equal(a.delay_ms, b.delay_ms);
    assert_int_equal(a.priority, b.priority);
    assert_int_equal(a.remove_on_fail.count, b.remove_on_fail.count);
    assert_string_equal(a.stored_json, b.stored_json);
    ferry__job_opts_free(&a);
    ferry__job_opts_free(&b);
}

static void test_json_check(void **state) {
    (void)state;
    const char *good[] = {"{}",
                          "[]",
                          " {\"a\" : [1, -2.5e+3, true, false, null, \"x\\u00e9\\n\"]} ",
                          "0",
                          "\"s\"",
                          "-0.0",
                          "{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\"}",
                          "[[[]]]",
                          "1E5",
                          "\"\\/\""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (ferryx_json_check(good[i], strlen(good[i]), 512, NULL))
            fail_msg("rejected valid %s", good[i]);
    const char *badj[] = {"",
                          " ",
                          "{",
                          "{\"a\"}",
                          "{\"a\":1,}",
                          "[1,]",
                          "01",
                          "1.",
                          ".5",
                          "-",
                          "1e",
                          "tru",
                          "nul",
                          "{\"a\":1}}",
                          "[1] [2]",
                          "\"a",
                          "\"\\x\"",
                          "\"\\u12G4\"",
                          "\"\x01\"",
                          "\"\xc3\"",
                          "\"\xed\xa0\x80\"",
                          "\"\xc0\xaf\"",
                          "\"\xf5\x80\x80\x80\"",
                          "{1:2}",
                          "'a'",
                          "NaN",
                          "[1 2]"};
    for (size_t i = 0; i < sizeof badj / sizeof badj[0]; i++) {
        ferryx_json_check_error e = {0, NULL};
        if (!ferryx_json_check(badj[i], strlen(badj[i]), 512, &e)) fail_msg("accepted %s", badj[i]);
        assert_non_null(e.reason);
    }
    ferryx_json_check_error e;
    assert_int_equal(ferryx_json_check("[[[1]]]", 7, 2, &e), -1);
    assert_string_equal(e.reason, "nested too deeply");
    assert_int_equal(e.offset, 2);
    assert_int_equal(ferryx_json_check("[[[1]]]", 7, 3, &e), 0);
    assert_int_equal(ferryx_json_check("{\"a\":1 x", 8, 3, &e), -1);
    assert_int_equal(e.offset, 7);
    assert_int_equal(ferryx_json_depth("{\"[[[\":[[1]]}", 13, 10), 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_and_defaults),
        cmocka_unit_test(test_full_options),
        cmocka_unit_test(test_backoff_normalised),
        cmocka_unit_test(test_type_errors_name_the_option),
        cmocka_unit_test(test_integral_reals_accepted),
        cmocka_unit_test(test_job_id_rules),
        cmocka_unit_test(test_keep_jobs),
        cmocka_unit_test(test_aliases_and_passthrough),
        cmocka_unit_test(test_stored_strings_escaped),
        cmocka_unit_test(test_unknown_keys_refused),
        cmocka_unit_test(test_every_node_key_accepted),
        cmocka_unit_test(test_repeat_refused),
        cmocka_unit_test(test_nearest_name),
        cmocka_unit_test(test_bad_json_and_limits),
        cmocka_unit_test(test_merge_over_defaults),
        cmocka_unit_test(test_from_stored_node_forms),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_json_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
