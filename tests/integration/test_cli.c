/* test_cli.c - the `ferry` CLI's producer and inspection commands (queue add/counts/pause/
 * resume, job show/remove), its help and its argument errors, run as a real child process
 * against the fixture's Redis. The exec worker has its own file (test_cli_worker.c). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/th.h"

/* Parse stdout as one JSON object; fails the test otherwise. Caller json_decref()s. */
static json_t *out_json(const cli_run *r) {
    json_error_t je;
    json_t *v = json_loads(r->out, 0, &je);
    if (!v) fail_msg("stdout is not JSON (%s): %s", je.text, r->out);
    return v;
}

static long long jint(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) fail_msg("key %s is not an integer", k);
    return json_integer_value(v);
}

static const char *jstr(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("key %s is not a string", k);
    return json_string_value(v);
}

/* stdout without its trailing newline, copied into buf. */
static const char *line1(const cli_run *r, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", r->out);
    buf[strcspn(buf, "\n")] = 0;
    return buf;
}

/* `ferry job show Q ID --json` under prefix p, exit 0: its JSON. Caller json_decref()s. */
static json_t *show_json(const char *q, const char *id, const char *p) {
    cli_run r;
    CLI(r, "job", "show", q, id, "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    cli_run_free(&r);
    return j;
}

/* Field `field` of job `id` of queue `q` (prefix p) as stored in Redis is `want`. */
static void expect_stored(const char *p, const char *q, const char *id, const char *field,
                          const char *want) {
    ferry_conn *c = th_conn();
    redisReply *rep = th_cmd(c, "HGET %s:%s:%s %s", p, q, id, field);
    if (rep->type != REDIS_REPLY_STRING || strcmp(rep->str, want))
        fail_msg("%s of job %s: want %s, got %s", field, id, want,
                 rep->type == REDIS_REPLY_STRING ? rep->str : "(none)");
    freeReplyObject(rep);
    ferry__conn_close(c);
}

/* A usage error: exit 2, nothing on stdout, exactly one line on stderr containing `want`. */
static void expect_usage_error(cli_run *r, const char *want) {
    CLI_EXPECT(*r, 2);
    assert_string_equal(r->out, "");
    if (cli_lines(r->err) != 1 || !strstr(r->err, want))
        fail_msg("stderr should be one line containing '%s', got: %s", want, r->err);
    /* (the worker's and relay's lines, usage errors included, start with a timestamp) */
    if (strncmp(cli_skip_timestamp(r->err), "ferry", 5) != 0)
        fail_msg("stderr should start with [<time> ]ferry, got: %s", r->err);
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_help_and_version(void **state) {
    (void)state;
    const char *cmds[][2] = {{"queue", "add"},    {"queue", "counts"}, {"queue", "pause"},
                             {"queue", "resume"}, {"job", "show"},     {"job", "remove"},
                             {"worker", NULL},    {"bench", NULL}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_run r;
        char want[64];
        if (cmds[i][1]) {
            CLI(r, cmds[i][0], cmds[i][1], "--help");
            snprintf(want, sizeof want, "Usage: ferry %s %s", cmds[i][0], cmds[i][1]);
        } else {
            CLI(r, cmds[i][0], "--help");
            snprintf(want, sizeof want, "Usage: ferry %s", cmds[i][0]);
        }
        CLI_EXPECT(r, 0);
        if (strncmp(r.out, want, strlen(want)) != 0) fail_msg("help starts: %.80s", r.out);
        assert_non_null(strstr(r.out, "--redis URL"));
        assert_string_equal(r.err, "");
        cli_run_free(&r);
    }
    cli_run r;
    CLI(r, "worker", "--help");
    assert_non_null(strstr(r.out, "--job-timeout MS"));
    assert_non_null(strstr(r.out, "--command-timeout MS"));
    assert_non_null(strstr(r.out, "65"));
    cli_run_free(&r);
    CLI(r, "--version");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, FERRY_VERSION_STRING));
    /* the build it is (bench/run.sh refuses debug and sanitizer builds by this line) */
    assert_non_null(strstr(r.out, "\nbuild: "));
    cli_run_free(&r);
    CLI(r, "help");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "queue add"));
    cli_run_free(&r);
    CLI(r, "help", "job", "show");
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "Usage: ferry job show"));
    cli_run_free(&r);
}

static void test_add_show_round_trip(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "mail", "welcome", "{\"to\":\"a@example.com\",\"n\":0.1}", "--redis",
        cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char id[64];
    line1(&r, id, sizeof id);
    assert_true(id[0] != 0);
    cli_run_free(&r);

    CLI(r, "job", "show", "mail", id, "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_string_equal(jstr(j, "id"), id);
    assert_string_equal(jstr(j, "name"), "welcome");
    assert_string_equal(jstr(j, "state"), "waiting");
    json_t *data = json_object_get(j, "data");
    assert_true(json_is_object(data));
    assert_string_equal(json_string_value(json_object_get(data, "to")), "a@example.com");
    assert_true(json_is_object(json_object_get(j, "opts")));
    assert_int_equal(jint(j, "attemptsMade"), 0);
    assert_true(jint(j, "timestamp") > 1600000000000LL);
    assert_true(json_is_null(json_object_get(j, "returnvalue")));
    assert_true(json_is_null(json_object_get(j, "finishedOn")));
    /* every documented key is present */
    const char *keys[] = {
        "id",          "name",         "data",       "opts",         "state",
        "returnvalue", "failedReason", "stacktrace", "attemptsMade", "attemptsStarted",
        "timestamp",   "processedOn",  "finishedOn", "delay",        "priority",
        "processedBy"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!json_object_get(j, keys[i])) fail_msg("job show --json lacks %s", keys[i]);
    /* numbers come out exactly as stored (spliced, not re-encoded) */
    assert_non_null(strstr(r.out, "\"n\":0.1"));
    json_decref(j);
    cli_run_free(&r);

    expect_stored(p, "mail", id, "name", "welcome"); /* the stored hash agrees */

    /* human output */
    CLI(r, "job", "show", "mail", id, "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "welcome"));
    assert_non_null(strstr(r.out, "waiting"));
    cli_run_free(&r);
}

/* Fields that are not UTF-8 (written by another client: Redis stores any bytes) still give
 * valid JSON from job show --json: such bytes come out as U+FFFD. */
static void test_show_json_with_invalid_utf8(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "bytes", "n", "{}", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char id[64];
    line1(&r, id, sizeof id);
    cli_run_free(&r);
    ferry_conn *c = th_conn();
    freeReplyObject(
        th_cmd(c, "HSET %s:bytes:%s failedReason %b", p, id, "bad \xff\xc3( end", (size_t)11));
    ferry__conn_close(c);
    CLI(r, "job", "show", "bytes", id, "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_string_equal(jstr(j, "failedReason"), "bad \xef\xbf\xbd\xef\xbf\xbd( end");
    json_decref(j);
    cli_run_free(&r);
}

/* No byte of stdout is a control character other than the line ends, a C1 control, or
 * outside valid UTF-8 as far as these tests write it (ESC, raw \xc2\x9b, \xe0\x80\x8a). */
static void expect_no_raw_codes(const char *what, const char *out) {
    for (const unsigned char *b = (const unsigned char *)out; *b; b++)
        if ((*b < 0x20 && *b != '\n') || *b == 0x7f || (b[0] == 0xc2 && b[1] == 0x9b) ||
            b[0] == 0xe0)
            fail_msg("%s: raw byte 0x%02x at offset %zu in: %s", what, *b,
                     (size_t)((const char *)b - out), out);
}

/* `job show` (text form) escapes user text: an id or name with a line break or terminal
 * codes, a failedReason with colours, stored JSON with a raw line break or a C1 control
 * cannot forge lines or reach the terminal. --json stays exact. */
static void test_show_text_escapes(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "esc", "na\nme\x1b[2J", "{}", "--job-id", "id\nFAKE", "--redis",
        cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    ferry_conn *c = th_conn();
    freeReplyObject(th_cmd(c, "HSET %s:esc:id\nFAKE failedReason %s returnvalue %s data %s",
                           p, "\033[31mred\\x", "\"\xc2\x9b" "2J\"", "{\"a\":\n\"b\\\\c\"}"));
    freeReplyObject(th_cmd(c, "HSET %s:esc:id\nFAKE stacktrace %b", p, "[\"\xe0\x80\x8a\"]",
                           (size_t)7));
    ferry__conn_close(c);

    CLI(r, "job", "show", "esc", "id\nFAKE", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    expect_no_raw_codes("job show", r.out);
    if (cli_lines(r.out) != 18) fail_msg("job show: want 18 lines, got: %s", r.out);
    const char *want[] = {
        "\nid               id\\nFAKE\n",
        "\nname             na\\nme\\x1b[2J\n",
        "\nfailedReason     \\x1b[31mred\\\\x\n",
        "\nreturnvalue      \"\\u009b2J\"\n",
        "\ndata             {\"a\":\\n\"b\\\\\\\\c\"}\n",
        "\nstacktrace       [\"\\xe0\\x80\\x8a\"]\n",
        "\nopts             {\"", /* clean JSON: as stored */
    };
    char buf[4096];
    snprintf(buf, sizeof buf, "\n%s", r.out); /* so the first line matches "\nid" too */
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(buf, want[i])) fail_msg("job show: want '%s' in: %s", want[i], r.out);
    cli_run_free(&r);

    json_t *j = show_json("esc", "id\nFAKE", p);
    assert_string_equal(jstr(j, "id"), "id\nFAKE");
    assert_string_equal(jstr(j, "name"), "na\nme\x1b[2J");
    assert_string_equal(jstr(j, "failedReason"), "\033[31mred\\x");
    json_decref(j);
}

/* `scheduler upsert` prints the first job's id (repeat:ID:MS) escaped; --json exact. */
static void test_scheduler_upsert_escapes(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "scheduler", "upsert", "esc", "s\x1b[2J\nx", "--every", "60000", "--redis", cli_url(),
        "--prefix", p);
    CLI_EXPECT(r, 0);
    expect_no_raw_codes("scheduler upsert", r.out);
    const char *want = "repeat:s\\x1b[2J\\nx:";
    if (cli_lines(r.out) != 1 || strncmp(r.out, want, strlen(want)) != 0)
        fail_msg("scheduler upsert: want one escaped line, got: %s", r.out);
    cli_run_free(&r);
    CLI(r, "scheduler", "upsert", "esc", "s\x1b[2J\nx", "--every", "60000", "--json", "--redis",
        cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_string_equal(jstr(j, "id"), "s\x1b[2J\nx");
    const char *raw = "repeat:s\x1b[2J\nx:";
    assert_int_equal(strncmp(jstr(j, "jobId"), raw, strlen(raw)), 0);
    json_decref(j);
    cli_run_free(&r);
}

/* JSON that JSON.parse takes but jansson does not (an integer past 64 bits, \u0000, a lone
 * surrogate escape) is job data like any other: added, stored and shown as JSON. */
static void test_add_show_wide_json(void **state) {
    (void)state;
    const char *p = th_prefix();
    const char *data = "{\"n\":100000000000000000000,\"s\":\"a\\u0000b\",\"l\":\"\\ud800\"}";
    cli_run r;
    CLI(r, "queue", "add", "wide", "n", data, "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char id[64];
    line1(&r, id, sizeof id);
    cli_run_free(&r);
    expect_stored(p, "wide", id, "data", data);
    CLI(r, "job", "show", "wide", id, "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char want[256];
    snprintf(want, sizeof want, "\"data\":%s,", data);
    if (!strstr(r.out, want)) fail_msg("want %s in: %s", want, r.out);
    cli_run_free(&r);
    /* still refused: what is not JSON, with where */
    CLI(r, "queue", "add", "wide", "n", "{\"a\":\n 1x}", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "DATA: invalid JSON at line 2 column 3");
    cli_run_free(&r);
}

static void test_add_from_stdin_and_env(void **state) {
    (void)state;
    const char *p = th_prefix();
    char env_url[1100], env_prefix[128];
    snprintf(env_url, sizeof env_url, "REDIS_URL=%s", cli_url());
    snprintf(env_prefix, sizeof env_prefix, "FERRY_PREFIX=%s", p);
    cli_run r;
    /* connection from REDIS_URL / FERRY_PREFIX, data from stdin */
    cli_exec_env(&r, "{\"from\":\"stdin\"}\n", CLI_ARGV(env_url, env_prefix),
                 CLI_ARGV("queue", "add", "q", "piped", "-"));
    CLI_EXPECT(r, 0);
    char id[64];
    line1(&r, id, sizeof id);
    cli_run_free(&r);
    expect_stored(p, "q", id, "data", "{\"from\":\"stdin\"}");

    /* over the payload limit: clear error, nothing added */
    CLI_IN(r, "{\"x\":\"0123456789\"}", "queue", "add", "q", "big", "-", "--max-payload", "10",
           "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "payload limit");
    cli_run_free(&r);
    /* empty (or blank) stdin says so */
    CLI_IN(r, " \n", "queue", "add", "q", "blank", "-", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "DATA: standard input is empty (expected JSON)");
    cli_run_free(&r);
}

/* A backoff type nothing builds in is added as Node adds it, with a warning: only a worker
 * registering that strategy would retry the job (a typo would silently remove retries). */
static void test_add_warns_unknown_backoff(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "q", "n", "--opts",
        "{\"attempts\":2,\"backoff\":{\"type\":\"exponentail\",\"delay\":100}}", "--redis",
        cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_true(r.out[0] != 0); /* the id */
    assert_string_equal(r.err, "ferry queue add: warning: backoff type \"exponentail\" is not "
                               "built in (fixed, exponential, capped): only a worker with a "
                               "custom strategy of that name retries this job\n");
    cli_run_free(&r);
    /* capped is ferry's own: added, with a warning that Node workers fail such a job */
    CLI(r, "queue", "add", "q", "n", "--opts", "{\"attempts\":2,\"backoff\":{\"type\":\"capped\"}}",
        "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_true(r.out[0] != 0);
    assert_string_equal(r.err, "ferry queue add: warning: backoff type \"capped\" is implemented "
                               "only by ferry workers: a Node BullMQ worker fails this job "
                               "(\"Unknown backoff strategy capped\") and leaves it active until "
                               "it stalls\n");
    cli_run_free(&r);
    const char *quiet[] = {"{\"attempts\":2,\"backoff\":{\"type\":\"exponential\",\"delay\":1}}",
                           "{\"attempts\":2,\"backoff\":{\"type\":\"fixed\"}}",
                           "{\"attempts\":2,\"backoff\":100}", "{}"};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        CLI(r, "queue", "add", "q", "n", "--opts", quiet[i], "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        assert_string_equal(r.err, "");
        cli_run_free(&r);
    }
}

static void test_opts_stored(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "q", "retrying", "{}", "--opts",
        "{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":1000},\"delay\":60000}",
        "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    char id[64];
    line1(&r, id, sizeof id);
    cli_run_free(&r);
    json_t *j = show_json("q", id, p);
    assert_string_equal(jstr(j, "state"), "delayed");
    assert_int_equal(jint(j, "delay"), 60000);
    json_t *opts = json_object_get(j, "opts");
    assert_int_equal(json_integer_value(json_object_get(opts, "attempts")), 3);
    json_t *bo = json_object_get(opts, "backoff");
    assert_string_equal(json_string_value(json_object_get(bo, "type")), "exponential");
    assert_int_equal(json_integer_value(json_object_get(bo, "delay")), 1000);
    json_decref(j);

    CLI(r, "queue", "add", "q", "urgent", "--opts", "{\"priority\":5}", "--redis", cli_url(),
        "--prefix", p);
    CLI_EXPECT(r, 0);
    line1(&r, id, sizeof id);
    cli_run_free(&r);
    j = show_json("q", id, p);
    assert_string_equal(jstr(j, "state"), "prioritized");
    assert_int_equal(jint(j, "priority"), 5);
    json_decref(j);

    /* bad option value: the library's EINVAL is a usage error */
    CLI(r, "queue", "add", "q", "x", "--opts", "{\"attempts\":\"many\"}", "--redis", cli_url(),
        "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_int_equal(cli_lines(r.err), 1);
    cli_run_free(&r);
}

static void test_duplicate_job_id(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "q", "once", "{\"v\":1}", "--job-id", "order-42", "--redis", cli_url(),
        "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "order-42\n");
    cli_run_free(&r);
    /* --job-id overrides opts.jobId */
    CLI(r, "queue", "add", "q", "once", "{\"v\":2}", "--opts", "{\"jobId\":\"other\"}", "--job-id",
        "order-42", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "order-42\n");
    cli_run_free(&r);
    CLI(r, "queue", "counts", "q", "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_int_equal(jint(j, "waiting"), 1);
    json_decref(j);
    cli_run_free(&r);
    expect_stored(p, "q", "order-42", "data", "{\"v\":1}"); /* the first add won */
}

static void test_counts_json(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    for (int i = 0; i < 3; i++) {
        CLI(r, "queue", "add", "c", "n", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        cli_run_free(&r);
    }
    CLI(r, "queue", "add", "c", "later", "--opts", "{\"delay\":600000}", "--redis", cli_url(),
        "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "queue", "counts", "c", "--json", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_int_equal(json_object_size(j), 10);
    assert_true(json_is_true(json_object_get(j, "exists")));
    assert_true(json_is_false(json_object_get(j, "isPaused")));
    assert_int_equal(jint(j, "waiting"), 3);
    assert_int_equal(jint(j, "delayed"), 1);
    const char *zero[] = {"active",      "completed",        "failed",
                          "prioritized", "waiting-children", "paused"};
    for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
        assert_int_equal(jint(j, zero[i]), 0);
    json_decref(j);
    cli_run_free(&r);
    CLI(r, "queue", "counts", "c", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "waiting"));
    cli_run_free(&r);
}

static long long meta_paused(const char *p, const char *q) {
    ferry_conn *c = th_conn();
    redisReply *rep = th_cmd(c, "HEXISTS %s:%s:meta paused", p, q);
    long long v = rep->integer;
    freeReplyObject(rep);
    ferry__conn_close(c);
    return v;
}

static void test_pause_resume(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add", "pq", "n", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "queue", "pause", "pq", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    assert_int_equal(meta_paused(p, "pq"), 1);
    CLI(r, "queue", "counts", "pq", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "queue pq: PAUSED"));
    cli_run_free(&r);
    CLI(r, "queue", "resume", "pq", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    assert_int_equal(meta_paused(p, "pq"), 0);
    CLI(r, "queue", "counts", "pq", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_non_null(strstr(r.out, "queue pq: not paused"));
    assert_null(strstr(r.out, "PAUSED"));
    cli_run_free(&r);
}

static void test_job_missing_and_remove(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "job", "show", "q", "nope", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 1);
    assert_string_equal(r.err, "ferry job show: job nope not found in queue q\n");
    cli_run_free(&r);
    CLI(r, "queue", "add", "q", "n", "--job-id", "gone", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "job", "remove", "q", "gone", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    CLI(r, "job", "show", "q", "gone", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 1);
    cli_run_free(&r);
    CLI(r, "job", "remove", "q", "gone", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "not found"));
    cli_run_free(&r);
}

/* `--` ends the options, so an id, a name or DATA that starts with '-' can be given after
 * it, wherever the positionals stand; a negative number is a positional without it. */
static void test_dash_positionals(void **state) {
    (void)state;
    const char *p = th_prefix();
    char buf[64];
    cli_run r;
    CLI(r, "queue", "add", "q", "n", "--job-id", "-abc", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(line1(&r, buf, sizeof buf), "-abc");
    cli_run_free(&r);
    CLI(r, "job", "show", "q", "--json", "--redis", cli_url(), "--prefix", p, "--", "-abc");
    CLI_EXPECT(r, 0);
    json_t *j = out_json(&r);
    assert_string_equal(jstr(j, "id"), "-abc");
    json_decref(j);
    cli_run_free(&r);
    CLI(r, "job", "show", "q", "-abc", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "unknown option -abc");
    cli_run_free(&r);
    CLI(r, "job", "remove", "--redis", cli_url(), "--prefix", p, "--", "q", "-abc");
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    /* name and DATA after `--`; a negative number as DATA without it */
    CLI(r, "queue", "add", "q", "--redis", cli_url(), "--prefix", p, "--", "-name", "-1.5");
    CLI_EXPECT(r, 0);
    line1(&r, buf, sizeof buf);
    cli_run_free(&r);
    j = show_json("q", buf, p);
    assert_string_equal(jstr(j, "name"), "-name");
    assert_true(json_number_value(json_object_get(j, "data")) == -1.5);
    json_decref(j);
    CLI(r, "queue", "add", "q", "neg", "-2e3", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    cli_run_free(&r);
    /* not a number: an unknown option */
    CLI(r, "queue", "add", "q", "neg", "-5abc", "--redis", cli_url(), "--prefix", p);
    expect_usage_error(&r, "unknown option -5abc");
    cli_run_free(&r);
    /* counts are still checked with `--` */
    CLI(r, "job", "show", "q", "--", "1", "2");
    expect_usage_error(&r, "unexpected argument '2'");
    cli_run_free(&r);
    CLI(r, "job", "show", "--", "q");
    expect_usage_error(&r, "missing argument");
    cli_run_free(&r);
}

/* stdout is a command's result: a failed write (a full disk) is exit 1 with a message, not
 * a silent success (the job below is added, but its id would be lost); a failing status is
 * kept. */
static void test_stdout_write_error(void **state) {
    (void)state;
    char err[160];
    snprintf(err, sizeof err, "%s/full.err", th_tmpdir());
    const char *const *argvs[] = {
        CLI_ARGV("queue", "add", "q", "n", "--redis", cli_url(), "--prefix", th_prefix()),
        CLI_ARGV("--version"),
        /* its status is its verdict (119 throttled), kept; the delay line is what is lost */
        CLI_ARGV("http-outcome", "429", "60"),
    };
    const int want[] = {1, 1, 119};
    for (size_t i = 0; i < sizeof argvs / sizeof argvs[0]; i++) {
        int code = cli_wait(cli_start(argvs[i], NULL, NULL, "/dev/full", err), 60000);
        char *e = th_slurp(err);
        if (code != want[i] || !strstr(e, "ferry: error writing standard output: "))
            fail_msg("%s: exit %d, stderr: %s", argvs[i][0], code, e);
        if (i < 2 && !strstr(e, "No space left on device")) fail_msg("stderr: %s", e);
        free(e);
    }
}

/* Looking at (or obliterating) a queue that does not exist creates no key: those
 * subcommands open the queue without writing its meta (BullMQ's skipMetasUpdate), where
 * adding a job writes it as Node's Queue does. */
static void test_read_only_leaves_no_key(void **state) {
    (void)state;
    const char *p = th_prefix();
    const char *cmds[][4] = {
        {"queue", "counts", "ghost", NULL},
        {"job", "show", "ghost", "1"}, /* exit 1: not found, after opening the queue */
        {"queue", "concurrency", "ghost", NULL},
        {"queue", "rate-limit", "ghost", "--show"},
        {"queue", "global-rate-limit", "ghost", NULL},
        {"scheduler", "list", "ghost", NULL},
        {"queue", "obliterate", "ghost", "--yes"},
    };
    const int want_code[] = {0, 1, 0, 0, 0, 0, 0};
    ferry_conn *c = th_conn();
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        cli_run r;
        if (cmds[i][3])
            CLI(r, cmds[i][0], cmds[i][1], cmds[i][2], cmds[i][3], "--redis", cli_url(), "--prefix",
                p);
        else
            CLI(r, cmds[i][0], cmds[i][1], cmds[i][2], "--redis", cli_url(), "--prefix", p);
        if (r.code != want_code[i])
            fail_msg("%s %s: exit %d, want %d: %s", cmds[i][0], cmds[i][1], r.code, want_code[i],
                     r.err);
        if (i == 1 && !strstr(r.err, "not found")) fail_msg("job show: %s", r.err);
        if (i == sizeof cmds / sizeof cmds[0] - 1)
            assert_non_null(strstr(r.out, "obliterated, 0 keys deleted"));
        cli_run_free(&r);
        redisReply *k = th_cmd(c, "KEYS %s:ghost:*", p);
        if (k->elements != 0) fail_msg("%s %s left %s", cmds[i][0], cmds[i][1], k->element[0]->str);
        freeReplyObject(k);
    }
    /* the writing forms write meta, as Node's Queue constructor does */
    const char *queues[] = {"ghost", "ghost2"};
    for (int i = 0; i < 2; i++) {
        cli_run r;
        if (i == 0)
            CLI(r, "queue", "add", "ghost", "n", "--redis", cli_url(), "--prefix", p);
        else
            CLI(r, "queue", "concurrency", "ghost2", "3", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 0);
        cli_run_free(&r);
        redisReply *v = th_cmd(c, "HGET %s:%s:meta version", p, queues[i]);
        assert_int_equal(v->type, REDIS_REPLY_STRING);
        assert_non_null(strstr(v->str, "bullmq:"));
        freeReplyObject(v);
    }
    ferry__conn_close(c);
}

static void test_usage_errors(void **state) {
    (void)state;
    cli_run r;
    CLI(r, "queue", "add", "q", "n", "{\"a\":", "--redis", cli_url());
    expect_usage_error(&r, "ferry queue add: DATA: invalid JSON at line 1 column");
    cli_run_free(&r);
    CLI(r, "queue", "add", "q", "n", "--opts", "{\"attempts\" 3}", "--redis", cli_url());
    expect_usage_error(&r, "ferry queue add: --opts: invalid JSON at line 1 column");
    cli_run_free(&r);
    CLI(r, "queue", "add", "q", "n", "--opts", "[1]");
    expect_usage_error(&r, "--opts: expected a JSON object");
    cli_run_free(&r);
    CLI(r, "queue", "counts", "q", "--redis", "http://localhost");
    expect_usage_error(&r, "--redis");
    cli_run_free(&r);
    cli_exec_env(&r, NULL, CLI_ARGV("REDIS_URL=redis://host:notaport"),
                 CLI_ARGV("queue", "counts", "q"));
    expect_usage_error(&r, "REDIS_URL");
    cli_run_free(&r);
    CLI(r, "queue", "counts", "q", "--frobnicate");
    expect_usage_error(&r, "unknown option --frobnicate");
    cli_run_free(&r);
    CLI(r, "queue", "add", "q");
    expect_usage_error(&r, "missing argument");
    cli_run_free(&r);
    CLI(r, "job", "show", "q", "1", "extra");
    expect_usage_error(&r, "unexpected argument 'extra'");
    cli_run_free(&r);
    CLI(r, "queue", "counts", "q", "--timeout", "soon");
    expect_usage_error(&r, "--timeout: expected an integer");
    cli_run_free(&r);
    CLI(r, "queue", "counts", "q", "--tls-ca", "/nonexistent/ca.pem");
    expect_usage_error(&r, "--tls-ca");
    cli_run_free(&r);
    char long_prefix[514];
    memset(long_prefix, 'p', 513);
    long_prefix[513] = 0;
    CLI(r, "queue", "counts", "q", "--prefix", long_prefix);
    expect_usage_error(&r, "--prefix: longer than 512 bytes");
    cli_run_free(&r);
    CLI(r, "relay", "--routes", "/dev/null", "--prefix", long_prefix, "--database",
        "postgresql://127.0.0.1:1/x");
    expect_usage_error(&r, "--prefix: longer than 512 bytes");
    cli_run_free(&r);
    CLI(r, "queue", "frob");
    expect_usage_error(&r, "unknown subcommand 'frob'");
    cli_run_free(&r);
    CLI(r, "frob");
    expect_usage_error(&r, "unknown command 'frob'");
    cli_run_free(&r);
    CLI(r, "worker", "q");
    expect_usage_error(&r, "missing command");
    cli_run_free(&r);
    CLI(r, "worker", "q", "--", "/nonexistent/handler");
    expect_usage_error(&r, "/nonexistent/handler");
    cli_run_free(&r);
    /* a directory passes access(X_OK) but cannot be run; nor can an empty name */
    CLI(r, "worker", "q", "--", "/tmp");
    expect_usage_error(&r, "/tmp: command not found or not an executable file");
    cli_run_free(&r);
    CLI(r, "worker", "q", "--", "");
    expect_usage_error(&r, "the command after -- is empty");
    cli_run_free(&r);
    CLI(r, "bench", "--mode", "sideways");
    expect_usage_error(&r, "--mode");
    cli_run_free(&r);
}

static void test_unreachable_redis(void **state) {
    (void)state;
    cli_run r;
    /* port 1 on loopback: connection refused at once; the timeout bounds the worst case */
    CLI(r, "queue", "counts", "q", "--redis", "redis://app:s3cr3t-pw@127.0.0.1:1/0", "--timeout",
        "2000");
    CLI_EXPECT(r, 1);
    assert_int_equal(cli_lines(r.err), 1);
    assert_non_null(strstr(r.err, "127.0.0.1:1"));
    assert_null(strstr(r.err, "s3cr3t"));
    assert_true(r.ms < 20000);
    cli_run_free(&r);
    CLI(r, "queue", "add", "q", "n", "--redis", "redis://127.0.0.1:1", "--timeout", "2000");
    CLI_EXPECT(r, 1);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    /* a unix:// URL's credentials stay out of the message too; the socket path is shown */
    CLI(r, "queue", "counts", "q", "--redis", "unix://app:s3cr3t%40pw@/nonexistent/r.sock",
        "--timeout", "2000");
    CLI_EXPECT(r, 1);
    assert_non_null(strstr(r.err, "/nonexistent/r.sock"));
    assert_null(strstr(r.err, "s3cr3t"));
    assert_null(strstr(r.err, "app:"));
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_add_show_round_trip),
        cmocka_unit_test(test_add_from_stdin_and_env),
        cmocka_unit_test(test_add_warns_unknown_backoff),
        cmocka_unit_test(test_opts_stored),
        cmocka_unit_test(test_duplicate_job_id),
        cmocka_unit_test(test_counts_json),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_job_missing_and_remove),
        cmocka_unit_test(test_read_only_leaves_no_key),
        cmocka_unit_test(test_show_json_with_invalid_utf8),
        cmocka_unit_test(test_add_show_wide_json),
        cmocka_unit_test(test_show_text_escapes),
        cmocka_unit_test(test_scheduler_upsert_escapes),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_dash_positionals),
        cmocka_unit_test(test_stdout_write_error),
        cmocka_unit_test(test_unreachable_redis),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
