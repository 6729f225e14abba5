/* test_cli_logs_lines.c - cmd/ferry/logline.c on its own (compiled into this test: the CLI's
 * sources are not a library), no server needed:
 *  - logline_traceparent: the W3C shape (version 00 exactly 55 characters, later versions
 *    may go on after a '-', lower-case hex, version ff and all-zero ids refused);
 *  - logline_set_trace: trace / trace_id / span_id / trace_flags, opaque ids as they are;
 *  - logline_mask_url_password: the password as written and percent-decoded, every
 *    occurrence, within the buffer's size; nothing for URLs without one;
 *  - logline_event: text exactly as logline prints it; JSON members in order (time, level,
 *    event, msg, then the fields; reserved keys in the fields ignored), invalid UTF-8 as
 *    U+FFFD, control characters escaped, an over-long msg cut with "truncated":true. */
#include <fcntl.h>
#include <unistd.h>

#include "support/th.h"

#include "../../cmd/ferry/logline.c"

/* ---- capturing stderr -------------------------------------------------------------------- */

static char cap_path[256];
static int saved_fd = -1;

static void capture_begin(void) {
    snprintf(cap_path, sizeof cap_path, "%s/stderr.txt", th_tmpdir());
    fflush(stderr);
    saved_fd = dup(2);
    int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || saved_fd < 0) fail_msg("cannot capture stderr");
    dup2(fd, 2);
    close(fd);
}

/* Returns what was written (caller frees). */
static char *capture_end(void) {
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    saved_fd = -1;
    return th_slurp(cap_path);
}

/* ---- tests ------------------------------------------------------------------------------- */

static void test_traceparent(void **state) {
    (void)state;
    char t[33], s[17], f[3];
    assert_int_equal(
        logline_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", t, s, f), 1);
    assert_string_equal(t, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(s, "00f067aa0ba902b7");
    assert_string_equal(f, "01");
    /* a later version: exactly 55, or more after a '-' */
    assert_int_equal(
        logline_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-x", t, s, f),
        1);
    assert_string_equal(f, "09");
    const char *bad[] = {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* 00 with more */
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09x",  /* no '-' after 55 */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent id */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",    /* 31 hex */
        "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",   /* separators */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   /* flags not hex */
        "opaque-id",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (logline_traceparent(bad[i], t, s, f)) fail_msg("accepted: %s", bad[i]);
    assert_int_equal(logline_traceparent(NULL, NULL, NULL, NULL), 0);
}

static void test_set_trace(void **state) {
    (void)state;
    json_t *o = json_object();
    logline_set_trace(o, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assert_string_equal(json_string_value(json_object_get(o, "trace_id")),
                        "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(json_string_value(json_object_get(o, "span_id")), "00f067aa0ba902b7");
    assert_string_equal(json_string_value(json_object_get(o, "trace_flags")), "01");
    json_decref(o);
    o = json_object();
    logline_set_trace(o, "req-42");
    assert_string_equal(json_string_value(json_object_get(o, "trace")), "req-42");
    assert_string_equal(json_string_value(json_object_get(o, "trace_id")), "req-42");
    assert_null(json_object_get(o, "span_id"));
    logline_set_trace(o, NULL); /* nothing */
    logline_set_trace(o, "");
    assert_int_equal(json_object_size(o), 2);
    json_decref(o);
}

static void test_mask(void **state) {
    (void)state;
    char buf[256];
    snprintf(buf, sizeof buf, "auth secret@pw failed; again secret%%40pw and secret@pw");
    logline_mask_url_password(buf, sizeof buf, "redis://ferry:secret%40pw@127.0.0.1:6379/0");
    assert_string_equal(buf, "auth *** failed; again *** and ***");
    /* no password, no scheme, NULL: unchanged */
    snprintf(buf, sizeof buf, "ferry@host");
    logline_mask_url_password(buf, sizeof buf, "redis://ferry@host:6379");
    logline_mask_url_password(buf, sizeof buf, "host:6379");
    logline_mask_url_password(buf, sizeof buf, NULL);
    assert_string_equal(buf, "ferry@host");
    /* an '@' in the path does not end the user info early */
    snprintf(buf, sizeof buf, "x pw1 y");
    logline_mask_url_password(buf, sizeof buf, "rediss://:pw1@h:1/0?x=@");
    assert_string_equal(buf, "x *** y");
    /* a password shorter than its mark, in a full buffer: cut, never past cap */
    char small[5] = "apwb";
    logline_mask_url_password(small, sizeof small, "redis://u:pw@h");
    assert_string_equal(small, "a***");
}

static void test_event_text_and_json(void **state) {
    (void)state;
    logline_set_format(LOGLINE_TEXT);
    capture_begin();
    json_t *f = json_object();
    logline_set_str(f, "queue", "q");
    logline_event("worker", FERRY_LOG_WARN, "worker.stalled", f, "queue=%s id=%d stalled", "q", 7);
    logline("worker", "plain %s", "line");
    char *text = capture_end();
    const char *l1 = strstr(text, " ferry worker: queue=q id=7 stalled\n");
    const char *l2 = strstr(text, " ferry worker: plain line\n");
    if (!l1 || !l2 || text[23] != 'Z') fail_msg("text lines: %s", text);
    free(text);

    logline_set_format(LOGLINE_JSON);
    assert_int_equal(logline_get_format(), LOGLINE_JSON);
    capture_begin();
    f = json_object();
    logline_set_str(f, "topic", "bad\xff\nname\"");
    logline_set_int(f, "rows", 3);
    logline_set_str(f, "level", "forged"); /* reserved: ignored */
    logline_set_str(f, "msg", "forged too");
    logline_event("relay", FERRY_LOG_ERROR, "relay.unknown_topic", f, "%d rows", 3);
    logline("relay", "free text");
    char *js = capture_end();
    logline_set_format(LOGLINE_TEXT);
    char *nl = strchr(js, '\n');
    assert_non_null(nl);
    json_error_t je;
    json_t *o = json_loadb(js, (size_t)(nl - js), 0, &je);
    if (!o) fail_msg("not JSON (%s): %s", je.text, js);
    const char *order[] = {"time", "level", "event", "msg", "topic", "rows"};
    void *it = json_object_iter(o);
    for (size_t i = 0; i < 6; i++, it = json_object_iter_next(o, it))
        if (!it || strcmp(json_object_iter_key(it), order[i]))
            fail_msg("member %zu is not %s: %s", i, order[i], js);
    assert_null(it);
    assert_string_equal(json_string_value(json_object_get(o, "level")), "error");
    assert_string_equal(json_string_value(json_object_get(o, "msg")), "3 rows");
    assert_string_equal(json_string_value(json_object_get(o, "topic")), "bad\xef\xbf\xbd\nname\"");
    json_decref(o);
    o = json_loads(nl + 1, 0, &je);
    if (!o) fail_msg("second line not JSON: %s", nl + 1);
    assert_string_equal(json_string_value(json_object_get(o, "event")), "relay.log");
    assert_string_equal(json_string_value(json_object_get(o, "level")), "info");
    json_decref(o);
    free(js);
}

static void test_long_line_cut(void **state) {
    (void)state;
    size_t n = LOGLINE_MAX + 5000;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = 0;
    logline_set_format(LOGLINE_JSON);
    capture_begin();
    logline_event("worker", FERRY_LOG_INFO, "worker.log", NULL, "%s", big);
    char *js = capture_end();
    logline_set_format(LOGLINE_TEXT);
    json_error_t je;
    json_t *o = json_loads(js, 0, &je);
    if (!o) fail_msg("not JSON (%s)", je.text);
    assert_int_equal(strlen(json_string_value(json_object_get(o, "msg"))), LOGLINE_MAX);
    assert_true(json_is_true(json_object_get(o, "truncated")));
    json_decref(o);
    free(js);
    capture_begin();
    logline("worker", "%s", big);
    char *text = capture_end();
    assert_true(strlen(text) < LOGLINE_MAX + 64);
    assert_non_null(strstr(text, "x...\n"));
    free(text);
    free(big);
}

static int teardown(void **state) {
    (void)state;
    th_tmpdir_remove();
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traceparent),   cmocka_unit_test(test_set_trace),
        cmocka_unit_test(test_mask),          cmocka_unit_test(test_event_text_and_json),
        cmocka_unit_test(test_long_line_cut),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
