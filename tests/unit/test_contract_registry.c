/* test_contract_registry.c - contracts by job name and schemaVersion (src/contract/registry.c):
 * the lookup rules (name; versioned contracts; integer vs string schemaVersion; a name with
 * only its unversioned contract), the reasons (one printable line, names escaped, never a
 * payload value, cut safely), ferry_contracts_add's refusals, and ferry_contracts_load_dir
 * over real directories: NAME.json / NAME@V.json, and its errors (missing dir, bad file,
 * non-.json entry, empty dir). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ferry/contract.h"
#include "support/th.h"

static ferry_contract *load(const char *schema) {
    ferry_contract *c = NULL;
    ferry_error e = {0};
    if (ferry_contract_parse(schema, strlen(schema), "t.json", &c, &e))
        fail_msg("schema refused: %s", e.message);
    return c;
}

static void add(ferry_contracts *r, const char *name, const char *version, const char *schema) {
    ferry_error e = {0};
    ferry_contract *c = load(schema);
    if (ferry_contracts_add(r, name, version, c, &e)) fail_msg("add %s: %s", name, e.message);
}

/* Check payload; expect rc and, when rc != 0, exactly the reason want. */
static void expect(const ferry_contracts *r, const char *name, const char *payload, int rc,
                   const char *want) {
    char reason[512];
    memset(reason, 'X', sizeof reason);
    int got = ferry_contracts_check(r, name, payload, strlen(payload), reason, sizeof reason);
    if (got != rc) fail_msg("%s %s: expected %d, got %d (%s)", name, payload, rc, got, reason);
    if (rc && strcmp(reason, want)) fail_msg("%s %s: reason \"%s\", want \"%s\"", name, payload, reason, want);
}

static void test_lookup_by_name(void **state) {
    (void)state;
    ferry_contracts *r = NULL;
    assert_int_equal(ferry_contracts_new(&r, NULL), 0);
    add(r, "task-assigned.v1", NULL,
        "{\"type\":\"object\",\"required\":[\"taskId\"],\"properties\":{\"items\":{\"items\":"
        "{\"properties\":{\"qty\":{\"minimum\":1}}}}}}");
    add(r, "other", NULL, "true");
    expect(r, "task-assigned.v1", "{\"taskId\":1}", 0, NULL);
    expect(r, "task-assigned.v1", "{\"taskId\":1,\"items\":[{\"qty\":0}]}", 1,
           "contract task-assigned.v1: /items/0/qty: minimum");
    expect(r, "task-assigned.v1", "{}", 1, "contract task-assigned.v1: /taskId: required");
    expect(r, "task-assigned.v1", "[]", 1, "contract task-assigned.v1: (root): type");
    expect(r, "task-assigned.v1", "{\"taskId\"", 1, "contract task-assigned.v1: payload is not JSON");
    expect(r, "task-assigned", "{}", 1, "contract: no contract for job name \"task-assigned\"");
    expect(r, "", "{}", 1, "contract: no contract for job name \"\"");
    /* only an unversioned contract: it applies whatever schemaVersion says */
    expect(r, "other", "{\"schemaVersion\":99}", 0, NULL);
    /* names are escaped: a reason is one printable line */
    expect(r, "evil\nname\x01", "{}", 1, "contract: no contract for job name \"evil\\nname\\x01\"");
    char big[2000];
    memset(big, '[', sizeof big);
    expect(r, "other", "", 1, "contract other: payload is not JSON");
    char reason[256];
    assert_int_equal(ferry_contracts_check(r, "other", big, sizeof big, reason, sizeof reason), 1);
    assert_string_equal(reason, "contract other: payload nests deeper than 128 levels");
    assert_int_equal(ferry_contracts_check(NULL, "x", "{}", 2, reason, sizeof reason), FERRY_EINVAL);
    ferry_contracts_free(r);
}

static void test_versions(void **state) {
    (void)state;
    ferry_contracts *r = NULL;
    assert_int_equal(ferry_contracts_new(&r, NULL), 0);
    add(r, "order", "1", "{\"required\":[\"a\"]}");
    add(r, "order", "2", "{\"required\":[\"b\"]}");
    add(r, "order", "v3-beta", "{\"required\":[\"c\"]}");
    expect(r, "order", "{\"schemaVersion\":1,\"a\":0}", 0, NULL);   /* integer 1 matches "1" */
    expect(r, "order", "{\"schemaVersion\":\"1\",\"a\":0}", 0, NULL); /* and so does "1" */
    expect(r, "order", "{\"schemaVersion\":2,\"a\":0}", 1, "contract order@2: /b: required");
    expect(r, "order", "{\"schemaVersion\":\"v3-beta\",\"c\":0}", 0, NULL);
    expect(r, "order", "{\"a\":0}", 1, "contract order: payload has no schemaVersion");
    expect(r, "order", "[1]", 1, "contract order: payload has no schemaVersion");
    expect(r, "order", "{\"schemaVersion\":7}", 1, "contract order: unknown schemaVersion \"7\"");
    expect(r, "order", "{\"schemaVersion\":\"01\"}", 1, "contract order: unknown schemaVersion \"01\"");
    expect(r, "order", "{\"schemaVersion\":1.5}", 1,
           "contract order: schemaVersion is neither a string nor an integer");
    expect(r, "order", "{\"schemaVersion\":null}", 1,
           "contract order: schemaVersion is neither a string nor an integer");
    /* a long or unprintable schemaVersion is not echoed: it is the payload's text */
    expect(r, "order", "{\"schemaVersion\":\"jane.doe@example.com, 1 Main Street, Springfield, 555-0100 and more\"}",
           1, "contract order: unknown schemaVersion (67 bytes, not shown)");
    expect(r, "order", "{\"schemaVersion\":\"a\\nb\"}", 1,
           "contract order: unknown schemaVersion (3 bytes, not shown)");
    /* with an unversioned contract too, it takes payloads without schemaVersion */
    add(r, "order", NULL, "{\"required\":[\"z\"]}");
    expect(r, "order", "{\"a\":0}", 1, "contract order: /z: required");
    expect(r, "order", "{\"z\":0}", 0, NULL);
    expect(r, "order", "{\"schemaVersion\":9,\"z\":0}", 1, "contract order: unknown schemaVersion \"9\"");
    ferry_contracts_free(r);
}

static void test_add_refusals(void **state) {
    (void)state;
    ferry_contracts *r = NULL;
    assert_int_equal(ferry_contracts_new(&r, NULL), 0);
    add(r, "a", NULL, "true");
    add(r, "a", "1", "true");
    ferry_error e = {0};
    ferry_contract *c = load("true");
    assert_int_equal(ferry_contracts_add(r, "a", NULL, c, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "has a contract already"));
    assert_int_equal(ferry_contracts_add(r, "a", "1", c, &e), FERRY_EINVAL);
    assert_int_equal(ferry_contracts_add(r, "", NULL, c, &e), FERRY_EINVAL);
    assert_int_equal(ferry_contracts_add(r, "b", "", c, &e), FERRY_EINVAL);
    char longv[FERRY_CONTRACT_VERSION_MAX + 2];
    memset(longv, '1', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    assert_int_equal(ferry_contracts_add(r, "b", longv, c, &e), FERRY_EINVAL);
    assert_int_equal(ferry_contracts_add(r, "b", NULL, NULL, &e), FERRY_EINVAL);
    assert_int_equal(ferry_contracts_add(r, "b", longv + 1, c, &e), 0); /* exactly the max */
    ferry_contracts_free(r);
}

static void test_reason_cut(void **state) {
    (void)state;
    ferry_contracts *r = NULL;
    assert_int_equal(ferry_contracts_new(&r, NULL), 0);
    add(r, "n\xc3\xa9\xc3\xa9", NULL, "{\"type\":\"string\"}");
    char reason[16];
    assert_int_equal(ferry_contracts_check(r, "n\xc3\xa9\xc3\xa9", "1", 1, reason, sizeof reason), 1);
    assert_true(strlen(reason) < sizeof reason);
    assert_non_null(strstr(reason, "..."));
    assert_int_equal(ferry_contracts_check(r, "n\xc3\xa9\xc3\xa9", "1", 1, NULL, 0), 1);
    ferry_contracts_free(r);
}

static void test_reasons_hold_no_values(void **state) {
    (void)state;
    ferry_contracts *r = NULL;
    assert_int_equal(ferry_contracts_new(&r, NULL), 0);
    add(r, "user", NULL,
        "{\"properties\":{\"email\":{\"maxLength\":3},\"ssn\":{\"pattern\":\"^x$\"},"
        "\"age\":{\"maximum\":150},\"tags\":{\"items\":{\"enum\":[\"a\"]}}}}");
    const char *payloads[] = {
        "{\"email\":\"jane.secret@example.com\"}",
        "{\"ssn\":\"jane.secret-078-05-1120\"}",
        "{\"age\":78051120}",
        "{\"tags\":[\"jane.secret\"]}",
        "{\"email\":\"jane.secret@example.com\"",
    };
    for (size_t i = 0; i < sizeof payloads / sizeof *payloads; i++) {
        char reason[512];
        assert_int_equal(ferry_contracts_check(r, "user", payloads[i], strlen(payloads[i]), reason,
                                               sizeof reason), 1);
        assert_null(strstr(reason, "jane.secret"));
        assert_null(strstr(reason, "78051120"));
        assert_non_null(strstr(reason, "contract user: "));
    }
    ferry_contracts_free(r);
}

/* ---- load_dir ---------------------------------------------------------------------- */

static char *mkdir_in_tmp(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", th_tmpdir(), name);
    assert_int_equal(mkdir(path, 0700), 0);
    return path;
}

static void put(const char *dir, const char *file, const char *text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    th_write_file(path, text, 0600);
}

static void rm(const char *dir, const char *file) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    assert_int_equal(unlink(path), 0);
}

static void test_load_dir(void **state) {
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", mkdir_in_tmp("contracts"));
    put(dir, "task-assigned.v1.json", "{\"required\":[\"taskId\"]}");
    put(dir, "order@1.json", "{\"required\":[\"a\"]}");
    put(dir, "order@2.json", "{\"required\":[\"b\"]}");
    put(dir, "mail@ops@3.json", "{\"required\":[\"m\"]}"); /* split at the last '@' */
    put(dir, ".hidden.swp", "not json");
    ferry_contracts *r = NULL;
    ferry_error e = {0};
    if (ferry_contracts_load_dir(dir, &r, &e)) fail_msg("load_dir: %s", e.message);
    expect(r, "task-assigned.v1", "{}", 1, "contract task-assigned.v1: /taskId: required");
    expect(r, "order", "{\"schemaVersion\":2}", 1, "contract order@2: /b: required");
    expect(r, "order", "{\"schemaVersion\":1,\"a\":1}", 0, NULL);
    expect(r, "mail@ops", "{\"schemaVersion\":\"3\"}", 1, "contract mail@ops@3: /m: required");
    expect(r, "order@1", "{}", 1, "contract: no contract for job name \"order@1\"");
    ferry_contracts_free(r);

    /* a bad schema: the error names the file and the problem */
    put(dir, "bad.json", "{\"properties\":{\"x\":{\"minItems\":1}}}");
    r = (ferry_contracts *)1;
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_null(r);
    assert_non_null(strstr(e.message, "contract bad.json: /properties/x: keyword \"minItems\""));
    put(dir, "bad.json", "{\"type\":");
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "contract bad.json: (root): the schema is not JSON"));
    rm(dir, "bad.json");

    /* an entry that is not a .json file is refused, never skipped */
    put(dir, "order@3.jsn", "true");
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "order@3.jsn is not a .json file"));
    rm(dir, "order@3.jsn");
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/sub.json", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "sub.json is not a regular file"));
    assert_int_equal(rmdir(sub), 0);
    put(dir, "@2.json", "true");
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "@2.json: the file name has no job name"));
    rm(dir, "@2.json");
    put(dir, "x@.json", "true");
    assert_int_equal(ferry_contracts_load_dir(dir, &r, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "x@.json: the file name has an empty schemaVersion"));
    rm(dir, "x@.json");

    /* an empty directory (hidden files do not count), a missing one */
    char empty[1024];
    snprintf(empty, sizeof empty, "%s", mkdir_in_tmp("empty"));
    put(empty, ".keep", "");
    assert_int_equal(ferry_contracts_load_dir(empty, &r, &e), FERRY_EINVAL);
    char want[1200];
    snprintf(want, sizeof want, "no contracts in %s", empty);
    assert_string_equal(e.message, want);
    rm(empty, ".keep");
    assert_int_equal(rmdir(empty), 0);
    assert_int_equal(ferry_contracts_load_dir(empty, &r, &e), FERRY_EIO);
    assert_non_null(strstr(e.message, "cannot open directory"));
    assert_null(r);

    rm(dir, "task-assigned.v1.json");
    rm(dir, "order@1.json");
    rm(dir, "order@2.json");
    rm(dir, "mail@ops@3.json");
    rm(dir, ".hidden.swp");
    assert_int_equal(rmdir(dir), 0);
}

static void test_load_file(void **state) {
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/one.json", th_tmpdir());
    th_write_file(path, "{\"format\":\"uuid\"}", 0600);
    ferry_contract *c = NULL;
    ferry_error e = {0};
    assert_int_equal(ferry_contract_load(path, &c, &e), 0);
    ferry_contract_violation v;
    assert_int_equal(ferry_contract_validate(c, "\"x\"", 3, &v), 1);
    assert_string_equal(v.keyword, "format");
    ferry_contract_free(c);
    th_write_file(path, "{\"format\":\"email\"}", 0600);
    assert_int_equal(ferry_contract_load(path, &c, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "contract one.json: /format: \"format\" \"email\" is not supported"));
    unlink(path);
    assert_int_equal(ferry_contract_load(path, &c, &e), FERRY_EIO);
    assert_null(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_by_name),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_add_refusals),
        cmocka_unit_test(test_reason_cut),
        cmocka_unit_test(test_reasons_hold_no_values),
        cmocka_unit_test(test_load_dir),
        cmocka_unit_test(test_load_file),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
