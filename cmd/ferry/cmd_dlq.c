/* cmd_dlq.c - `ferry dlq sync | list | show | redrive | purge`: the dead letters of
 * ferry/deadletter.h from the command line. Redrive and purge are dry runs unless
 * --execute; both are audited by the library, dry runs included. */
#include <errno.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "ferry/deadletter.h"
#include "timetext.h"
#include "util/printable.h"

/* ---- the filter options list, redrive and purge share ------------------------------ */

typedef struct filter_opts {
    const char *queue, *name, *error, *since, *until, *prefix;
    long long limit, fewer_than;
    int json;
} filter_opts;

/* prefix last: redrive takes it from the connection options instead */
static const opt_def filter_defs[] = {
    {"queue", OPT_STRING, "Q", offsetof(filter_opts, queue), 0, 0, "Only rows of queue Q."},
    {"name", OPT_STRING, "N", offsetof(filter_opts, name), 0, 0, "Only jobs named N."},
    {"error", OPT_STRING, "TEXT", offsetof(filter_opts, error), 0, 0,
     "Only rows whose error contains TEXT (case-insensitive)."},
    {"since", OPT_STRING, "T", offsetof(filter_opts, since), 0, 0,
     "Only failures at or after T: an RFC 3339 time (2026-12-01T10:00:00Z), a date "
     "(2026-12-01, UTC) or a duration ago (90s, 30m, 12h, 7d)."},
    {"until", OPT_STRING, "T", offsetof(filter_opts, until), 0, 0,
     "Only failures before T (as --since)."},
    {"limit", OPT_INT, "N", offsetof(filter_opts, limit), 1, FERRY_DLQ_LIMIT_MAX,
     "At most N rows, oldest failure first (list: default 100; redrive and purge: all)."},
    {"json", OPT_FLAG, NULL, offsetof(filter_opts, json), 0, 0,
     "Print JSON (one object per row, one per line)."},
    {"redriven-fewer-than", OPT_INT, "N", offsetof(filter_opts, fewer_than), 1, 1000000000,
     "Only rows redriven fewer than N times. With redrive --again it makes a run resumable: "
     "--again --redriven-fewer-than 2 redrives the rows redriven once, and run again after a "
     "crash takes only those still at one."},
    {"prefix", OPT_STRING, "P", offsetof(filter_opts, prefix), 0, 0,
     "Only rows of queues under key prefix P. Default: $FERRY_PREFIX when set, else every "
     "prefix."},
};
#define FILTER_DEFS_ALL 9

static long long now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* Fill f from the parsed options; a usage error (printed) returns its exit code. */
static int filter_build(const cmd_spec *spec, const filter_opts *o, ferry_dlq_filter *f) {
    memset(f, 0, sizeof *f);
    f->queue = o->queue;
    f->name = o->name;
    f->error_contains = o->error;
    const char *env = getenv("FERRY_PREFIX");
    f->prefix = o->prefix ? o->prefix : env && *env ? env : NULL;
    f->limit = o->limit;
    f->redriven_fewer_than = (long)o->fewer_than;
    long long now = now_ms();
    char shown[128];
    if (o->since && cli_time_ms(o->since, now, &f->since_ms))
        return opts_usage_error(spec,
                                "--since: expected an RFC 3339 time, a date or a duration ago "
                                "(7d); got '%s'",
                                ferryx_printable(o->since, shown, sizeof shown));
    if (o->until && cli_time_ms(o->until, now, &f->until_ms))
        return opts_usage_error(spec,
                                "--until: expected an RFC 3339 time, a date or a duration ago "
                                "(7d); got '%s'",
                                ferryx_printable(o->until, shown, sizeof shown));
    if (f->since_ms && f->until_ms && f->until_ms <= f->since_ms)
        return opts_usage_error(spec, "--until must be later than --since");
    return 0;
}

static json_t *entry_json(const ferry_dlq_entry *e) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(e->id));
    json_object_set_new(o, "prefix", json_string(e->prefix ? e->prefix : ""));
    json_object_set_new(o, "queue", json_string(e->queue ? e->queue : ""));
    json_object_set_new(o, "jobId", json_string(e->job_id ? e->job_id : ""));
    json_object_set_new(o, "name", json_string(e->job_name ? e->job_name : ""));
    json_object_set_new(o, "error", json_string(e->error ? e->error : ""));
    json_object_set_new(o, "attemptsMade", json_integer(e->attempts_made));
    json_object_set_new(o, "failedAtMs", json_integer(e->failed_at_ms));
    json_object_set_new(o, "jobTimestampMs", json_integer(e->job_timestamp_ms));
    json_object_set_new(o, "recordedBy", json_string(e->recorded_by ? e->recorded_by : ""));
    json_object_set_new(o, "redriveCount", json_integer(e->redrive_count));
    json_object_set_new(o, "redrivenAtMs",
                        e->redriven_at_ms ? json_integer(e->redriven_at_ms) : json_null());
    json_object_set_new(o, "redrivenBy",
                        e->redriven_by ? json_string(e->redriven_by) : json_null());
    json_object_set_new(o, "redriveJobId",
                        e->redrive_job_id ? json_string(e->redrive_job_id) : json_null());
    return o;
}

/* Print one JSON value on a line; returns 0, or 1 when out of memory. */
static int put_json(json_t *o) {
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    json_decref(o);
    if (!text) {
        fprintf(stderr, "ferry dlq: out of memory\n");
        return 1;
    }
    puts(text);
    free(text);
    return 0;
}

static const char *shown(const char *s, char *buf, size_t cap) {
    return ferryx_printable(s ? s : "", buf, cap);
}

/* ---- dlq list ----------------------------------------------------------------------- */

static const cmd_spec list_spec = {
    "dlq list", "", "List dead letters (final job failures), oldest first.", NULL, 0, 0, 0, 0};

static int list_run(int argc, char **argv, db_opts *d) {
    filter_opts o = {0};
    opt_group groups[] = {{"Filter options", filter_defs, FILTER_DEFS_ALL, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&list_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    ferry_dlq_filter f;
    if ((rc = filter_build(&list_spec, &o, &f))) return rc;
    if ((rc = db_resolve(&list_spec, d))) return rc;
    PGconn *conn = db_connect(&list_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    ferry_dlq_options dopts = {d->schema};
    ferry_dlq_list *l = NULL;
    ferry_error e = {0};
    rc = ferry_dlq_list_get(conn, &dopts, &f, &l, &e);
    PQfinish(conn);
    if (rc) return db_report(&list_spec, d->url, &e);
    if (o.json) {
        for (size_t i = 0; i < l->n && rc == 0; i++)
            rc = put_json(entry_json(&l->entries[i]));
    } else {
        printf("%-36s  %-20s  %-16s  %-20s  %-12s %4s %3s  %s\n", "ID", "FAILED", "QUEUE", "NAME",
               "JOB", "ATT", "RD", "ERROR");
        for (size_t i = 0; i < l->n; i++) {
            const ferry_dlq_entry *x = &l->entries[i];
            char at[32], q[64], n[64], j[64], er[96];
            printf("%-36s  %-20s  %-16s  %-20s  %-12s %4ld %3ld  %s\n", x->id,
                   cli_utc_text(x->failed_at_ms, at, sizeof at), shown(x->queue, q, 40),
                   shown(x->job_name, n, 40), shown(x->job_id, j, 40), x->attempts_made,
                   x->redrive_count, shown(x->error, er, 80));
        }
        printf("%zu of %lld matching row%s\n", l->n, l->total, l->total == 1 ? "" : "s");
    }
    ferry_dlq_list_free(l);
    return rc ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

static int list_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = list_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- dlq show ----------------------------------------------------------------------- */

typedef struct show_opts {
    int json;
} show_opts;

static const opt_def show_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(show_opts, json), 0, 0,
     "Print one JSON object (with data, options and stack trace)."},
};

static const cmd_spec show_spec = {"dlq show",
                                   "ID",
                                   "Show one dead letter: the job, its data, options, error and "
                                   "stack trace, and its redrives.",
                                   NULL,
                                   1,
                                   1,
                                   0,
                                   0};

static void show_text(const ferry_dlq_entry *x) {
    char b[4096], at[32];
    printf("id:             %s\n", x->id);
    printf("queue:          %s\n", shown(x->queue, b, sizeof b));
    printf("prefix:         %s\n", shown(x->prefix, b, sizeof b));
    printf("job id:         %s\n", shown(x->job_id, b, sizeof b));
    printf("name:           %s\n", shown(x->job_name, b, sizeof b));
    printf("failed at:      %s\n", cli_utc_text(x->failed_at_ms, at, sizeof at));
    printf("attempts made:  %ld\n", x->attempts_made);
    printf("recorded by:    %s\n", shown(x->recorded_by, b, sizeof b));
    printf("error:          %s\n", shown(x->error, b, sizeof b));
    printf("redrives:       %ld", x->redrive_count);
    if (x->redrive_count)
        printf(" (last %s by %s, job %s)", cli_utc_text(x->redriven_at_ms, at, sizeof at),
               shown(x->redriven_by, b, 256), x->redrive_job_id ? x->redrive_job_id : "");
    printf("\n");
    /* data, options and the stack trace whole, escaped only where unsafe for a terminal */
    const char *parts[][2] = {{x->data_is_json ? "data:" : "data (text):", x->data},
                              {"options:", x->opts},
                              {"stacktrace:", x->stacktrace}};
    for (size_t i = 0; i < 3; i++) {
        if (!parts[i][1]) continue;
        size_t cap = 4 * strlen(parts[i][1]) + 16;
        char *big = malloc(cap);
        if (!big) return;
        printf("%-16s%s\n", parts[i][0], ferryx_printable(parts[i][1], big, cap));
        free(big);
    }
}

static int show_run(int argc, char **argv, db_opts *d) {
    show_opts o = {0};
    opt_group groups[] = {{"Options", show_defs, 1, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&show_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    const char *id = res.pos[0];
    free(res.pos);
    if ((rc = db_resolve(&show_spec, d))) return rc;
    ferry_dlq_filter f = {.id = id};
    ferry_dlq_list *l = NULL;
    ferry_error e = {0};
    ferry_dlq_options dopts = {d->schema};
    PGconn *conn = db_connect(&show_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    rc = ferry_dlq_list_get(conn, &dopts, &f, &l, &e);
    PQfinish(conn);
    if (rc) return db_report(&show_spec, d->url, &e);
    if (l->n == 0) {
        char b[128];
        fprintf(stderr, "ferry dlq show: no dead letter %s\n", shown(id, b, sizeof b));
        ferry_dlq_list_free(l);
        return CLI_EXIT_RUNTIME;
    }
    const ferry_dlq_entry *x = &l->entries[0];
    if (o.json) {
        json_t *j = entry_json(x);
        json_t *dj = x->data_is_json ? json_loads(x->data, JSON_DECODE_ANY, NULL) : NULL;
        if (dj) {
            json_object_set_new(j, "data", dj);
        } else { /* not JSON, or numbers beyond what jansson holds: the text as stored */
            json_object_set_new(j, "data", json_null());
            json_object_set_new(j, "dataText", json_string(x->data ? x->data : ""));
        }
        json_object_set_new(j, "opts", x->opts ? json_string(x->opts) : json_null());
        json_object_set_new(j, "stacktrace",
                            x->stacktrace ? json_string(x->stacktrace) : json_null());
        rc = put_json(j) ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
    } else {
        show_text(x);
    }
    ferry_dlq_list_free(l);
    return rc;
}

static int show_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = show_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- dlq sync ----------------------------------------------------------------------- */

typedef struct sync_opts {
    int json;
} sync_opts;

static const opt_def sync_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(sync_opts, json), 0, 0, "Print one JSON object."},
};

static const cmd_spec sync_spec = {
    "dlq sync",
    "QUEUE",
    "Record every job in QUEUE's failed set that has no dead letter yet (whoever failed it).",
    "Each job in the failed set failed for good. Rows that exist already are left alone, so\n"
    "sync can run at any time, as often as wanted (e.g. from cron after an outage).\n",
    1,
    1,
    0,
    0};

static void progress_line(long long done, long long total, void *ud) {
    const char *what = ud;
    if (!isatty(2)) return;
    if (total >= 0)
        fprintf(stderr, "\r%s: %lld of %lld", what, done, total);
    else
        fprintf(stderr, "\r%s: %lld", what, done);
    if (done == total) fprintf(stderr, "\n");
    fflush(stderr);
}

static int sync_run(int argc, char **argv, db_opts *d) {
    sync_opts o = {0};
    cli_conn conn = {0};
    opt_group groups[] = {{"Options", sync_defs, 1, &o},
                          cli_conn_group(&conn, 0),
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&sync_spec, groups, 3, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    const char *queue = res.pos[0];
    free(res.pos);
    if ((rc = cli_conn_resolve(&sync_spec, &conn))) return rc;
    if ((rc = db_resolve(&sync_spec, d))) return rc;
    ferry_queue *q = NULL;
    if ((rc = cli_open_queue(&sync_spec, &conn, queue, CLI_QUEUE_READS, &q))) return rc;
    PGconn *pg = db_connect(&sync_spec, d);
    if (!pg) {
        ferry_queue_close(q);
        return CLI_EXIT_RUNTIME;
    }
    ferry_dlq_options dopts = {d->schema};
    ferry_dlq_sync_stats st;
    ferry_error e = {0};
    rc = ferry_dlq_sync(pg, &dopts, q, progress_line, "sync", &st, &e);
    PQfinish(pg);
    ferry_queue_close(q);
    if (rc) {
        fprintf(stderr,
                "ferry dlq sync: stopped after %lld job%s (recorded %lld, already recorded "
                "%lld)\n",
                st.scanned, st.scanned == 1 ? "" : "s", st.recorded, st.already);
        if (e.code == FERRY_EDB || e.code == FERRY_EIO) return db_report(&sync_spec, d->url, &e);
        return cli_report(&sync_spec, &conn, "queue", &e);
    }
    if (o.json) {
        json_t *j = json_object();
        json_object_set_new(j, "scanned", json_integer(st.scanned));
        json_object_set_new(j, "recorded", json_integer(st.recorded));
        json_object_set_new(j, "alreadyRecorded", json_integer(st.already));
        json_object_set_new(j, "gone", json_integer(st.vanished));
        if (put_json(j)) return CLI_EXIT_RUNTIME;
    } else {
        printf("scanned %lld failed job%s: recorded %lld, already recorded %lld, gone meanwhile "
               "%lld\n",
               st.scanned, st.scanned == 1 ? "" : "s", st.recorded, st.already, st.vanished);
    }
    return CLI_EXIT_OK;
}

static int sync_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = sync_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- dlq redrive / purge ------------------------------------------------------------ */

typedef struct act_opts {
    int execute, again;
    const char *actor;
    const char *ids_file;
} act_opts;

/* again last: purge does not take it */
static const opt_def redrive_defs[] = {
    {"execute", OPT_FLAG, NULL, offsetof(act_opts, execute), 0, 0,
     "Do it. Without it, a dry run: prints what would be done and changes nothing (the dry run "
     "is audited)."},
    {"actor", OPT_STRING, "WHO", offsetof(act_opts, actor), 0, 0,
     "Who does it, for the audit (default: the OS user)."},
    {"ids-file", OPT_STRING, "FILE", offsetof(act_opts, ids_file), 0, 0,
     "Only the rows whose ids FILE lists (one per line, as a dry run's lines or `ferry dlq "
     "list` show them; blank lines and lines starting with # ignored; 1..1000 ids), and only "
     "while they still match the other filter options: executes exactly a plan reviewed "
     "before. A listed row not taken is reported skipped."},
    {"again", OPT_FLAG, NULL, offsetof(act_opts, again), 0, 0,
     "Also take rows redriven before (each redrive gets a new job id)."},
};

static const cmd_spec redrive_spec = {
    "dlq redrive",
    "",
    "Re-enqueue dead letters matching the filter (a dry run unless --execute).",
    "Each row becomes a new job in its queue (same prefix, name and data; its options\n"
    "without jobId, delay, repeat, parent and deduplication) with the id\n"
    "dlq-<row id>-<redrive count + 1>. A redrive that stopped half-way (crash, outage) can be\n"
    "run again: a job added before the stop is not added twice. Rows redriven before are\n"
    "skipped unless --again. Every redrive, dry runs included, is audited in\n"
    "dead_letter_redrives (when, who, the filter, the new job id). --prefix (or\n"
    "$FERRY_PREFIX) takes only the rows of that key prefix; without either, rows of every\n"
    "prefix are taken, each redriven under its own.\n"
    "Exit status: 0 when every chosen row was handled (refused rows make it 1).\n",
    0,
    0,
    0,
    0};

static const cmd_spec purge_spec = {
    "dlq purge",
    "",
    "Delete dead letters matching the filter (a dry run unless --execute).",
    "Every purged row is audited in dead_letter_redrives (action purge) first; dry runs are\n"
    "audited too. Redis is not touched.\n",
    0,
    0,
    0,
    0};

typedef struct act_ctx {
    int json, execute, purge;
    int progress_shown; /* a progress line is on the terminal (stderr), to clear first */
} act_ctx;

static const char *STATUS_WORD[2][4] = {{"would redrive", "redriven", "skipped", "refused"},
                                        {"would purge", "purged", "skipped", "refused"}};
static const char *STATUS_JSON[4] = {"would", "done", "skipped", "refused"};

static void act_item(const ferry_dlq_item *it, void *ud) {
    act_ctx *c = ud;
    const ferry_dlq_entry *e = it->entry;
    if (c->json) {
        json_t *j = json_object();
        json_object_set_new(j, "id", json_string(e->id));
        json_object_set_new(j, "status", json_string(STATUS_JSON[it->status & 3]));
        if (e->queue) json_object_set_new(j, "queue", json_string(e->queue));
        if (e->job_id) json_object_set_new(j, "jobId", json_string(e->job_id));
        if (e->job_name) json_object_set_new(j, "name", json_string(e->job_name));
        if (it->new_job_id) json_object_set_new(j, "newJobId", json_string(it->new_job_id));
        if (it->reason) json_object_set_new(j, "reason", json_string(it->reason));
        put_json(j);
        return;
    }
    char q[160], n[160], id[160];
    if (c->progress_shown) { /* the row's line replaces the progress line */
        fprintf(stderr, "\r\033[K");
        c->progress_shown = 0;
    }
    printf("%s %s", STATUS_WORD[c->purge][it->status & 3], e->id);
    if (e->queue)
        printf(" (queue %s, job %s %s)", shown(e->queue, q, sizeof q),
               shown(e->job_name, n, sizeof n), shown(e->job_id, id, sizeof id));
    if (it->new_job_id && !c->purge) printf(" as %s", it->new_job_id);
    if (it->reason) printf(": %s", it->reason);
    printf("\n");
}

static void act_progress(long long done, long long total, void *ud) {
    act_ctx *c = ud;
    if (!isatty(2) || total < 200) return;
    fprintf(stderr, "\r%s: %lld of %lld", c->purge ? "purge" : "redrive", done, total);
    c->progress_shown = done != total;
    if (done == total) fprintf(stderr, "\n");
    fflush(stderr);
}

static const char *default_actor(char *buf, size_t cap) {
    struct passwd *pw = getpwuid(geteuid());
    if (pw && pw->pw_name && *pw->pw_name)
        snprintf(buf, cap, "%s", pw->pw_name);
    else
        snprintf(buf, cap, "uid %u", (unsigned)geteuid());
    return buf;
}

/* The ids of an --ids-file, read into *ids (malloc'd array of malloc'd strings, *n of them).
 * A usage error (printed) returns its exit code. */
#define IDS_FILE_MAX (1 << 20)

static int uuid_form(const char *s) {
    if (strlen(s) != FERRY_DLQ_ID_STRLEN) return 0;
    for (int i = 0; i < FERRY_DLQ_ID_STRLEN; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]) || !s[i]) return 0;
    }
    return 1;
}

static void ids_free(char **ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

/* The whole of an ids file, read with a bound (a 300 MB line or /dev/zero is refused after
 * IDS_FILE_MAX bytes, not held in memory): a NUL-terminated buffer the caller frees, or
 * NULL with the usage error reported in *rc. */
static char *ids_slurp(const cmd_spec *spec, const char *path, size_t *len, int *rc) {
    char b[256];
    FILE *f = fopen(path, "rb");
    if (!f) {
        *rc = opts_usage_error(spec, "--ids-file: cannot open %s: %s", shown(path, b, sizeof b),
                               strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        *rc = opts_usage_error(spec, "--ids-file: %s is a directory", shown(path, b, sizeof b));
        return NULL;
    }
    char *buf = malloc(IDS_FILE_MAX + 2);
    size_t got = 0;
    while (buf && got <= IDS_FILE_MAX) {
        size_t r = fread(buf + got, 1, IDS_FILE_MAX + 1 - got, f);
        if (r == 0) break;
        got += r;
    }
    int bad = buf && ferror(f);
    int read_errno = errno;
    fclose(f);
    if (!buf) {
        *rc = opts_usage_error(spec, "--ids-file: out of memory");
    } else if (bad) {
        *rc = opts_usage_error(spec, "--ids-file: cannot read %s: %s", shown(path, b, sizeof b),
                               strerror(read_errno));
    } else if (got > IDS_FILE_MAX) {
        *rc = opts_usage_error(spec, "--ids-file: over %d bytes", IDS_FILE_MAX);
    } else {
        buf[got] = 0;
        *len = got;
        return buf;
    }
    free(buf);
    return NULL;
}

/* The ids of an ids file: one UUID a line; blank lines, lines starting with # and blanks or
 * CR around an id are ignored; anything else (a NUL byte included) is refused naming the
 * line. */
static int ids_read(const cmd_spec *spec, const char *path, char ***ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    int rc = 0;
    size_t len = 0;
    char *text = ids_slurp(spec, path, &len, &rc);
    if (!text) return rc;
    char **v = calloc(FERRY_DLQ_IDS_MAX, sizeof *v);
    if (!v) rc = opts_usage_error(spec, "--ids-file: out of memory");
    long lineno = 0;
    for (size_t at = 0; rc == 0 && at < len;) {
        char *s = text + at;
        char *nl = memchr(s, '\n', len - at);
        size_t l = nl ? (size_t)(nl - s) : len - at;
        at += l + (nl ? 1 : 0);
        lineno++;
        if (memchr(s, 0, l)) {
            rc = opts_usage_error(spec, "--ids-file: line %ld holds a NUL byte", lineno);
            break;
        }
        s[l] = 0;
        while (*s == ' ' || *s == '\t')
            s++, l--;
        while (l && (s[l - 1] == '\r' || s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = 0;
        if (!l || *s == '#') continue;
        if (!uuid_form(s)) {
            rc = opts_usage_error(spec, "--ids-file: line %ld is not a dead letter id (a UUID)",
                                  lineno);
            break;
        }
        int repeat = 0; /* a repeated id counts once, as the library counts it */
        for (size_t i = 0; !repeat && i < *n; i++)
            repeat = strcasecmp(v[i], s) == 0;
        if (repeat) continue;
        if (*n == FERRY_DLQ_IDS_MAX) {
            rc = opts_usage_error(spec, "--ids-file: more than %d ids (run it in parts)",
                                  FERRY_DLQ_IDS_MAX);
            break;
        }
        if (!(v[*n] = strdup(s))) {
            rc = opts_usage_error(spec, "--ids-file: out of memory");
            break;
        }
        (*n)++;
    }
    free(text);
    if (rc == 0 && *n == 0) rc = opts_usage_error(spec, "--ids-file: no id in the file");
    if (rc) {
        ids_free(v, *n);
        *n = 0;
        return rc;
    }
    *ids = v;
    return 0;
}

static int act_run(int argc, char **argv, db_opts *d, int purge) {
    const cmd_spec *spec = purge ? &purge_spec : &redrive_spec;
    filter_opts fo = {0};
    act_opts ao = {0};
    cli_conn conn = {0};
    opt_group groups[4];
    size_t ng = 0;
    groups[ng++] = (opt_group){"Options", redrive_defs, purge ? 3 : 4, &ao};
    groups[ng++] = (opt_group){"Filter options", filter_defs,
                               purge ? FILTER_DEFS_ALL : FILTER_DEFS_ALL - 1, &fo};
    if (!purge) groups[ng++] = cli_conn_group(&conn, 0);
    groups[ng++] = (opt_group){"Database options", db_defs, DB_DEFS_COUNT, d};
    opt_result res;
    int rc = opts_parse(spec, groups, ng, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if (!purge) fo.prefix = conn.prefix; /* its --prefix; filter_build adds $FERRY_PREFIX */
    ferry_dlq_filter f;
    if ((rc = filter_build(spec, &fo, &f))) return rc;
    char actor[FERRY_DLQ_ACTOR_MAX + 16];
    if (ao.actor) {
        size_t n = strlen(ao.actor);
        int ok = n > 0 && n <= FERRY_DLQ_ACTOR_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = ao.actor[i] >= 0x20 && ao.actor[i] <= 0x7e;
        if (!ok)
            return opts_usage_error(spec, "--actor: 1..%d printable ASCII characters",
                                    FERRY_DLQ_ACTOR_MAX);
    }
    if (!purge && (rc = cli_conn_resolve(spec, &conn))) return rc;
    if ((rc = db_resolve(spec, d))) return rc;
    char **ids = NULL;
    size_t nids = 0;
    if (ao.ids_file && (rc = ids_read(spec, ao.ids_file, &ids, &nids))) return rc;
    f.ids = (const char *const *)ids;
    f.nids = nids;
    PGconn *pg = db_connect(spec, d);
    if (!pg) {
        ids_free(ids, nids);
        return CLI_EXIT_RUNTIME;
    }
    act_ctx c = {fo.json, ao.execute, purge, 0};
    setvbuf(stdout, NULL, _IOLBF, 0); /* each row's line out as it is done, even into a file */
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.execute = ao.execute;
    a.again = ao.again;
    a.actor = ao.actor ? ao.actor : default_actor(actor, sizeof actor);
    a.redis = purge ? NULL : &conn.redis;
    a.item = act_item;
    a.progress = act_progress;
    a.userdata = &c;
    ferry_dlq_options dopts = {d->schema};
    ferry_dlq_action_stats st = {0};
    ferry_error e = {0};
    rc = purge ? ferry_dlq_purge(pg, &dopts, &f, &a, &st, &e)
               : ferry_dlq_redrive(pg, &dopts, &f, &a, &st, &e);
    PQfinish(pg);
    ids_free(ids, nids);
    f.ids = NULL;
    const char *verb = purge ? "purged" : "redriven";
    if (!fo.json && rc == 0) {
        if (!ao.execute)
            printf("dry run: %lld row%s would be %s; nothing changed (run again with --execute)",
                   st.would, st.would == 1 ? "" : "s", verb);
        else
            printf("%lld row%s %s", st.done, st.done == 1 ? "" : "s", verb);
        if (st.skipped) printf(", %lld skipped", st.skipped);
        if (st.refused) printf(", %lld refused", st.refused);
        printf(" (%lld matched)\n", st.matched);
    }
    if (rc) {
        fprintf(stderr, "ferry %s: stopped after %lld row%s\n", spec->name, st.done + st.would,
                st.done + st.would == 1 ? "" : "s");
        if (e.code == FERRY_EDB || e.code == FERRY_EIO || e.code == FERRY_EINVAL)
            return db_report(spec, d->url, &e);
        return cli_report(spec, &conn, "queue", &e);
    }
    return st.refused ? CLI_EXIT_RUNTIME : CLI_EXIT_OK;
}

static int redrive_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = act_run(argc, argv, &d, 0);
    db_opts_free(&d);
    return rc;
}

static int purge_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = act_run(argc, argv, &d, 1);
    db_opts_free(&d);
    return rc;
}

const cli_setup dlq_sync_cmd = {.main = sync_main};
const cli_setup dlq_list_cmd = {.main = list_main};
const cli_setup dlq_show_cmd = {.main = show_main};
const cli_setup dlq_redrive_cmd = {.main = redrive_main};
const cli_setup dlq_purge_cmd = {.main = purge_main};
