/* test_cli_worker_secrets.c - credentials of long-running commands: the Redis URL read from
 * --redis-url-file (worker and a short command; every bad file refused with exit 2 naming
 * the option, never showing the content; exclusive with --redis; used instead of
 * REDIS_URL), and the job commands' environment without ferry's credentials (REDIS_URL,
 * DATABASE_URL, PGPASSWORD, FERRY_*_URL) unless --pass-env keeps one. Real binary, the
 * fixture's Redis. */
#include "support/cli.h"

#define PW "S3cr3t-pw-9d1"

/* The job command writes its environment to $CLITEST_DIR/env-<job id>. */
static const char env_script[] = "#!/bin/sh\n"
                                 "cat > /dev/null\n"
                                 "env > \"$CLITEST_DIR/env-$FERRY_JOB_ID\"\n";

static const char *env_script_path(void) {
    static char path[128];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/env-job.sh", th_tmpdir());
        th_write_file(path, env_script, 0755);
    }
    return path;
}

/* A file in the test's directory holding `text` (mode 0600). Returns its path (static). */
static const char *secret_file(const char *name, const char *text, size_t len) {
    static char path[200];
    snprintf(path, sizeof path, "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    fwrite(text, 1, len, f);
    fclose(f);
    chmod(path, 0600);
    return path;
}

/* Run `ferry worker --max-jobs 1` on q with extra args and env; the job's environment
 * (malloc'd text of `env`). */
static char *job_env_of(const char *p, const char *q, const char *const *args,
                        const char *const *env) {
    char id[64];
    cli_add_job(p, q, "env", "{}", "{}", id, sizeof id);
    char errp[160], outp[160], envp[200];
    snprintf(errp, sizeof errp, "%s/%s.err", th_tmpdir(), q);
    snprintf(outp, sizeof outp, "%s/%s.out", th_tmpdir(), q);
    snprintf(envp, sizeof envp, "%s/env-%s", th_tmpdir(), id);
    const char *argv[32];
    int k = 0;
    argv[k++] = "worker";
    argv[k++] = q;
    argv[k++] = "--prefix";
    argv[k++] = p;
    argv[k++] = "--max-jobs";
    argv[k++] = "1";
    for (int i = 0; args[i]; i++)
        argv[k++] = args[i];
    argv[k++] = "--";
    argv[k++] = env_script_path();
    argv[k] = NULL;
    const char *full_env[16];
    int e = 0;
    static char dirvar[160];
    snprintf(dirvar, sizeof dirvar, "CLITEST_DIR=%s", th_tmpdir());
    full_env[e++] = dirvar;
    for (int i = 0; env && env[i]; i++)
        full_env[e++] = env[i];
    full_env[e] = NULL;
    pid_t pid = cli_start(argv, full_env, NULL, outp, errp);
    int code = cli_wait(pid, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    if (strstr(log, PW)) fail_msg("the password is in the worker's log:\n%s", log);
    free(log);
    cli_expect_state(p, q, id, "completed");
    return th_slurp(envp);
}

/* Does the `env` output have a line starting with "NAME="? */
static int has_var(const char *env, const char *name) {
    size_t n = strlen(name);
    for (const char *line = env; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "")
        if (!strncmp(line, name, n) && line[n] == '=') return 1;
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_url_file_works(void **state) {
    (void)state;
    const char *p = th_prefix();
    char text[300];
    int n = snprintf(text, sizeof text, "%s\n", cli_url());
    char path[200];
    snprintf(path, sizeof path, "%s", secret_file("redis.url", text, (size_t)n));

    /* a short command, REDIS_URL pointing elsewhere: the file is used */
    cli_run r;
    cli_exec_env(
        &r, NULL, CLI_ARGV("REDIS_URL=redis://127.0.0.1:1"),
        CLI_ARGV("queue", "add", "urlfile", "x", "{}", "--redis-url-file", path, "--prefix", p));
    CLI_EXPECT(r, 0);
    assert_string_equal(r.err, "");
    char id[64];
    snprintf(id, sizeof id, "%.*s", (int)strcspn(r.out, "\n"), r.out);
    cli_run_free(&r);
    ferry_conn *c = th_conn();
    redisReply *pos = th_cmd(c, "LPOS %s:urlfile:wait %s", p, id);
    if (pos->type != REDIS_REPLY_INTEGER) fail_msg("job %s is not waiting", id);
    freeReplyObject(pos);
    ferry__conn_close(c);

    /* the worker (CRLF line end, REDIS_URL elsewhere) */
    n = snprintf(text, sizeof text, "%s\r\n", cli_url());
    snprintf(path, sizeof path, "%s", secret_file("redis-crlf.url", text, (size_t)n));
    char *env = job_env_of(p, "urlfile-w", CLI_ARGV("--redis-url-file", path),
                           CLI_ARGV("REDIS_URL=redis://127.0.0.1:1"));
    assert_true(has_var(env, "FERRY_JOB_ID"));
    free(env);
}

static void expect_refused(const char *what, const char *const *argv, const char *err_has) {
    cli_run r;
    cli_exec_env(&r, NULL, NULL, argv);
    if (r.code != 2 || !strstr(r.err, err_has) || cli_lines(r.err) != 1 || strstr(r.err, PW))
        fail_msg("%s: exit %d, stderr '%s' (want 2 and one line with '%s', no password)", what,
                 r.code, r.err, err_has);
    cli_run_free(&r);
}

static void test_bad_url_files_refused(void **state) {
    (void)state;
    static const struct {
        const char *name, *text;
        size_t len;
        const char *err_has;
    } bad[] = {
#define TEXT(s) s, sizeof s - 1
        {"empty.url", TEXT(""), "is empty"},
        {"newline.url", TEXT("\n"), "is empty"},
        {"twolines.url", TEXT("redis://:" PW "@127.0.0.1:6379\nredis://x\n"),
         "holds more than one line"},
        {"nul.url", TEXT("redis://:" PW "\0@127.0.0.1"), "holds a NUL byte"},
        {"cr.url", TEXT("redis://:" PW "\r@127.0.0.1\n"),
         "holds a carriage return inside the value"},
        {"badurl.url", TEXT("redis://:" PW "@127.0.0.1:notaport\n"), "--redis-url-file: redis URL"},
#undef TEXT
    };
    char path[200];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(path, sizeof path, "%s", secret_file(bad[i].name, bad[i].text, bad[i].len));
        char want[300];
        if (!strncmp(bad[i].err_has, "--", 2))
            snprintf(want, sizeof want, "%s", bad[i].err_has);
        else
            snprintf(want, sizeof want, "--redis-url-file: %s %s", path, bad[i].err_has);
        expect_refused(bad[i].name, CLI_ARGV("queue", "counts", "q", "--redis-url-file", path),
                       want);
        expect_refused(bad[i].name,
                       CLI_ARGV("worker", "q", "--redis-url-file", path, "--", "/bin/true"), want);
    }
    /* too big */
    size_t big = 65536 + 1; /* CLI_SECRET_FILE_MAX + 1 */
    char *huge = malloc(big);
    memset(huge, 'x', big);
    snprintf(path, sizeof path, "%s", secret_file("huge.url", huge, big));
    free(huge);
    expect_refused("huge", CLI_ARGV("queue", "counts", "q", "--redis-url-file", path),
                   "is longer than 65536 bytes");
    /* missing, a directory */
    snprintf(path, sizeof path, "%s/missing.url", th_tmpdir());
    expect_refused("missing", CLI_ARGV("queue", "counts", "q", "--redis-url-file", path),
                   "--redis-url-file: cannot open");
    expect_refused("directory", CLI_ARGV("queue", "counts", "q", "--redis-url-file", th_tmpdir()),
                   "is a directory");
    /* with --redis as well */
    snprintf(path, sizeof path, "%s", secret_file("ok.url", "redis://127.0.0.1:1\n", 20));
    expect_refused("both",
                   CLI_ARGV("queue", "counts", "q", "--redis", cli_url(), "--redis-url-file", path),
                   "--redis and --redis-url-file");
    expect_refused(
        "both (worker)",
        CLI_ARGV("worker", "q", "--redis-url-file", path, "--redis", cli_url(), "--", "/bin/true"),
        "--redis and --redis-url-file");
}

/* ---- the commands' environment ---------------------------------------------------------- */

static void test_command_env_lacks_credentials(void **state) {
    (void)state;
    const char *p = th_prefix();
    char redis_url[300];
    snprintf(redis_url, sizeof redis_url, "REDIS_URL=%s", cli_url());
    const char *const env[] = {redis_url,
                               "DATABASE_URL=postgresql://u:" PW "@127.0.0.1/db",
                               "PGPASSWORD=" PW,
                               "FERRY_BENCH_REDIS_URL=redis://:" PW "@127.0.0.1",
                               "PGPASSFILE=/nonexistent/pgpass",
                               "CLITEST_OTHER=kept",
                               NULL};
    /* the worker connects through REDIS_URL, and its command does not see it */
    char *e = job_env_of(p, "envscrub", CLI_ARGV("--log-format", "text"), env);
    if (has_var(e, "REDIS_URL") || has_var(e, "DATABASE_URL") || has_var(e, "PGPASSWORD") ||
        has_var(e, "FERRY_BENCH_REDIS_URL") || strstr(e, PW))
        fail_msg("a credential reached the command:\n%s", e);
    if (!has_var(e, "CLITEST_OTHER") || !has_var(e, "PGPASSFILE") || !has_var(e, "PATH") ||
        !has_var(e, "FERRY_QUEUE"))
        fail_msg("the command lacks a variable it should have:\n%s", e);
    free(e);

    /* --pass-env keeps the named ones only (given both ways, repeated) */
    e = job_env_of(p, "envpass", CLI_ARGV("--pass-env", "PGPASSWORD", "--pass-env=DATABASE_URL"),
                   env);
    if (!has_var(e, "PGPASSWORD") || !has_var(e, "DATABASE_URL"))
        fail_msg("--pass-env did not keep PGPASSWORD and DATABASE_URL:\n%s", e);
    if (has_var(e, "REDIS_URL") || has_var(e, "FERRY_BENCH_REDIS_URL"))
        fail_msg("a credential not passed reached the command:\n%s", e);
    free(e);

    /* a name that is not removed anyway is a mistake (a typo would pass nothing) */
    expect_refused(
        "pass-env typo",
        CLI_ARGV("worker", "q", "--redis", cli_url(), "--pass-env", "REDIS_UR", "--", "/bin/true"),
        "--pass-env: 'REDIS_UR' is not a variable the worker removes");
    /* the value of another option that looks like --pass-env is that option's value */
    expect_refused("pass-env as a value",
                   CLI_ARGV("worker", "q", "--redis", cli_url(), "--log-format", "--pass-env", "--",
                            "/bin/true"),
                   "--log-format: expected text, json or none, got '--pass-env'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_file_works),
        cmocka_unit_test(test_bad_url_files_refused),
        cmocka_unit_test(test_command_env_lacks_credentials),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
