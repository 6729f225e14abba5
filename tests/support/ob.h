/* ob.h - helpers of the outbox integration tests (test_outbox*.c, test_redis_acl.c, and the
 * PostgreSQL side of the dead-letter and trace tests), prefix ob_ (each test file is its own
 * executable, so these are static): a private schema per test migrated through the library,
 * SQL helpers that fail the test on error, recording a dead letter, routes files, and `ferry
 * relay` processes ($FERRY_BIN) started with posix_spawn, their stderr kept in a file so a failure
 * can show it, stopped with real signals. */
#ifndef FERRY_TEST_OB_H
#define FERRY_TEST_OB_H

#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ferry/deadletter.h"
#include "ferry/outbox.h"
#include "support/cli.h" /* the outbox tests also run `ferry outbox ...` */
#include "support/th.h"

/* Write text to <tmpdir>/name; returns the path (static storage per call slot). */
static inline const char *ob_file(const char *name, const char *text) {
    static char paths[8][256];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", th_tmpdir(), name);
    FILE *f = fopen(p, "wb"); /* the umask's mode, unlike th_write_file */
    if (!f) fail_msg("cannot write %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

/* ---- PostgreSQL ---------------------------------------------------------------------- */

/* A session on `url` (quiet notices); fails the test when it cannot connect. */
static inline PGconn *ob_connect(const char *url) {
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect %s: %s", url, PQerrorMessage(c));
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

static inline PGconn *ob_pg(void) {
    return ob_connect(th_env_require("DATABASE_URL"));
}

/* Run SQL (printf-style; only for trusted test text) and return the result; fails the test
 * on error. Caller PQclears. */
static inline PGresult *ob_sql(PGconn *c, const char *fmt, ...) FERRY_PRINTF(2, 3);
static inline PGresult *ob_sql(PGconn *c, const char *fmt, ...) {
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("SQL failed: %s\n%s", sql, PQerrorMessage(c));
    return r;
}

static inline void ob_exec(PGconn *c, const char *sql) {
    PQclear(ob_sql(c, "%s", sql));
}

/* First column of the first row as a number. */
static inline long long ob_ll(PGconn *c, const char *fmt, ...) FERRY_PRINTF(2, 3);
static inline long long ob_ll(PGconn *c, const char *fmt, ...) {
    char sql[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = ob_sql(c, "%s", sql);
    if (PQntuples(r) < 1) fail_msg("no row from: %s", sql);
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

#define OB_SCHEMAS_MAX 16
static char ob_schema_names[OB_SCHEMAS_MAX][32];
static int ob_schema_count;

/* Drop every schema ob_schema made (call at the end). */
static inline void ob_drop_schemas(PGconn *c) {
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    for (int i = 0; i < ob_schema_count && i < OB_SCHEMAS_MAX; i++) {
        char sql[600];
        snprintf(sql, sizeof sql, "DROP SCHEMA IF EXISTS %.32s CASCADE", ob_schema_names[i]);
        PQclear(PQexec(c, sql));
    }
}

/* A fresh schema for this test ("ob<pid>_<n>"), migrated through the library. */
static inline const char *ob_schema(PGconn *c) {
    if (ob_schema_count >= OB_SCHEMAS_MAX) fail_msg("too many schemas");
    int n = ob_schema_count++;
    char *s = ob_schema_names[n];
    snprintf(s, sizeof ob_schema_names[0], "ob%d_%d", (int)getpid(), n);
    PQclear(ob_sql(c, "DROP SCHEMA IF EXISTS %s CASCADE", s));
    ferry_migrate_options mo = {.schema = s};
    ferry_error e = {0};
    int applied = 0;
    if (ferry_outbox_migrate(c, &mo, &applied, &e)) fail_msg("migrate %s: %s", s, e.message);
    if (applied != ferry_outbox_schema_version()) fail_msg("migrate applied %d", applied);
    return s;
}

/* Record the dead letter f in schema (ferry_dlq_record) and write its row id to id_out: the
 * row of f's failure (prefix, queue, job id, job timestamp, attempts made), also when that
 * failure was recorded before. Fails the test on any error. */
static inline void ob_dlq_record(PGconn *c, const char *schema, const ferry_dlq_failure *f,
                                 char id_out[40]) {
    ferry_dlq_options o = {schema};
    ferry_error e = {0};
    if (ferry_dlq_record(c, &o, f, NULL, &e)) fail_msg("record: %s", e.message);
    char ts[32], attempts[32], sql[512];
    snprintf(ts, sizeof ts, "%lld", f->job_timestamp_ms);
    snprintf(attempts, sizeof attempts, "%ld", f->attempts_made);
    snprintf(sql, sizeof sql,
             "SELECT id::text FROM %s.dead_letters WHERE prefix = $1 AND queue = $2 AND "
             "job_id = $3 AND job_timestamp = $4 AND attempts_made = $5",
             schema);
    const char *p[] = {f->prefix ? f->prefix : "bull", f->queue, f->job_id, ts, attempts};
    PGresult *r = PQexecParams(c, sql, 5, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("the dead letter of job %s in %s: %s", f->job_id, f->queue, PQerrorMessage(c));
    snprintf(id_out, 40, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
}

/* A scratch database of the test's own (for settings made with ALTER DATABASE): one per
 * process, dropped by ob_scratch_drop (ob_close calls it). */
static char ob_scratch_name[64];

static inline void ob_scratch_drop(PGconn *admin) {
    if (!ob_scratch_name[0]) return;
    PQclear(ob_sql(admin, "DROP DATABASE IF EXISTS %s WITH (FORCE)", ob_scratch_name));
    ob_scratch_name[0] = '\0';
}

/* Create (again) the scratch database "ferry_<stem>_<pid>"; its name is returned and its
 * URL (DATABASE_URL with the database replaced) written to url. */
static inline const char *ob_scratch_create(PGconn *admin, const char *stem, char *url,
                                            size_t cap) {
    ob_scratch_drop(admin);
    snprintf(ob_scratch_name, sizeof ob_scratch_name, "ferry_%s_%d", stem, (int)getpid());
    PQclear(ob_sql(admin, "DROP DATABASE IF EXISTS %s WITH (FORCE)", ob_scratch_name));
    PQclear(ob_sql(admin, "CREATE DATABASE %s", ob_scratch_name));
    const char *base = th_env_require("DATABASE_URL");
    const char *host = strstr(base, "://");
    if (!host) fail_msg("DATABASE_URL is not a URL: %s", base);
    size_t at = (size_t)(host + 3 - base) + strcspn(host + 3, "/?");
    const char *query = strchr(base + at, '?');
    snprintf(url, cap, "%.*s/%s%s", (int)at, base, ob_scratch_name, query ? query : "");
    return ob_scratch_name;
}

/* The group fixture of an outbox test file: a PostgreSQL session and, when rds is not
 * NULL, a Redis connection; ob_close drops the scratch database and every schema
 * ob_schema made, closes both, and removes the CLI temp dir. */
static inline void ob_open(PGconn **db, ferry_conn **rds) {
    *db = ob_pg();
    if (rds) *rds = th_conn();
}

static inline void ob_close(PGconn *db, ferry_conn *rds) {
    if (PQstatus(db) != CONNECTION_OK) PQreset(db); /* a test may have restarted the server */
    ob_scratch_drop(db);
    ob_drop_schemas(db);
    PQfinish(db);
    ferry__conn_close(rds);
    th_tmpdir_remove();
}

/* Run `pg_ctl ACTION` on the fixture's cluster (scripts/lib.sh) with shutdown mode `mode`
 * ("fast", "immediate"); "restart" reuses postmaster.opts, also to start a stopped server.
 * $PG_CTL, when set, is a whole command taking the action instead. Fails the test when
 * pg_ctl does (but for "stop", whose failure a caller may expect: returns 0 / -1). As root
 * it runs as the postgres user. */
static inline int ob_pg_ctl(const char *action, const char *mode) {
    char cmd[2048];
    const char *ctl = th_env_get("PG_CTL");
    if (ctl) {
        snprintf(cmd, sizeof cmd, "'%s' %s >'%s/pgctl.log' 2>&1", ctl, action, th_tmpdir());
    } else {
        const char *data = th_env_require("PG_DATA");
        char bindir[512] = "";
        FILE *p = popen("pg_config --bindir 2>/dev/null", "r");
        if (p) {
            if (fgets(bindir, sizeof bindir, p)) bindir[strcspn(bindir, "\n")] = 0;
            pclose(p);
        }
        snprintf(cmd, sizeof cmd,
                 "%s'%s/pg_ctl' -D '%s' -m %s -w -t 60 -l '%s/../postgres.log' %s "
                 ">'%s/pgctl.log' 2>&1",
                 geteuid() == 0 ? "runuser -u postgres -- " : "", bindir, data, mode, data, action,
                 th_tmpdir());
    }
    if (system(cmd) == 0) return 0;
    if (!strcmp(action, "stop")) return -1;
    char path[300];
    snprintf(path, sizeof path, "%s/pgctl.log", th_tmpdir());
    fail_msg("pg_ctl %s failed: %s\n%s", action, cmd, th_slurp(path));
    return -1;
}

/* OB_GROUP_FIXTURE(&db, &rds) (or &db, NULL: no Redis) defines ob_group_setup and
 * ob_group_teardown, the cmocka group fixture over ob_open/ob_close of the file's globals. */
#define OB_GROUP_FIXTURE(DBP, RDSP)                                                                \
    static int ob_group_setup(void **state) {                                                      \
        (void)state;                                                                               \
        ob_open((DBP), (RDSP));                                                                    \
        return 0;                                                                                  \
    }                                                                                              \
    static int ob_group_teardown(void **state) {                                                   \
        (void)state;                                                                               \
        ferry_conn **rdsp_ = (RDSP);                                                               \
        ob_close(*(DBP), rdsp_ ? *rdsp_ : NULL);                                                   \
        return 0;                                                                                  \
    }

static inline void ob_append(PGconn *c, const char *schema, const char *topic, const char *payload,
                             const char *trace, int commit, char id_out[37]) {
    ob_exec(c, "BEGIN");
    ferry_outbox_options o = {.schema = schema};
    ferry_outbox_event ev = {.topic = topic,
                             .aggregate_id = "6f9619ff-8b86-d011-b42d-00cf4fc964ff",
                             .payload_json = payload,
                             .trace_id = trace};
    ferry_error e = {0};
    if (ferry_outbox_append(c, &o, &ev, id_out, &e)) fail_msg("append: %s", e.message);
    ob_exec(c, commit ? "COMMIT" : "ROLLBACK");
}

/* Insert n rows of `topic` in one statement (random ids, created in order). */
static inline void ob_insert_many(PGconn *c, const char *schema, const char *topic, int n) {
    PQclear(ob_sql(c,
                   "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, created_at) "
                   "SELECT gen_random_uuid(), '%s', gen_random_uuid(), jsonb_build_object('n', g), "
                   "clock_timestamp() FROM generate_series(1, %d) g",
                   schema, topic, n));
}

/* ---- relay processes ----------------------------------------------------------------- */

typedef struct ob_relay {
    pid_t pid;
    char log[256];
    int exited, status; /* status: exit code or 128 + signal */
} ob_relay;

/* Relays still running when the test program ends (a failed assertion skips their stop)
 * are killed, so no test leaves a daemon behind. */
#define OB_PIDS_MAX 64
static pid_t ob_pids[OB_PIDS_MAX];
static int ob_npids;

static void ob_kill_leftovers(void) {
    for (int i = 0; i < ob_npids; i++)
        if (ob_pids[i] > 0 && waitpid(ob_pids[i], NULL, WNOHANG) == 0) {
            kill(ob_pids[i], SIGKILL);
            waitpid(ob_pids[i], NULL, 0);
        }
}

/* Start `ferry relay` for schema/prefix/routes with extra args (NULL-terminated, may be
 * NULL) and extra environment entries ("K=V", NULL-terminated, may be NULL). */
static inline void ob_relay_start(ob_relay *rl, const char *schema, const char *prefix,
                                  const char *routes, const char *const *args,
                                  const char *const *env_extra) {
    static int seq;
    const char *bin = cli_bin();
    memset(rl, 0, sizeof *rl);
    snprintf(rl->log, sizeof rl->log, "%s/relay%d.log", th_tmpdir(), seq++);
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "relay";
    argv[n++] = "--routes";
    argv[n++] = routes;
    argv[n++] = "--schema";
    argv[n++] = schema;
    argv[n++] = "--database";
    argv[n++] = th_env_require("DATABASE_URL");
    argv[n++] = "--redis";
    argv[n++] = th_env_require("REDIS_URL");
    argv[n++] = "--prefix";
    argv[n++] = prefix;
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char **env = th_env_with(env_extra, "FERRY_FAULT=");
    rl->pid = th_spawn(argv, env, NULL, rl->log, rl->log, 1);
    free(env);
    if (ob_npids == 0) atexit(ob_kill_leftovers);
    if (ob_npids < OB_PIDS_MAX) ob_pids[ob_npids++] = rl->pid;
}

/* 1 when the relay has exited (status recorded). */
static inline int ob_relay_exited(ob_relay *rl) {
    if (rl->exited) return 1;
    int st;
    if (waitpid(rl->pid, &st, WNOHANG) != rl->pid) return 0;
    rl->exited = 1;
    rl->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 1;
}

static inline int ob_relay_exited_cb(void *arg) {
    return ob_relay_exited(arg);
}

/* Print a relay's log to stderr (cmocka shortens failure messages). */
static inline void ob_relay_dump(const ob_relay *rl) {
    char *log = th_slurp(rl->log);
    fprintf(stderr, "--- relay log %s ---\n%s--- end ---\n", rl->log, log);
    free(log);
}

/* 1 when the relay's log (so far) contains `needle`. */
static inline int ob_relay_log_contains(const ob_relay *rl, const char *needle) {
    return th_file_contains(rl->log, needle);
}

/* Wait up to timeout_ms for `needle` in the relay's log; 1 when it appeared. */
static inline int ob_relay_wait_log(const ob_relay *rl, const char *needle, int timeout_ms) {
    th_log_arg w = {rl->log, needle};
    return th_wait_until(th_log_has, &w, timeout_ms);
}

/* Wait for exit (fail after timeout_ms); returns the status. */
static inline int ob_relay_wait(ob_relay *rl, int timeout_ms) {
    if (!th_wait_until(ob_relay_exited_cb, rl, timeout_ms)) {
        kill(rl->pid, SIGKILL);
        waitpid(rl->pid, NULL, 0);
        rl->exited = 1;
        ob_relay_dump(rl);
        fail_msg("relay %d did not exit within %d ms", (int)rl->pid, timeout_ms);
    }
    return rl->status;
}

/* SIGTERM and expect exit 0. */
static inline void ob_relay_stop(ob_relay *rl) {
    if (ob_relay_exited(rl)) {
        ob_relay_dump(rl);
        fail_msg("relay exited early with status %d", rl->status);
    }
    kill(rl->pid, SIGTERM);
    int st = ob_relay_wait(rl, 30000);
    if (st != 0) {
        ob_relay_dump(rl);
        fail_msg("relay exit status %d after SIGTERM", st);
    }
}

static inline void ob_relay_kill(ob_relay *rl) {
    kill(rl->pid, SIGKILL);
    ob_relay_wait(rl, 10000);
}

/* Fail showing the relay's log. */
#define OB_FAIL_LOG(rl, ...)                                                                       \
    do {                                                                                           \
        ob_relay_dump(rl);                                                                         \
        fail_msg(__VA_ARGS__);                                                                     \
    } while (0)

/* ---- waiting on the database --------------------------------------------------------- */

typedef struct ob_count_wait {
    PGconn *c;
    char sql[1024];
    long long want; /* wait until the count is >= want (or == want with exact) */
    int exact;
    long long last;
} ob_count_wait;

static inline int ob_count_cb(void *arg) {
    ob_count_wait *w = arg;
    PGresult *r = PQexec(w->c, w->sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("%s: %s", w->sql, PQerrorMessage(w->c));
    w->last = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return w->exact ? w->last == w->want : w->last >= w->want;
}

/* Wait until `SELECT count...` (sql) returns >= want; returns 1/0 (last value in *last). */
static inline int ob_wait_count(PGconn *c, const char *sql, long long want, int exact,
                                int timeout_ms, long long *last) {
    ob_count_wait w = {.c = c, .want = want, .exact = exact};
    snprintf(w.sql, sizeof w.sql, "%s", sql);
    int ok = th_wait_until(ob_count_cb, &w, timeout_ms);
    if (last) *last = w.last;
    return ok;
}

/* Routes: a shop's relay table. */
#define OB_SHOP_ROUTES                                                                             \
    "# topic          targets (queue:job-name)\n"                                                  \
    "order.placed     payments:capture-payment notifications:order-confirmation\n"                 \
    "payment.captured shipping:create-shipment loyalty:award-points\n"                             \
    "order.cancelled  payments:void-authorization\n"

/* Every queue in `queues` holds exactly one waiting job per row of schema's outbox, under
 * the row's id: nothing lost, nothing doubled. */
static inline void ob_expect_one_job_per_row(PGconn *db, const char *schema, ferry_conn *r,
                                             const char *prefix, const char *const *queues,
                                             int nqueues, int rows) {
    PGresult *res = ob_sql(db, "SELECT id FROM %s.outbox_events ORDER BY id::text", schema);
    assert_int_equal(PQntuples(res), rows);
    for (int q = 0; q < nqueues; q++) {
        redisReply *rep = th_cmd(r, "LRANGE %s:%s:wait 0 -1", prefix, queues[q]);
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
        size_t count = rep->elements;
        if (count != (size_t)rows)
            fail_msg("queue %s holds %zu jobs for %d rows", queues[q], count, rows);
        char **ids = calloc(count ? count : 1, sizeof *ids);
        assert_non_null(ids);
        for (size_t i = 0; i < count; i++)
            ids[i] = rep->element[i]->str;
        qsort(ids, count, sizeof *ids, th_cmp_str);
        for (size_t i = 0; i < count; i++)
            if (strcmp(ids[i], PQgetvalue(res, (int)i, 0)))
                fail_msg("queue %s: job %s at %zu, row %s", queues[q], ids[i], i,
                         PQgetvalue(res, (int)i, 0));
        free(ids);
        freeReplyObject(rep);
    }
    PQclear(res);
}

#endif
