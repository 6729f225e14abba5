/* test_contract.c - loading and validating one payload contract (src/contract): each keyword
 * of the subset, $schema dialects, unsupported keywords refused with their path, formats
 * (uuid has no draft-07 suite file; date-time extras beyond the suite), verdict paths with
 * RFC 6901 escapes, huge numbers and exact number comparison, deep nesting, invalid UTF-8,
 * and verdicts that never carry a payload value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/contract.h"

static ferry_contract *load(const char *schema) {
    ferry_contract *c = NULL;
    ferry_error e = {0};
    int rc = ferry_contract_parse(schema, strlen(schema), "t.json", &c, &e);
    if (rc) fail_msg("schema %s refused: %s", schema, e.message);
    assert_non_null(c);
    return c;
}

/* A schema that must be refused; returns its message (static). */
static const char *refuse(const char *schema, int code) {
    static ferry_error e;
    memset(&e, 0, sizeof e);
    ferry_contract *c = (ferry_contract *)1;
    int rc = ferry_contract_parse(schema, strlen(schema), "t.json", &c, &e);
    if (rc != code) fail_msg("schema %s: expected %d, got %d (%s)", schema, code, rc, e.message);
    assert_int_equal(e.code, code);
    assert_null(c);
    assert_true(!strncmp(e.message, "contract t.json: ", 17));
    return e.message;
}

/* Validate payload; expect valid (kw NULL) or invalid at path with keyword kw. */
static void expect(const ferry_contract *c, const char *payload, const char *path, const char *kw) {
    ferry_contract_violation v;
    memset(&v, 0, sizeof v);
    int rc = ferry_contract_validate(c, payload, strlen(payload), &v);
    if (!kw) {
        if (rc != 0) fail_msg("%s: expected valid, got %d (%s: %s)", payload, rc, v.path, v.keyword);
        return;
    }
    if (rc != 1) fail_msg("%s: expected invalid (%s: %s), got %d", payload, path, kw, rc);
    if (strcmp(v.path, path) || strcmp(v.keyword, kw))
        fail_msg("%s: expected \"%s\": %s, got \"%s\": %s", payload, path, kw, v.path, v.keyword);
}

static void check_one(const char *schema, const char *payload, const char *path, const char *kw) {
    ferry_contract *c = load(schema);
    expect(c, payload, path, kw);
    ferry_contract_free(c);
}

static void test_type(void **state) {
    (void)state;
    ferry_contract *c = load("{\"type\":\"integer\"}");
    expect(c, "1", NULL, NULL);
    expect(c, "1.0", NULL, NULL); /* zero fractional part: an integer */
    expect(c, "-0", NULL, NULL);
    expect(c, "1.5", "", "type");
    expect(c, "\"1\"", "", "type");
    ferry_contract_free(c);
    c = load("{\"type\":[\"string\",\"null\"]}");
    expect(c, "null", NULL, NULL);
    expect(c, "\"x\"", NULL, NULL);
    expect(c, "false", "", "type");
    expect(c, "{}", "", "type");
    ferry_contract_free(c);
    check_one("{\"type\":\"number\"}", "12", NULL, NULL);
    check_one("{\"type\":\"boolean\"}", "0", "", "type");
    check_one("{\"type\":\"array\"}", "{}", "", "type");
    check_one("{\"type\":\"object\"}", "[]", "", "type");
    assert_non_null(strstr(refuse("{\"type\":\"float\"}", FERRY_EINVAL), "/type"));
    refuse("{\"type\":[]}", FERRY_EINVAL);
    refuse("{\"type\":[\"string\",\"string\"]}", FERRY_EINVAL);
    refuse("{\"type\":7}", FERRY_EINVAL);
}

static void test_object_keywords(void **state) {
    (void)state;
    ferry_contract *c = load("{\"type\":\"object\",\"required\":[\"id\",\"qty\"],"
                             "\"properties\":{\"id\":{\"type\":\"string\"},\"qty\":{\"type\":\"integer\","
                             "\"minimum\":1}},\"additionalProperties\":false}");
    expect(c, "{\"id\":\"a\",\"qty\":2}", NULL, NULL);
    expect(c, "{\"qty\":2}", "/id", "required"); /* the missing property's pointer */
    expect(c, "{\"id\":\"a\",\"qty\":0}", "/qty", "minimum");
    expect(c, "{\"id\":5,\"qty\":1}", "/id", "type");
    expect(c, "{\"id\":\"a\",\"qty\":1,\"extra\":1}", "/extra", "additionalProperties");
    ferry_contract_free(c);
    /* additionalProperties as a schema; properties named like keywords are names */
    c = load("{\"properties\":{\"type\":{\"const\":\"x\"},\"minimum\":true},"
             "\"additionalProperties\":{\"type\":\"number\"}}");
    expect(c, "{\"type\":\"x\",\"minimum\":\"anything\",\"n\":1}", NULL, NULL);
    expect(c, "{\"type\":\"y\"}", "/type", "const");
    expect(c, "{\"n\":\"1\"}", "/n", "type");
    expect(c, "[1]", NULL, NULL); /* object keywords ignore non-objects */
    ferry_contract_free(c);
    refuse("{\"properties\":[]}", FERRY_EINVAL);
    refuse("{\"required\":\"id\"}", FERRY_EINVAL);
    refuse("{\"required\":[\"a\",\"a\"]}", FERRY_EINVAL);
    refuse("{\"additionalProperties\":1}", FERRY_EINVAL);
}

static void test_items_and_max_items(void **state) {
    (void)state;
    ferry_contract *c = load("{\"type\":\"array\",\"maxItems\":3,\"items\":{\"type\":\"object\","
                             "\"properties\":{\"qty\":{\"minimum\":1}}}}");
    expect(c, "[{\"qty\":1},{\"qty\":9}]", NULL, NULL);
    expect(c, "[{\"qty\":1},{\"qty\":0}]", "/1/qty", "minimum");
    expect(c, "[{},{},{},{}]", "", "maxItems");
    ferry_contract_free(c);
    /* the tuple form: position by position, extra items allowed */
    c = load("{\"items\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}");
    expect(c, "[1,\"a\",null,{}]", NULL, NULL);
    expect(c, "[1]", NULL, NULL);
    expect(c, "[1,2]", "/1", "type");
    ferry_contract_free(c);
    check_one("{\"items\":false}", "[1]", "/0", "items");
    check_one("{\"items\":false}", "[]", NULL, NULL);
    check_one("{\"maxItems\":2.0}", "[1,2,3]", "", "maxItems");
    refuse("{\"maxItems\":-1}", FERRY_EINVAL);
    refuse("{\"maxItems\":1.5}", FERRY_EINVAL);
    /* 2020-12 has no array form of items */
    const char *m = refuse("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
                           "\"items\":[true]}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/items"));
}

static void test_enum_const_equality(void **state) {
    (void)state;
    ferry_contract *c = load("{\"enum\":[1,\"a\",null,{\"x\":[1,2]}]}");
    expect(c, "1.0", NULL, NULL); /* numbers by value */
    expect(c, "null", NULL, NULL);
    expect(c, "{\"x\":[1.0,2]}", NULL, NULL);
    expect(c, "{\"x\":[2,1]}", "", "enum"); /* arrays ordered */
    expect(c, "true", "", "enum");
    expect(c, "\"A\"", "", "enum");
    ferry_contract_free(c);
    c = load("{\"const\":{\"a\":1,\"b\":[true,null]}}");
    expect(c, "{\"b\":[true,null],\"a\":1}", NULL, NULL); /* objects unordered */
    expect(c, "{\"a\":1,\"b\":[true,null],\"c\":0}", "", "const");
    expect(c, "{\"a\":true,\"b\":[true,null]}", "", "const");
    ferry_contract_free(c);
    check_one("{\"const\":false}", "0", "", "const");
    check_one("{\"const\":null}", "null", NULL, NULL);
    check_one("{\"const\":\"a\\u0000b\"}", "\"a\\u0000b\"", NULL, NULL);
    check_one("{\"const\":\"a\\u0000b\"}", "\"a\\u0000c\"", "", "const");
    refuse("{\"enum\":{}}", FERRY_EINVAL);
}

static void test_string_lengths(void **state) {
    (void)state;
    ferry_contract *c = load("{\"minLength\":2,\"maxLength\":3}");
    expect(c, "\"ab\"", NULL, NULL);
    expect(c, "\"\\u00e9\\u00e9\\u00e9\"", NULL, NULL); /* 3 code points, 6 bytes */
    expect(c, "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"", NULL, NULL); /* 2 emoji, 8 bytes */
    expect(c, "\"\xf0\x9f\x98\x80\"", "", "minLength");
    expect(c, "\"abcd\"", "", "maxLength");
    expect(c, "12345", NULL, NULL);
    ferry_contract_free(c);
    refuse("{\"minLength\":\"2\"}", FERRY_EINVAL);
}

static void test_minimum_maximum(void **state) {
    (void)state;
    ferry_contract *c = load("{\"minimum\":-2.5,\"maximum\":10}");
    expect(c, "-2.5", NULL, NULL);
    expect(c, "10", NULL, NULL);
    expect(c, "10.0", NULL, NULL);
    expect(c, "10.000001", "", "maximum");
    expect(c, "-3", "", "minimum");
    expect(c, "\"100\"", NULL, NULL);
    ferry_contract_free(c);
    /* exact integer compare, no rounding through double */
    c = load("{\"maximum\":9007199254740992}");
    expect(c, "9007199254740992", NULL, NULL);
    expect(c, "9007199254740993", "", "maximum");
    ferry_contract_free(c);
    c = load("{\"maximum\":9223372036854775807}");
    expect(c, "9223372036854775807", NULL, NULL);
    expect(c, "9223372036854775808", "", "maximum"); /* beyond int64: read as a double */
    ferry_contract_free(c);
    c = load("{\"minimum\":0.5}");
    expect(c, "0", "", "minimum");
    expect(c, "1", NULL, NULL);
    ferry_contract_free(c);
    refuse("{\"minimum\":\"1\"}", FERRY_EINVAL);
}

static void test_huge_numbers(void **state) {
    (void)state;
    ferry_contract *c = load("{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":0}}");
    expect(c, "[123456789012345678901234567890, 1e400, 1E+999999999]", NULL, NULL);
    expect(c, "[1, -1e400]", "/1", "minimum");
    expect(c, "[1e-400]", NULL, NULL); /* underflow: 0 */
    ferry_contract_free(c);
    c = load("{\"maximum\":1e300}");
    expect(c, "1e301", "", "maximum");
    expect(c, "1e400", "", "maximum");
    expect(c, "-99999999999999999999999999999999999999", NULL, NULL);
    ferry_contract_free(c);
    check_one("{\"type\":\"integer\"}", "1e400", NULL, NULL);
    check_one("{\"const\":1}", "1e400", "", "const");
}

static void test_pattern(void **state) {
    (void)state;
    ferry_contract *c = load("{\"pattern\":\"^[a-z]+-\\\\d{2}$\"}");
    expect(c, "\"ab-12\"", NULL, NULL);
    expect(c, "\"ab-123\"", "", "pattern");
    expect(c, "\"ab-12\\n\"", "", "pattern"); /* $ is the end only, as in ECMA-262 */
    expect(c, "7", NULL, NULL);
    ferry_contract_free(c);
    /* unanchored search; UTF-8 aware */
    check_one("{\"pattern\":\"b\"}", "\"abc\"", NULL, NULL);
    check_one("{\"pattern\":\"^.$\"}", "\"\\u00e9\"", NULL, NULL);
    check_one("{\"pattern\":\"^\\\\u0041$\"}", "\"A\"", NULL, NULL);
    const char *m = refuse("{\"properties\":{\"p\":{\"pattern\":\"(\"}}}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/properties/p/pattern"));
    assert_non_null(strstr(m, "does not compile"));
    refuse("{\"pattern\":1}", FERRY_EINVAL);
    /* catastrophic backtracking ends at the match limit and counts as no match */
    c = load("{\"pattern\":\"^(a+)+$\"}");
    char payload[80];
    snprintf(payload, sizeof payload, "\"%s!\"", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    expect(c, payload, "", "pattern");
    ferry_contract_free(c);
}

static void test_format_uuid(void **state) {
    (void)state;
    ferry_contract *c = load("{\"format\":\"uuid\"}");
    expect(c, "\"0190c1a2-7b3c-7d4e-8f00-0123456789ab\"", NULL, NULL);
    expect(c, "\"0190C1A2-7B3C-7D4E-8F00-0123456789AB\"", NULL, NULL); /* upper case */
    expect(c, "\"0190c1A2-7b3C-4d4e-8F00-0123456789aB\"", NULL, NULL); /* mixed */
    expect(c, "\"00000000-0000-0000-0000-000000000000\"", NULL, NULL); /* nil, any version */
    expect(c, "\"0190c1a2-7b3c-7d4e-8f00-0123456789a\"", "", "format");   /* short */
    expect(c, "\"0190c1a2-7b3c-7d4e-8f00-0123456789abc\"", "", "format"); /* long */
    expect(c, "\"0190c1a27b3c7d4e8f000123456789ab\"", "", "format");     /* no dashes */
    expect(c, "\"0190c1a2-7b3c7-d4e-8f00-0123456789ab\"", "", "format"); /* dash misplaced */
    expect(c, "\"0190c1g2-7b3c-7d4e-8f00-0123456789ab\"", "", "format"); /* not hex */
    expect(c, "\"{0190c1a2-7b3c-7d4e-8f00-0123456789a}\"", "", "format");
    expect(c, "\"\"", "", "format");
    expect(c, "42", NULL, NULL); /* formats apply to strings only */
    ferry_contract_free(c);
}

static void test_format_date_time(void **state) {
    (void)state;
    ferry_contract *c = load("{\"format\":\"date-time\"}");
    expect(c, "\"2024-02-29T23:59:59Z\"", NULL, NULL);       /* leap year */
    expect(c, "\"2023-02-29T00:00:00Z\"", "", "format");     /* not one */
    expect(c, "\"1900-02-29T00:00:00Z\"", "", "format");
    expect(c, "\"2000-02-29T00:00:00Z\"", NULL, NULL);
    expect(c, "\"2024-04-31T00:00:00Z\"", "", "format");
    expect(c, "\"2024-01-01t10:00:00.123456789z\"", NULL, NULL); /* t and z */
    expect(c, "\"2024-01-01T10:00:00+05:30\"", NULL, NULL);
    expect(c, "\"2024-01-01T10:00:00.Z\"", "", "format");   /* empty fraction */
    expect(c, "\"2024-01-01 10:00:00Z\"", "", "format");    /* space instead of T */
    expect(c, "\"2024-01-01T10:00:00\"", "", "format");     /* no offset */
    expect(c, "\"2024-01-01T10:00:00+0530\"", "", "format");
    expect(c, "\"2024-01-01T10:00:00+24:00\"", "", "format");
    expect(c, "\"2024-01-01T24:00:00Z\"", "", "format");
    expect(c, "\"2024-1-01T10:00:00Z\"", "", "format");
    expect(c, "\"1998-12-31T23:59:60Z\"", NULL, NULL);      /* leap second at 23:59 UTC */
    expect(c, "\"1998-12-31T15:59:60-08:00\"", NULL, NULL);
    expect(c, "\"1999-01-01T00:29:60+00:30\"", NULL, NULL);
    expect(c, "\"1998-12-31T23:58:60Z\"", "", "format");
    expect(c, "\"1998-12-31T22:59:60Z\"", "", "format");
    expect(c, "\"1998-12-31T23:59:61Z\"", "", "format");
    expect(c, "\"2024-01-01T10:00:00Z \"", "", "format");
    ferry_contract_free(c);
    /* any other format is refused at load, naming the value */
    const char *m = refuse("{\"properties\":{\"e\":{\"format\":\"email\"}}}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/properties/e/format"));
    assert_non_null(strstr(m, "\"email\""));
}

static void test_schema_dialects(void **state) {
    (void)state;
    ferry_contract_free(load("{\"$schema\":\"http://json-schema.org/draft-07/schema#\"}"));
    ferry_contract_free(load("{\"$schema\":\"http://json-schema.org/draft-07/schema\"}"));
    ferry_contract_free(load("{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
                             "\"type\":\"object\",\"items\":{}}"));
    refuse("{\"$schema\":\"http://json-schema.org/draft-04/schema#\"}", FERRY_EINVAL);
    refuse("{\"$schema\":\"https://json-schema.org/draft/2019-09/schema\"}", FERRY_EINVAL);
    refuse("{\"$schema\":7}", FERRY_EINVAL);
    /* annotations change nothing */
    check_one("{\"$id\":\"urn:x\",\"title\":\"T\",\"description\":\"D\",\"$comment\":\"c\","
              "\"default\":{\"x\":{\"$ref\":1}},\"examples\":[1],\"type\":\"string\"}",
              "1", "", "type");
    refuse("{\"title\":1}", FERRY_EINVAL);
    /* boolean schemas */
    check_one("true", "{\"anything\":[1]}", NULL, NULL);
    check_one("false", "null", "", "false");
    check_one("{\"properties\":{\"a\":false}}", "{\"a\":1}", "/a", "properties");
}

static void test_unknown_keywords_refused(void **state) {
    (void)state;
    const char *m = refuse("{\"properties\":{\"tags\":{\"type\":\"array\",\"uniqueItems\":true}}}",
                           FERRY_EINVAL);
    assert_non_null(strstr(m, "contract t.json: /properties/tags: keyword \"uniqueItems\" is not "
                              "supported (supported: type, "));
    m = refuse("{\"$ref\":\"#/definitions/a\"}", FERRY_EINVAL);
    assert_non_null(strstr(m, "(root): keyword \"$ref\""));
    m = refuse("{\"items\":[true,{\"minItems\":1}]}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/items/1: keyword \"minItems\""));
    m = refuse("{\"properties\":{\"a/b~c\":{\"allOf\":[]}}}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/properties/a~1b~0c: keyword \"allOf\""));
    m = refuse("{\"additionalProperties\":{\"not\":{}}}", FERRY_EINVAL);
    assert_non_null(strstr(m, "/additionalProperties: keyword \"not\""));
    /* a keyword's name with control characters is escaped in the message */
    m = refuse("{\"bad\\nkw\":1}", FERRY_EINVAL);
    assert_null(strchr(m, '\n'));
    refuse("[]", FERRY_EINVAL);
    refuse("{", FERRY_EINVAL);
    refuse("", FERRY_EINVAL);
}

static void test_schema_limits(void **state) {
    (void)state;
    /* FERRY_CONTRACT_DEPTH_MAX subschemas nest; one more is refused */
    char *s = malloc(64 * 20 + 64);
    assert_non_null(s);
    for (int depth = FERRY_CONTRACT_DEPTH_MAX; depth <= FERRY_CONTRACT_DEPTH_MAX + 1; depth++) {
        s[0] = 0;
        for (int i = 1; i < depth; i++) strcat(s, "{\"items\":");
        strcat(s, "true");
        for (int i = 1; i < depth; i++) strcat(s, "}");
        ferry_contract *c = NULL;
        ferry_error e = {0};
        int rc = ferry_contract_parse(s, strlen(s), "t.json", &c, &e);
        if (depth == FERRY_CONTRACT_DEPTH_MAX) {
            assert_int_equal(rc, 0);
            ferry_contract_free(c);
        } else {
            assert_int_equal(rc, FERRY_EINVAL);
            assert_non_null(strstr(e.message, "FERRY_CONTRACT_DEPTH_MAX"));
        }
    }
    free(s);
    /* deep JSON in a schema is refused before jansson recurses */
    size_t n = 100000;
    s = malloc(n + 1);
    assert_non_null(s);
    memset(s, '[', n);
    s[n] = 0;
    assert_non_null(strstr(refuse(s, FERRY_EINVAL), "FERRY_CONTRACT_JSON_DEPTH_MAX"));
    free(s);
    s = calloc(FERRY_CONTRACT_SCHEMA_MAX_BYTES + 2, 1);
    assert_non_null(s);
    memset(s, ' ', FERRY_CONTRACT_SCHEMA_MAX_BYTES + 1);
    s[0] = '{';
    s[FERRY_CONTRACT_SCHEMA_MAX_BYTES] = '}';
    assert_non_null(strstr(refuse(s, FERRY_ETOOBIG), "FERRY_CONTRACT_SCHEMA_MAX_BYTES"));
    free(s);
}

static void test_payload_not_json_and_deep(void **state) {
    (void)state;
    ferry_contract *c = load("true");
    expect(c, "", "", "json");
    expect(c, "{", "", "json");
    expect(c, "{\"a\":1,}", "", "json");
    expect(c, "\"\xc3\x28\"", "", "json");        /* invalid UTF-8 */
    expect(c, "\"\xed\xa0\x80\"", "", "json");    /* an encoded surrogate */
    expect(c, "\"\xc0\xaf\"", "", "json");        /* overlong */
    expect(c, "\"\\ud800\"", "", "json");         /* a lone surrogate escape */
    expect(c, "{\"a\\u0000\":1}", "", "json");    /* U+0000 in a key: jansson cannot hold it */
    expect(c, "1 2", "", "json");
    expect(c, " {\"a\":[1,2,{}]} ", NULL, NULL);
    /* nesting: FERRY_CONTRACT_PAYLOAD_DEPTH_MAX levels pass, one more is refused */
    size_t d = FERRY_CONTRACT_PAYLOAD_DEPTH_MAX;
    char *p = malloc(2 * (d + 1) + 1);
    assert_non_null(p);
    memset(p, '[', d);
    memset(p + d, ']', d);
    p[2 * d] = 0;
    expect(c, p, NULL, NULL);
    memset(p, '[', d + 1);
    memset(p + d + 1, ']', d + 1);
    p[2 * d + 2] = 0;
    expect(c, p, "", "depth");
    free(p);
    /* very deep input is refused without recursing */
    size_t n = 1000000;
    p = malloc(n);
    assert_non_null(p);
    memset(p, '[', n);
    ferry_contract_violation v;
    assert_int_equal(ferry_contract_validate(c, p, n, &v), 1);
    assert_string_equal(v.keyword, "depth");
    free(p);
    assert_int_equal(ferry_contract_validate(NULL, "1", 1, &v), FERRY_EINVAL);
    assert_int_equal(ferry_contract_validate(c, "1", 1, NULL), 0);
    ferry_contract_free(c);
}

static void test_path_escaping(void **state) {
    (void)state;
    ferry_contract *c = load("{\"properties\":{\"a/b\":{\"properties\":{\"c~d\":{\"type\":\"string\"}}},"
                             "\"list\":{\"items\":{\"additionalProperties\":{\"type\":\"integer\"}}}}}");
    expect(c, "{\"a/b\":{\"c~d\":1}}", "/a~1b/c~0d", "type");
    expect(c, "{\"list\":[{},{\"~/x\":\"s\"}]}", "/list/1/~0~1x", "type");
    expect(c, "{\"list\":[{\"\":\"s\"}]}", "/list/0/", "type");
    ferry_contract_free(c);
    /* a path longer than the buffer is cut, visibly */
    char key[400];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    char schema[1200], payload[1200];
    snprintf(schema, sizeof schema, "{\"additionalProperties\":{\"additionalProperties\":"
             "{\"type\":\"string\"}}}");
    snprintf(payload, sizeof payload, "{\"%s\":{\"%s\":1}}", key, key);
    c = load(schema);
    ferry_contract_violation v;
    assert_int_equal(ferry_contract_validate(c, payload, strlen(payload), &v), 1);
    assert_string_equal(v.keyword, "type");
    assert_true(strlen(v.path) < FERRY_CONTRACT_PATH_MAX);
    assert_non_null(strstr(v.path, "..."));
    ferry_contract_free(c);
}

/* No verdict ever holds a value of the payload. */
static void test_verdicts_hold_no_values(void **state) {
    (void)state;
    static const char SECRET[] = "hunter2-4111111111111111";
    ferry_contract *c = load("{\"type\":\"object\",\"properties\":{\"card\":{\"maxLength\":4,"
                             "\"pattern\":\"^x\",\"enum\":[\"a\"],\"const\":\"a\",\"format\":\"uuid\"},"
                             "\"n\":{\"maximum\":1},\"o\":{\"type\":\"integer\"}}}");
    const char *payloads[] = {
        "{\"card\":\"hunter2-4111111111111111\"}",
        "{\"n\":4111111111111111,\"card\":\"a\"}",
        "{\"o\":\"hunter2-4111111111111111\"}",
        "{\"card\":\"hunter2-4111111111111111",
    };
    for (size_t i = 0; i < sizeof payloads / sizeof *payloads; i++) {
        ferry_contract_violation v;
        assert_int_equal(ferry_contract_validate(c, payloads[i], strlen(payloads[i]), &v), 1);
        assert_null(strstr(v.path, "hunter2"));
        assert_null(strstr(v.path, "4111"));
        assert_null(strstr(v.keyword, "hunter2"));
        assert_null(strstr(v.keyword, "4111"));
        (void)SECRET;
    }
    ferry_contract_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type),
        cmocka_unit_test(test_object_keywords),
        cmocka_unit_test(test_items_and_max_items),
        cmocka_unit_test(test_enum_const_equality),
        cmocka_unit_test(test_string_lengths),
        cmocka_unit_test(test_minimum_maximum),
        cmocka_unit_test(test_huge_numbers),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_format_uuid),
        cmocka_unit_test(test_format_date_time),
        cmocka_unit_test(test_schema_dialects),
        cmocka_unit_test(test_unknown_keywords_refused),
        cmocka_unit_test(test_schema_limits),
        cmocka_unit_test(test_payload_not_json_and_deep),
        cmocka_unit_test(test_path_escaping),
        cmocka_unit_test(test_verdicts_hold_no_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
