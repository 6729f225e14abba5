/* test_taskflow_parse.c - taskflow's pure codecs without servers: the API's routes and
 * request bodies (each refusal names its field, never quotes the value) and the
 * task.assigned.v1 payload, which must pass the contract the worker checks (loaded from the
 * source tree's examples/taskflow/contracts) and hold only the contract's members. */
#include "support/th.h"

#include "ferry/contract.h"
#include "taskflow_event.h"
#include "taskflow_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T1 "0190b6a2-7c00-7abc-8def-0123456789ab"
#define T2 "0190b6a2-7c00-7abc-8def-0123456789ac"

static void expect_create_problem(const char *body, const char *field, const char *needle) {
    tf_create_task t;
    tf_problem p;
    if (tf_parse_create_task(body, strlen(body), &t, &p) != -1) fail_msg("accepted: %s", body);
    if (strcmp(p.field, field)) fail_msg("%s: field \"%s\", want \"%s\"", body, p.field, field);
    if (!strstr(p.message, needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", body, p.message, needle);
}

static void test_create_body(void **state) {
    (void)state;
    tf_create_task t;
    tf_problem p;
    const char *ok = "{\"tenantId\":\"0190B6A2-7C00-7ABC-8DEF-0123456789AB\",\"title\":\"Ôn tập\"}";
    assert_int_equal(tf_parse_create_task(ok, strlen(ok), &t, &p), 0);
    assert_string_equal(t.tenant_id, T1); /* canonical lower case */
    assert_string_equal(t.title, "Ôn tập");

    expect_create_problem("", "", "not a JSON object");
    expect_create_problem("{\"tenantId\":", "", "not a JSON object");
    expect_create_problem("[1]", "", "must be a JSON object");
    expect_create_problem("{\"title\":\"x\"}", "tenantId", "required");
    expect_create_problem("{\"tenantId\":5,\"title\":\"x\"}", "tenantId", "must be a string");
    expect_create_problem("{\"tenantId\":\"t-1\",\"title\":\"x\"}", "tenantId", "UUID");
    expect_create_problem("{\"tenantId\":\"" T1 "\"}", "title", "required");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":7}", "title", "string");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"\"}", "title", "empty");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"   \"}", "title", "blank");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"a\\nb\"}", "title", "control");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"a\\u0085b\"}", "title", "control");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"a\\u0000b\"}", "", "not a JSON");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"x\",\"title\":\"y\"}", "",
                          "not a JSON object");
    expect_create_problem("{\"tenantId\":\"" T1 "\",\"title\":\"x\",\"owner\":\"me\"}", "owner",
                          "unknown member");

    /* 200 code points are fine, 201 are not; counted in characters, not bytes */
    char body[2048];
    char title[1024] = "";
    for (int i = 0; i < 200; i++)
        strcat(title, "é");
    snprintf(body, sizeof body, "{\"tenantId\":\"%s\",\"title\":\"%s\"}", T1, title);
    assert_int_equal(tf_parse_create_task(body, strlen(body), &t, &p), 0);
    snprintf(body, sizeof body, "{\"tenantId\":\"%s\",\"title\":\"%sx\"}", T1, title);
    expect_create_problem(body, "title", "201 characters");
}

static void test_assign_body(void **state) {
    (void)state;
    tf_assign_task a;
    tf_problem p;
    const char *ok = "{\"assigneeId\":\"" T2 "\"}";
    assert_int_equal(tf_parse_assign_task(ok, strlen(ok), &a, &p), 0);
    assert_string_equal(a.assignee_id, T2);
    const char *bad[][2] = {{"{}", "assigneeId"},
                            {"{\"assigneeId\":null}", "assigneeId"},
                            {"{\"assigneeId\":\"" T2 "x\"}", "assigneeId"},
                            {"{\"assigneeID\":\"" T2 "\"}", "assigneeID"},
                            {"\"" T2 "\"", ""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tf_parse_assign_task(bad[i][0], strlen(bad[i][0]), &a, &p), -1);
        if (strcmp(p.field, bad[i][1])) fail_msg("%s: field %s", bad[i][0], p.field);
        if (strstr(p.message, T2)) fail_msg("the message quotes the value: %s", p.message);
    }
}

static void test_routes(void **state) {
    (void)state;
    tf_route r;
    assert_int_equal(tf_route_match("POST", "/tasks", &r), 0);
    assert_int_equal(r.kind, TF_ROUTE_CREATE);
    assert_int_equal(tf_route_match("GET", "/tasks", &r), 405);
    assert_string_equal(r.allow, "POST");
    assert_int_equal(tf_route_match("GET", "/tasks/" T1, &r), 0);
    assert_int_equal(r.kind, TF_ROUTE_GET);
    assert_int_equal(r.id_valid, 1);
    assert_string_equal(r.id, T1);
    assert_int_equal(tf_route_match("POST", "/tasks/" T1 "/assign", &r), 0);
    assert_int_equal(r.kind, TF_ROUTE_ASSIGN);
    assert_int_equal(tf_route_match("GET", "/tasks/" T1 "/assign", &r), 405);
    assert_int_equal(tf_route_match("DELETE", "/tasks/" T1, &r), 405);
    assert_string_equal(r.allow, "GET");
    assert_int_equal(tf_route_match("GET", "/tasks/42", &r), 0);
    assert_int_equal(r.id_valid, 0);
    assert_int_equal(tf_route_match("GET", "/tasks/", &r), 404);
    assert_int_equal(tf_route_match("GET", "/tasks/" T1 "/x", &r), 404);
    assert_int_equal(tf_route_match("GET", "/", &r), 404);
    assert_int_equal(tf_route_match("POST", "/tasksx", &r), 404);
}

static void test_event_payload_fits_the_contract(void **state) {
    (void)state;
    const char *src = getenv("FERRY_SOURCE_DIR");
    if (!src) fail_msg("FERRY_SOURCE_DIR is not set; run through ctest");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/taskflow/contracts", src);
    ferry_contracts *reg = NULL;
    ferry_error e = {0};
    if (ferry_contracts_load_dir(dir, &reg, &e)) fail_msg("%s", e.message);

    tf_event ev = {.message_id = T1,
                   .occurred_at = "2026-12-03T08:00:00.123456Z",
                   .tenant_id = T2,
                   .task_id = "0190b6a2-7c00-7abc-8def-0123456789ad",
                   .assignee_id = "0190b6a2-7c00-7abc-8def-0123456789ae",
                   .traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"};
    char *json = tf_event_payload(&ev);
    assert_non_null(json);
    assert_string_equal(json, "{\"schemaVersion\":1,\"messageId\":\"" T1 "\",\"occurredAt\":"
                              "\"2026-12-03T08:00:00.123456Z\",\"tenantId\":\"" T2 "\","
                              "\"taskId\":\"0190b6a2-7c00-7abc-8def-0123456789ad\","
                              "\"assigneeId\":\"0190b6a2-7c00-7abc-8def-0123456789ae\","
                              "\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-"
                              "b7ad6b7169203331-01\"}");
    char reason[512];
    assert_int_equal(
        ferry_contracts_check(reg, "task-assigned.v1", json, strlen(json), reason, sizeof reason),
        0);
    tf_event back;
    char why[200];
    assert_int_equal(tf_event_parse(json, strlen(json), &back, why, sizeof why), 0);
    assert_memory_equal(&back, &ev, sizeof ev);
    free(json);

    ev.traceparent[0] = '\0'; /* optional */
    json = tf_event_payload(&ev);
    assert_int_equal(
        ferry_contracts_check(reg, "task-assigned.v1", json, strlen(json), reason, sizeof reason),
        0);
    free(json);

    /* what the contract refuses, with the reasons the dead letters will show */
    const char *refused[][2] = {
        {"{\"schemaVersion\":2,\"messageId\":\"" T1 "\"}",
         "contract task-assigned.v1: unknown schemaVersion \"2\""},
        {"{\"messageId\":\"" T1 "\"}", "contract task-assigned.v1: payload has no schemaVersion"},
        {"{\"schemaVersion\":1,\"messageId\":\"" T1 "\",\"occurredAt\":\"2026-12-03T08:00:00Z\","
         "\"tenantId\":\"" T2 "\",\"taskId\":\"" T2 "\",\"assigneeId\":\"nobody\"}",
         "contract task-assigned.v1@1: /assigneeId: format"},
        {"{\"schemaVersion\":1,\"messageId\":\"" T1 "\",\"occurredAt\":\"2026-12-03T08:00:00Z\","
         "\"tenantId\":\"" T2 "\",\"taskId\":\"" T2 "\",\"assigneeId\":\"" T2 "\","
         "\"password\":\"hunter2\"}",
         "contract task-assigned.v1@1: /password: additionalProperties"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        int rc = ferry_contracts_check(reg, "task-assigned.v1", refused[i][0],
                                       strlen(refused[i][0]), reason, sizeof reason);
        assert_int_equal(rc, 1);
        assert_string_equal(reason, refused[i][1]);
    }
    ferry_contracts_free(reg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_body),
        cmocka_unit_test(test_assign_body),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_event_payload_fits_the_contract),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
