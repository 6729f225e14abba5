/* test_outbox_secrets.c - database passwords never reach the output of the outbox commands,
 * against the real `ferry` binary and the test's PostgreSQL (trust authentication, so a
 * password in a good URL is accepted and ignored) and Redis:
 *  - a table of URLs and conninfo strings whose passwords hold the characters that end or
 *    break a URL's parts ('/', '?', '#', '@', '%', spaces, quotes), some well formed (the
 *    commands work), some that libpq would misread or refuse (exit 2 before connecting),
 *    some for a server that is not there or a database that does not exist (runtime
 *    failures), each through `ferry migrate`, `outbox status`, `outbox cleanup` and `ferry
 *    relay` (start line, start failure), given as --database, as $DATABASE_URL and as
 *    --database-url-file: the exit status is the expected one and neither the password nor
 *    any 4-byte piece of it (split at its special characters) is in stdout or stderr;
 *  - --database-url-file: exclusive with --database, wins over $DATABASE_URL, and bad files
 *    exit 2 naming the option, never showing the content;
 *  - `ferry relay --help` shows no test-only variable. */
#include <ctype.h>

#include "support/ob.h"

static PGconn *db;
static const char *schema;
static int failures; /* reported as they come, failed at the end: one run shows them all */

#define SOFT_FAIL(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        failures++;                                                                                \
    } while (0)

OB_GROUP_FIXTURE(&db, NULL)

enum { WORKS, REFUSED, FAILS }; /* exit 0 (relay: runs); 2; 1 (relay: 3, could not start) */

typedef struct secret_case {
    const char *url; /* {PORT} = the test server's port */
    const char *secret;
    int outcome;
    const char *env; /* "K=V" in the commands' environment, or NULL */
} secret_case;

static const secret_case cases[] = {
    /* a '%' that is not an escape: libpq's parse error used to quote the token */
    {"postgresql://ferry:Pr0dPassw0rd%@127.0.0.1:{PORT}/ferry", "Pr0dPassw0rd%", REFUSED, NULL},
    /* a '/': libpq reads host "ferry", port "Ab+c", database "De9Fg=@127.0.0.1:5432/x" */
    {"postgresql://ferry:Ab+c/De9Fg=@127.0.0.1:5432/x", "Ab+c/De9Fg=", REFUSED, NULL},
    /* '?' and '#': libpq takes them as part of the password; the display did not */
    {"postgresql://ferry:Hq8Lp?Vn3Wd@127.0.0.1:{PORT}/ferry", "Hq8Lp?Vn3Wd", WORKS, NULL},
    {"postgresql://ferry:Mz5Rt#Yb2Kc@127.0.0.1:{PORT}/ferry?connect_timeout=5", "Mz5Rt#Yb2Kc",
     WORKS, NULL},
    /* a second '@': libpq reads the password's tail as the host name */
    {"postgresql://ferry:Gf4Ds@Jk8Lq@127.0.0.1:{PORT}/ferry", "Gf4Ds@Jk8Lq", REFUSED, NULL},
    /* no host at all: the "port" is the password */
    {"postgresql://ferry:Vb7Nm4Qw/ferry", "Vb7Nm4Qw", REFUSED, NULL},
    /* percent-encoded as it should be: works; the encoded text counts as the secret too */
    {"postgresql://ferry:Ab%2Fc%40Qr7Ts9@127.0.0.1:{PORT}/ferry", "Ab/c@Qr7Ts9", WORKS, NULL},
    {"postgresql://ferry:Ab%2Fc%40Qr7Ts9@127.0.0.1:{PORT}/ferry", "Ab%2Fc%40Qr7Ts9", WORKS, NULL},
    /* key=value: an unquoted space (libpq's message quoted the word after it), a quoted one */
    {"host=127.0.0.1 port={PORT} dbname=ferry user=ferry password=S3CR ETXpart", "S3CR ETXpart",
     REFUSED, NULL},
    {"host=127.0.0.1 port={PORT} dbname=ferry user=ferry password='quoted secret'", "quoted secret",
     WORKS, NULL},
    {"host=127.0.0.1 port={PORT} dbname=ferry user=ferry password='Wx4 Ed5\\'Rf6'", "Wx4 Ed5'Rf6",
     WORKS, NULL},
    /* nothing listens / no such database / no such role: libpq's and the server's messages */
    {"postgresql://ferry:Wq3Er5Ty%2FUi@127.0.0.1:1/ferry", "Wq3Er5Ty/Ui", FAILS, NULL},
    {"host=127.0.0.1 port=1 dbname=ferry password='Zu7 Io9Pa#'", "Zu7 Io9Pa#", FAILS, NULL},
    {"postgresql://ferry:Kd9Fs%3FLp2@127.0.0.1:{PORT}/no_such_db", "Kd9Fs?Lp2", FAILS, NULL},
    {"postgresql://nobody_here:Jh6Gf%23Ds4@127.0.0.1:{PORT}/ferry", "Jh6Gf#Ds4", FAILS, NULL},
    /* libpq quotes a bad target_session_attrs value: where a password that holds a control
     * character is echoed decoded, then flattened to one line */
    {"postgresql://u:Nl7Kq%0AZp4Wx@127.0.0.1:1/x?target_session_attrs=Nl7Kq%0AZp4Wx",
     "Nl7Kq\nZp4Wx", FAILS, NULL},
    {"postgresql://u:Tb3Hj%09Rk6Mv@127.0.0.1:1/x?target_session_attrs=Tb3Hj%09Rk6Mv",
     "Tb3Hj\tRk6Mv", FAILS, NULL},
    /* passwords that are not the URL's password= as libpq keeps it */
    {"postgresql://ferry@127.0.0.1:{PORT}/ferry?target_session_attrs=Pg5Pw6Xy8", "Pg5Pw6Xy8",
     FAILS, "PGPASSWORD=Pg5Pw6Xy8"},
    {"postgresql://ferry@127.0.0.1:{PORT}/ferry?sslpassword=Sl2Pq4Wz9&target_session_attrs="
     "Sl2Pq4Wz9",
     "Sl2Pq4Wz9", FAILS, NULL},
    {"host=127.0.0.1 port={PORT} dbname=ferry sslpassword=Hs5Kd7Lm3 "
     "target_session_attrs=Hs5Kd7Lm3",
     "Hs5Kd7Lm3", FAILS, NULL},
    {"host=127.0.0.1 port={PORT} dbname=ferry password=Fp1Ab2Cd3 password=second "
     "target_session_attrs=Fp1Ab2Cd3",
     "Fp1Ab2Cd3", FAILS, NULL},
    {"postgresql://ferry@127.0.0.1:{PORT}/ferry?password=Qp6Rs8Tu1&password=second&"
     "target_session_attrs=Qp6Rs8Tu1",
     "Qp6Rs8Tu1", FAILS, NULL},
};

/* url with {PORT} replaced by the test server's port. */
static void expand(const char *tmpl, char *out, size_t cap) {
    const char *port = th_env_require("PG_PORT");
    size_t k = 0;
    for (const char *p = tmpl; *p && k + 1 < cap;) {
        if (!strncmp(p, "{PORT}", 6)) {
            k += (size_t)snprintf(out + k, cap - k, "%s", port);
            p += 6;
        } else {
            out[k++] = *p++;
        }
    }
    out[k < cap ? k : cap - 1] = '\0';
}

/* Fail when `text` holds the secret or any piece of 4 bytes or more of it, cut at every
 * byte that is not a letter or digit, or only at the characters that end URL parts. */
static void expect_no_secret(const char *what, const char *text, const char *secret) {
    if (strstr(text, secret)) {
        SOFT_FAIL("%s: the password '%s' is shown:\n%s", what, secret, text);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        const char *p = secret;
        while (*p) {
            size_t n = 0;
            if (pass == 0)
                while (p[n] && isalnum((unsigned char)p[n]))
                    n++;
            else
                n = strcspn(p, "/?#@% '");
            if (n >= 4) {
                char piece[64];
                snprintf(piece, sizeof piece, "%.*s", (int)n, p);
                if (strstr(text, piece)) {
                    SOFT_FAIL("%s: '%s', a piece of the password '%s', is shown:\n%s", what, piece,
                              secret, text);
                    return;
                }
            }
            p += n ? n : 1;
        }
    }
}

enum { BY_OPTION, BY_ENV, BY_FILE, SOURCES };
static const char *const source_names[SOURCES] = {"--database", "DATABASE_URL",
                                                  "--database-url-file"};

/* argv (NULL-terminated) for command `cmd` (0 migrate, 1 status, 2 cleanup, 3 relay) with
 * the URL given by `source`; env_out gets the extra environment entry or NULL. */
typedef struct cmd_line {
    const char *argv[32];
    const char *env[3];
    char env_text[1200];
    char file[300];
} cmd_line;

static const char *const cmd_names[4] = {"migrate", "outbox status", "outbox cleanup", "relay"};

static void build(cmd_line *c, int cmd, int source, const char *url, const char *routes,
                  const char *env) {
    memset(c, 0, sizeof *c);
    int n = 0;
    if (cmd == 0) c->argv[n++] = "migrate";
    if (cmd == 1 || cmd == 2) c->argv[n++] = "outbox";
    if (cmd == 1) c->argv[n++] = "status";
    if (cmd == 2) {
        c->argv[n++] = "cleanup";
        c->argv[n++] = "--older-than-days";
        c->argv[n++] = "30";
    }
    if (cmd == 3) {
        c->argv[n++] = "relay";
        c->argv[n++] = "--routes";
        c->argv[n++] = routes;
        c->argv[n++] = "--redis";
        c->argv[n++] = th_env_require("REDIS_URL");
        c->argv[n++] = "--prefix";
        c->argv[n++] = th_prefix();
        c->argv[n++] = "--retention-days";
        c->argv[n++] = "0";
    }
    c->argv[n++] = "--schema";
    c->argv[n++] = schema;
    c->argv[n++] = "--db-timeout";
    c->argv[n++] = "5000";
    if (source == BY_OPTION) {
        c->argv[n++] = "--database";
        c->argv[n++] = url;
    } else if (source == BY_ENV) {
        snprintf(c->env_text, sizeof c->env_text, "DATABASE_URL=%s", url);
        c->env[0] = c->env_text;
    } else {
        snprintf(c->file, sizeof c->file, "%s/db-url", th_tmpdir());
        th_write_file(c->file, url, 0600);
        c->argv[n++] = "--database-url-file";
        c->argv[n++] = c->file;
    }
    c->argv[n] = NULL;
    c->env[c->env[0] ? 1 : 0] = env;
}

typedef struct out_files {
    char out[300], err[300];
} out_files;

static int relay_started(void *arg) {
    const out_files *f = arg;
    char *err = th_slurp(f->err);
    int yes = strstr(err, "ferry relay: info: started") != NULL;
    free(err);
    return yes;
}

/* Run one command line; returns its exit status with stdout+stderr in *text (malloc'd). A
 * relay that starts is stopped with SIGTERM once its log says so. */
static int run(const cmd_line *c, int is_relay, char **text) {
    out_files f;
    snprintf(f.out, sizeof f.out, "%s/out", th_tmpdir());
    snprintf(f.err, sizeof f.err, "%s/err", th_tmpdir());
    pid_t pid = cli_start(c->argv, c->env, NULL, f.out, f.err);
    int code = -1;
    if (is_relay) { /* wait for the start (then SIGTERM) or for an exit */
        long long deadline = th_mono_ms() + 20000;
        int st;
        while (th_mono_ms() < deadline) {
            if (waitpid(pid, &st, WNOHANG) == pid) {
                code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                break;
            }
            if (relay_started(&f)) {
                kill(pid, SIGTERM);
                break;
            }
            usleep(20000);
        }
    }
    if (code < 0) code = cli_wait(pid, 30000);
    char *o = th_slurp(f.out), *e = th_slurp(f.err);
    size_t len = strlen(o) + strlen(e) + 1;
    *text = malloc(len);
    snprintf(*text, len, "%s%s", o, e);
    free(o);
    free(e);
    return code;
}

static int expected_code(int outcome, int is_relay) {
    if (outcome == REFUSED) return 2;
    if (outcome == FAILS) return is_relay ? 3 : 1;
    return 0;
}

static void check_sources(int nsources) {
    const char *routes = ob_file("s.routes", "order.placed q:j\n");
    unsetenv("DATABASE_URL");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char url[1024];
        expand(cases[i].url, url, sizeof url);
        for (int source = 0; source < nsources; source++)
            for (int cmd = 0; cmd < 4; cmd++) {
                cmd_line c;
                build(&c, cmd, source, url, routes, cases[i].env);
                char *text = NULL;
                int code = run(&c, cmd == 3, &text);
                char what[300];
                snprintf(what, sizeof what, "case %zu, %s, URL by %s", i, cmd_names[cmd],
                         source_names[source]);
                int want = expected_code(cases[i].outcome, cmd == 3);
                if (code != want)
                    SOFT_FAIL("%s: exit %d, expected %d:\n%s", what, code, want, text);
                expect_no_secret(what, text, cases[i].secret);
                if (cases[i].outcome == REFUSED && !strstr(text, "database"))
                    SOFT_FAIL("%s: the refusal does not say what is wrong:\n%s", what, text);
                if (cmd == 3 && cases[i].outcome == WORKS &&
                    !strstr(text, "ferry relay: database ferry@127.0.0.1:"))
                    SOFT_FAIL("%s: the start line does not name the database:\n%s", what, text);
                free(text);
            }
    }
}

static void test_passwords_never_shown(void **state) {
    (void)state;
    schema = ob_schema(db);
    check_sources(SOURCES);
    if (failures) fail_msg("%d failure(s), above", failures);
}

/* One command line (argv without the program) with --database-url-file FILE added. */
static int run_with_file(int cmd, const char *file, const char *const *extra, const char *env,
                         char **text) {
    const char *routes = ob_file("f.routes", "order.placed q:j\n");
    cmd_line c;
    build(&c, cmd, BY_FILE, "unused", routes, NULL);
    int n = 0;
    while (c.argv[n])
        n++;
    c.argv[n - 1] = file; /* build wrote its own file: use this one */
    for (int i = 0; extra && extra[i]; i++)
        c.argv[n++] = extra[i];
    c.argv[n] = NULL;
    c.env[0] = env;
    return run(&c, cmd == 3, text);
}

static void test_database_url_file(void **state) {
    (void)state;
    if (!schema) schema = ob_schema(db);
    unsetenv("DATABASE_URL");
    char good[300], url[600];
    snprintf(good, sizeof good, "%s/good-url", th_tmpdir());
    snprintf(url, sizeof url, "%s\n", th_env_require("DATABASE_URL"));
    th_write_file(good, url, 0600);
    for (int cmd = 0; cmd < 4; cmd++) {
        char *text = NULL;
        /* works, and wins over a DATABASE_URL that would be refused */
        int code = run_with_file(cmd, good, NULL, "DATABASE_URL=junk", &text);
        if (code != 0) fail_msg("%s --database-url-file: exit %d:\n%s", cmd_names[cmd], code, text);
        if (strstr(text, "warning"))
            fail_msg("%s: a 0600 file gets a warning:\n%s", cmd_names[cmd], text);
        free(text);
        /* not with --database */
        code = run_with_file(
            cmd, good, (const char *const[]){"--database", th_env_require("DATABASE_URL"), NULL},
            NULL, &text);
        if (code != 2 || !strstr(text, "--database and --database-url-file are exclusive"))
            fail_msg("%s with both: exit %d:\n%s", cmd_names[cmd], code, text);
        free(text);
    }
    /* bad files: exit 2, one line naming the option, never the content */
    const char *secret = "Sq1Wd2Ef3Rg";
    char missing[300], dir[300], empty[300], lines[300], big[300];
    snprintf(missing, sizeof missing, "%s/no-such-file", th_tmpdir());
    snprintf(dir, sizeof dir, "%s", th_tmpdir());
    snprintf(empty, sizeof empty, "%s/empty-url", th_tmpdir());
    th_write_file(empty, "\n", 0600);
    snprintf(lines, sizeof lines, "%s/two-lines", th_tmpdir());
    th_write_file(lines, "postgresql://ferry:Sq1Wd2Ef3Rg@127.0.0.1/ferry\nSq1Wd2Ef3Rg\n", 0600);
    snprintf(big, sizeof big, "%s/big-url", th_tmpdir());
    FILE *f = fopen(big, "wb");
    assert_non_null(f);
    fputs("postgresql://ferry:Sq1Wd2Ef3Rg@127.0.0.1/ferry?application_name=", f);
    for (int i = 0; i < 70000; i++)
        fputc('x', f);
    fclose(f);
    chmod(big, 0600);
    const char *bad[] = {missing, dir, empty, lines, big};
    for (int cmd = 0; cmd < 4; cmd++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            char *text = NULL;
            int code = run_with_file(cmd, bad[i], NULL, NULL, &text);
            if (code != 2 || cli_lines(text) != 1 || !strstr(text, "--database-url-file") ||
                !strstr(text, bad[i]) || strstr(text, secret))
                fail_msg("%s --database-url-file %s: exit %d, expected 2 and one line naming the "
                         "option and file, not the content:\n%s",
                         cmd_names[cmd], bad[i], code, text);
            free(text);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passwords_never_shown),
        cmocka_unit_test(test_database_url_file),
    };
    return cmocka_run_group_tests(tests, ob_group_setup, ob_group_teardown);
}
