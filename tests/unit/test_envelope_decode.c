/* test_envelope_decode.c - ferry__envelope_parse, the one decoder of the job envelope
 * (handler accessors, job log trace ids, the exec worker's FERRY_EVENT_ID/FERRY_TRACE_ID):
 * what the relay writes round-trips; JSON.parse's rules (escaped member names, the last of
 * duplicate members); what is not an envelope; bad input never crashes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "envelope/envelope.h"

#define EV "0190b6a2-7c00-7abc-8def-0123456789ab"

static int parse(const char *s, ferry__envelope_view *v) {
    return ferry__envelope_parse(s, strlen(s), 512, v);
}

static char *payload_of(const char *s, const ferry__envelope_view *v) {
    char *out = malloc(v->payload_len + 1);
    assert_non_null(out);
    ferry__json_compact_copy(s + v->payload_off, v->payload_len, out);
    return out;
}

static void test_round_trip_of_what_the_relay_writes(void **state) {
    (void)state;
    const char *payload = "{\"a\": [1, 2, {\"b\": \"x y\"}], \"c\": null}";
    size_t cap = ferry__envelope_size(EV, strlen(EV), "req-1", 5, strlen(payload)) + 1;
    char *data = malloc(cap);
    assert_true(
        ferry__envelope_write(data, cap, EV, strlen(EV), "req-1", 5, payload, strlen(payload)) > 0);
    ferry__envelope_view v;
    assert_int_equal(parse(data, &v), 1);
    assert_string_equal(v.event_id, EV);
    assert_string_equal(v.trace_id, "req-1");
    char *p = payload_of(data, &v);
    assert_string_equal(p, "{\"a\":[1,2,{\"b\":\"x y\"}],\"c\":null}");
    free(p);
    free(data);
}

static void test_json_stringify_shapes(void **state) {
    (void)state;
    ferry__envelope_view v;
    /* member order does not matter; no traceId; blanks around everything */
    const char *s = " {\n \"payload\" : \"text\" , \"eventId\" : \"" EV "\" }\n";
    assert_int_equal(parse(s, &v), 1);
    assert_string_equal(v.event_id, EV);
    assert_string_equal(v.trace_id, "");
    char *p = payload_of(s, &v);
    assert_string_equal(p, "\"text\"");
    free(p);
    /* upper-case hex is a UUID too */
    assert_int_equal(
        parse("{\"eventId\":\"0190B6A2-7C00-7ABC-8DEF-0123456789AB\",\"payload\":1}", &v), 1);
    assert_string_equal(v.event_id, "0190B6A2-7C00-7ABC-8DEF-0123456789AB");
    /* scalar payloads keep their bytes */
    s = "{\"eventId\":\"" EV "\",\"payload\":-1.5e+300}";
    assert_int_equal(parse(s, &v), 1);
    p = payload_of(s, &v);
    assert_string_equal(p, "-1.5e+300");
    free(p);
}

static void test_json_parse_rules(void **state) {
    (void)state;
    ferry__envelope_view v;
    /* an escaped member name is the same name */
    assert_int_equal(parse("{\"\\u0065ventId\":\"" EV "\",\"pay\\u006coad\":{}}", &v), 1);
    assert_string_equal(v.event_id, EV);
    /* escapes inside the id decode to the id */
    assert_int_equal(parse("{\"eventId\":\"\\u0030190b6a2-7c00-7abc-8def-0123456789ab\","
                           "\"payload\":{}}",
                           &v),
                     1);
    assert_string_equal(v.event_id, EV);
    /* the last of duplicate members wins */
    const char *s = "{\"eventId\":\"nope\",\"payload\":1,\"eventId\":\"" EV "\",\"payload\":[2]}";
    assert_int_equal(parse(s, &v), 1);
    assert_string_equal(v.event_id, EV);
    char *p = payload_of(s, &v);
    assert_string_equal(p, "[2]");
    free(p);
    assert_int_equal(parse("{\"eventId\":\"" EV "\",\"payload\":1,\"eventId\":7}", &v), 0);
    assert_string_equal(v.event_id, "");
    /* trace ids: printable ASCII, 1..128 bytes */
    assert_int_equal(parse("{\"eventId\":\"" EV "\",\"traceId\":\"a b\",\"payload\":1}", &v), 1);
    assert_string_equal(v.trace_id, "");
    assert_int_equal(parse("{\"eventId\":\"" EV "\",\"traceId\":\"\",\"payload\":1}", &v), 1);
    assert_string_equal(v.trace_id, "");
    assert_int_equal(parse("{\"eventId\":\"" EV "\",\"traceId\":\"\\u0000x\",\"payload\":1}", &v),
                     1);
    assert_string_equal(v.trace_id, "");
    char big[300];
    snprintf(big, sizeof big, "{\"eventId\":\"%s\",\"traceId\":\"%0129d\",\"payload\":1}", EV, 0);
    assert_int_equal(parse(big, &v), 1);
    assert_string_equal(v.trace_id, "");
    snprintf(big, sizeof big, "{\"eventId\":\"%s\",\"traceId\":\"%0128d\",\"payload\":1}", EV, 0);
    assert_int_equal(parse(big, &v), 1);
    assert_int_equal(strlen(v.trace_id), 128);
    /* a trace id without an envelope still counts (the job log shows it) */
    assert_int_equal(parse("{\"traceId\":\"t-1\",\"n\":1}", &v), 0);
    assert_string_equal(v.trace_id, "t-1");
}

static void test_not_envelopes(void **state) {
    (void)state;
    ferry__envelope_view v;
    const char *cases[] = {
        "",
        "[]",
        "\"eventId\"",
        "{}",
        "{\"eventId\":\"" EV "\"}",                      /* no payload */
        "{\"payload\":{}}",                              /* no eventId */
        "{\"eventId\":1,\"payload\":{}}",                /* not a string */
        "{\"eventId\":\"" EV "\",\"payload\":}",         /* not JSON */
        "{\"eventId\":\"" EV "\",\"payload\":{}} x",     /* trailing garbage */
        "{\"eventId\":\"" EV "\",\"payload\":\"\xff\"}", /* invalid UTF-8 */
        "{\"eventId\":\"" EV "\",\"payload\":{}",        /* cut */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(parse(cases[i], &v), 0);
        assert_int_equal(v.payload_len, 0);
    }
    /* a non-UUID eventId: an envelope (the payload is taken) without a usable id */
    assert_int_equal(parse("{\"eventId\":\"" EV "x\",\"payload\":{}}", &v), 1);
    assert_string_equal(v.event_id, "");
    assert_int_equal(
        parse("{\"eventId\":\"0190b6a2_7c00-7abc-8def-0123456789ab\",\"payload\":{}}", &v), 1);
    assert_string_equal(v.event_id, "");
    assert_int_equal(ferry__envelope_parse(NULL, 0, 512, &v), 0);
}

static void test_hostile_input(void **state) {
    (void)state;
    ferry__envelope_view v;
    /* nesting past the bound: not an envelope, no crash */
    size_t depth = 5000;
    char *deep = malloc(64 + 2 * depth);
    int n = sprintf(deep, "{\"eventId\":\"%s\",\"payload\":", EV);
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}");
    assert_int_equal(parse(deep, &v), 0);
    free(deep);
    /* huge numbers are kept as written */
    const char *s =
        "{\"eventId\":\"" EV "\",\"payload\":{\"n\":123456789012345678901234567890e999}}";
    assert_int_equal(parse(s, &v), 1);
    char *p = payload_of(s, &v);
    assert_string_equal(p, "{\"n\":123456789012345678901234567890e999}");
    free(p);
    /* a lone surrogate escape in the id: no id, no crash */
    assert_int_equal(parse("{\"eventId\":\"\\ud800\",\"payload\":0}", &v), 1);
    assert_string_equal(v.event_id, "");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_of_what_the_relay_writes),
        cmocka_unit_test(test_json_stringify_shapes),
        cmocka_unit_test(test_json_parse_rules),
        cmocka_unit_test(test_not_envelopes),
        cmocka_unit_test(test_hostile_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
