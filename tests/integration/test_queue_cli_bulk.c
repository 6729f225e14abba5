/* test_queue_cli_bulk.c - `ferry queue add-bulk`: NDJSON lines from stdin or --file added in
 * batches, ids printed one per line, the job hashes as BullMQ stores them, and the stop at
 * the first bad line (the lines before it added, none after it), run as a real child process
 * against the fixture's Redis. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/cli.h"
#include "support/th.h"

static size_t count_keys(const char *p, const char *q) {
    ferry_conn *c = th_conn();
    redisReply *k = th_cmd(c, "KEYS %s:%s:*", p, q);
    size_t n = k->elements;
    freeReplyObject(k);
    ferry__conn_close(c);
    return n;
}

/* stdout's lines into ids[] (at most cap); returns how many. */
static size_t split_ids(char *out, char ids[][64], size_t cap) {
    size_t n = 0;
    for (char *line = strtok(out, "\n"); line && n < cap; line = strtok(NULL, "\n"))
        snprintf(ids[n++], 64, "%s", line);
    return n;
}

static void test_bulk_adds_and_stores_like_add(void **state) {
    (void)state;
    const char *p = th_prefix();
    const char *input = "{\"name\":\"a\",\"data\":{\"n\":1,\"big\":12345678901234567890123}}\n"
                        "\n"
                        "   \t\r\n"
                        "{\"name\":\"b\",\"opts\":{\"attempts\":3,\"delay\":600000}}\n"
                        "{\"data\":[1,2],\"name\":\"c\\u00e9\",\"opts\":{\"jobId\":\"custom-c\"}}\n"
                        "{\"name\":\"d\",\"data\":\"text\",\"opts\":null}"; /* no final \n */
    cli_run r;
    CLI_IN(r, input, "queue", "add-bulk", "bq", "--batch", "2", "--redis", cli_url(), "--prefix",
           p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.err, "");
    char ids[8][64];
    assert_int_equal(split_ids(r.out, ids, 8), 4);
    cli_run_free(&r);
    assert_string_equal(ids[2], "custom-c");
    cli_expect_field(p, "bq", ids[0], "name", "a");
    /* data kept as written: every digit of the big number */
    cli_expect_field(p, "bq", ids[0], "data", "{\"n\":1,\"big\":12345678901234567890123}");
    cli_expect_field(p, "bq", ids[0], "opts", "{\"attempts\":0}");
    cli_expect_field(p, "bq", ids[1], "name", "b");
    cli_expect_field(p, "bq", ids[1], "data", "{}");
    cli_expect_field(p, "bq", ids[1], "opts", "{\"attempts\":3,\"delay\":600000}");
    cli_expect_field(p, "bq", ids[1], "delay", "600000");
    cli_expect_field(p, "bq", ids[2], "name", "c\xc3\xa9");
    cli_expect_field(p, "bq", ids[2], "data", "[1,2]");
    cli_expect_field(p, "bq", ids[2], "opts", "{\"attempts\":0,\"jobId\":\"custom-c\"}");
    cli_expect_field(p, "bq", ids[3], "data", "\"text\"");
    assert_int_equal(cli_llen(p, "bq", "wait"), 3);
    /* same as queue add writes: meta of the queue */
    cli_expect_field(p, "bq", "meta", "version", "bullmq:" FERRY_BULLMQ_VERSION);

    /* --file, and the same id again adds nothing (BullMQ duplicate rule), printing it */
    char path[256];
    snprintf(path, sizeof path, "%s/bulk.ndjson", th_tmpdir());
    th_write_file(path, "{\"name\":\"again\",\"opts\":{\"jobId\":\"custom-c\"}}\n", 0600);
    CLI(r, "queue", "add-bulk", "bq", "--file", path, "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "custom-c\n");
    cli_run_free(&r);
    cli_expect_field(p, "bq", "custom-c", "name", "c\xc3\xa9");
    CLI(r, "queue", "add-bulk", "bq", "--file", "/nonexistent/x", "--redis", cli_url(), "--prefix",
        p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--file: cannot open /nonexistent/x"));
    cli_run_free(&r);
}

/* The stop at line N: lines 1..N-1 added and printed, nothing from N on. */
static void test_bulk_stops_at_bad_line(void **state) {
    (void)state;
    const char *p = th_prefix();
    static const struct {
        const char *bad, *want;
    } cases[] = {
        {"not json", "line 4: not JSON"},
        {"[1,2]", "line 4: not a JSON object"},
        {"{\"data\":{}}", "line 4: missing \"name\""},
        {"{\"name\":\"x\",\"dat\":{}}", "line 4: unknown key \"dat\" (did you mean \"data\"?)"},
        {"{\"name\":\"x\",\"name\":\"y\"}", "line 4: key \"name\" given twice"},
        {"{\"name\":\"x\",\"opts\":{\"atempts\":1}}",
         "line 4: unknown job option \"atempts\" (did you mean \"attempts\"?)"},
        {"{\"name\":\"x\",\"opts\":{\"priority\":-1}}", "line 4: opts.priority"},
        {"{\"name\":\"x\",\"opts\":[1]}", "line 4: \"opts\" must be a JSON object"},
        {"{\"name\":\"\"}", "line 4: \"name\" must be a non-empty string"},
        {"{\"name\":\"x\",\"data\":\"0123456789012345678901234567890123456789\"}",
         "line 4: \"data\" is 42 bytes, over the payload limit of 32"},
        {"{\"name\":\"x\\u0000y\"}", "line 4: \"name\" must be a non-empty string without NUL"},
        {"{\"name\":\"q\\n\",\"k\\u001b\":1}", "line 4: unknown key \"k\\x1b\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char queue[32], input[512];
        snprintf(queue, sizeof queue, "stop%zu", i);
        snprintf(input, sizeof input,
                 "{\"name\":\"one\"}\n{\"name\":\"two\"}\n\n%s\n{\"name\":\"after\"}\n",
                 cases[i].bad);
        cli_run r;
        /* batch 1: line 1 is sent before line 2 is read; line 2 waits in no batch */
        CLI_IN(r, input, "queue", "add-bulk", queue, "--batch", i % 2 ? "1" : "100",
               "--max-payload", "32", "--redis", cli_url(), "--prefix", p);
        CLI_EXPECT(r, 2);
        if (cli_lines(r.err) != 1 || !strstr(r.err, cases[i].want) ||
            strncmp(r.err, "ferry queue add-bulk: line 4: ", 30))
            fail_msg("case %zu: stderr %s", i, r.err);
        char ids[4][64];
        assert_int_equal(split_ids(r.out, ids, 4), 2);
        cli_run_free(&r);
        cli_expect_field(p, queue, ids[0], "name", "one");
        cli_expect_field(p, queue, ids[1], "name", "two");
        assert_int_equal(cli_llen(p, queue, "wait"), 2);
    }
    /* a line over the limit is refused without being read whole */
    size_t big = 32 + 72 * 1024 + 100;
    char *input = malloc(big + 64);
    assert_non_null(input);
    int at = snprintf(input, 64, "{\"name\":\"ok\"}\n{\"name\":\"x\",\"data\":\"");
    memset(input + at, 'a', big);
    strcpy(input + at + big, "\"}\n");
    cli_run r;
    CLI_IN(r, input, "queue", "add-bulk", "toolong", "--max-payload", "32", "--redis", cli_url(),
           "--prefix", p);
    free(input);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "line 2: longer than"));
    assert_int_equal(cli_lines(r.out), 1);
    cli_run_free(&r);
    assert_int_equal(cli_llen(p, "toolong", "wait"), 1);
    /* nothing at all before a bad first line: no key */
    CLI_IN(r, "{\"nme\":\"x\"}\n", "queue", "add-bulk", "firstbad", "--redis", cli_url(),
           "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "line 1: unknown key \"nme\" (did you mean \"name\"?)"));
    cli_run_free(&r);
    assert_int_equal(count_keys(p, "firstbad"), 0);
    /* empty input: nothing added, exit 0 */
    CLI_IN(r, "", "queue", "add-bulk", "empty", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_string_equal(r.out, "");
    cli_run_free(&r);
    assert_int_equal(count_keys(p, "empty"), 0);
}

/* More lines than one batch: every id printed in order, every job there. */
static void test_bulk_many_batches(void **state) {
    (void)state;
    const char *p = th_prefix();
    size_t n = 1234;
    char *input = malloc(n * 48);
    assert_non_null(input);
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(input + at, "{\"name\":\"j\",\"data\":{\"i\":%zu}}\n", i);
    cli_run r;
    CLI_IN(r, input, "queue", "add-bulk", "many", "--redis", cli_url(), "--prefix", p);
    free(input);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), (int)n);
    cli_run_free(&r);
    assert_int_equal(cli_llen(p, "many", "wait"), (long long)n);
    cli_expect_field(p, "many", "1234", "data", "{\"i\":1233}");
}

/* The warnings queue add gives, with the line number. */
static void test_bulk_warns_backoff(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI_IN(r, "{\"name\":\"a\"}\n{\"name\":\"b\",\"opts\":{\"backoff\":{\"type\":\"capped\"}}}\n",
           "queue", "add-bulk", "warn", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 0);
    assert_int_equal(cli_lines(r.out), 2);
    assert_non_null(strstr(r.err, "ferry queue add-bulk: warning: line 2: backoff type "
                                  "\"capped\" is implemented only by ferry workers"));
    cli_run_free(&r);
}

/* add-bulk with its stdin on a FIFO the test writes to; returns the pid, *w the write end. */
static pid_t start_on_fifo(const char *p, const char *q, int *w, char *out_path, char *err_path) {
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/bulk.fifo", th_tmpdir());
    unlink(fifo);
    if (mkfifo(fifo, 0600) != 0) fail_msg("mkfifo: %s", strerror(errno));
    snprintf(out_path, 256, "%s/bulk.out", th_tmpdir());
    snprintf(err_path, 256, "%s/bulk.err", th_tmpdir());
    /* posix_spawn returns once the child has exec'd, and the child's open of a FIFO waits
     * for a writer: open both ends here first (a non-blocking reader lets the writer open),
     * so neither side waits for the other. */
    int r = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    *w = r < 0 ? -1 : open(fifo, O_WRONLY | O_CLOEXEC); /* not inherited by the child */
    if (*w < 0) fail_msg("open fifo: %s", strerror(errno));
    pid_t pid = cli_start(CLI_ARGV("queue", "add-bulk", q, "--redis", cli_url(), "--prefix", p),
                          NULL, fifo, out_path, err_path);
    close(r);
    return pid;
}

typedef struct wait_len {
    const char *p, *q;
    long long want;
} wait_len;

static int has_len(void *arg) {
    wait_len *w = arg;
    return cli_llen(w->p, w->q, "wait") == w->want;
}

/* A producer that writes slowly: each line is added once nothing more is ready, not when a
 * batch of 500 is full or at the end of the input (tail -f | ferry queue add-bulk). */
static void test_bulk_slow_producer(void **state) {
    (void)state;
    const char *p = th_prefix();
    char out[256], err[256];
    int w;
    pid_t pid = start_on_fifo(p, "slow", &w, out, err);
    const char *two = "{\"name\":\"a\"}\n{\"name\":\"b\"}\n";
    assert_int_equal(write(w, two, strlen(two)), (ssize_t)strlen(two));
    wait_len wl = {p, "slow", 2};
    if (!th_wait_until(has_len, &wl, 10000))
        fail_msg("2 lines written, %lld jobs added while the input stays open",
                 cli_llen(p, "slow", "wait"));
    const char *third = "{\"name\":\"c\"}\n";
    assert_int_equal(write(w, third, strlen(third)), (ssize_t)strlen(third));
    close(w);
    assert_int_equal(cli_wait(pid, 20000), 0);
    assert_int_equal(cli_llen(p, "slow", "wait"), 3);
    char *ids = th_slurp(out);
    assert_int_equal(cli_lines(ids), 3);
    free(ids);
}

/* SIGTERM while reading: the complete lines read so far are added (ids printed), the
 * partial line is not, exit 128 + 15, saying so. */
static void test_bulk_stop_signal_adds_lines_read(void **state) {
    (void)state;
    const char *p = th_prefix();
    char out[256], err[256];
    int w;
    pid_t pid = start_on_fifo(p, "stop", &w, out, err);
    const char *text = "{\"name\":\"a\"}\n{\"name\":\"b\"}\n{\"name\":\"part";
    assert_int_equal(write(w, text, strlen(text)), (ssize_t)strlen(text));
    wait_len wl = {p, "stop", 2};
    assert_true(th_wait_until(has_len, &wl, 10000));
    assert_int_equal(kill(pid, SIGTERM), 0);
    assert_int_equal(cli_wait(pid, 20000), 128 + SIGTERM);
    close(w);
    assert_int_equal(cli_llen(p, "stop", "wait"), 2);
    char *ids = th_slurp(out), *e = th_slurp(err);
    assert_int_equal(cli_lines(ids), 2);
    if (!strstr(e, "stopped by signal 15 after line 2")) fail_msg("stderr: %s", e);
    free(ids);
    free(e);
}

/* A directory as input is bad input (exit 2), by --file and as standard input. */
static void test_bulk_directory_input(void **state) {
    (void)state;
    const char *p = th_prefix();
    cli_run r;
    CLI(r, "queue", "add-bulk", "dir", "--file", "/tmp", "--redis", cli_url(), "--prefix", p);
    CLI_EXPECT(r, 2);
    assert_non_null(strstr(r.err, "--file: /tmp is a directory"));
    cli_run_free(&r);
    char out[256], err[256];
    snprintf(out, sizeof out, "%s/dir.out", th_tmpdir());
    snprintf(err, sizeof err, "%s/dir.err", th_tmpdir());
    pid_t pid = cli_start(CLI_ARGV("queue", "add-bulk", "dir", "--redis", cli_url(), "--prefix", p),
                          NULL, "/tmp", out, err);
    assert_int_equal(cli_wait(pid, 20000), 2);
    pid = cli_start(CLI_ARGV("queue", "add", "dir", "n", "-", "--redis", cli_url(), "--prefix", p),
                    NULL, "/tmp", out, err);
    assert_int_equal(cli_wait(pid, 20000), 2);
    char *e = th_slurp(err);
    assert_non_null(strstr(e, "standard input is a directory"));
    free(e);
    assert_int_equal(count_keys(p, "dir"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bulk_adds_and_stores_like_add),
        cmocka_unit_test(test_bulk_stops_at_bad_line),
        cmocka_unit_test(test_bulk_many_batches),
        cmocka_unit_test(test_bulk_warns_backoff),
        cmocka_unit_test(test_bulk_slow_producer),
        cmocka_unit_test(test_bulk_stop_signal_adds_lines_read),
        cmocka_unit_test(test_bulk_directory_input),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
