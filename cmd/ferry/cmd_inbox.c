/* cmd_inbox.c - `ferry inbox status` and `ferry inbox cleanup`: the idempotent consumers'
 * markers (processed_messages) per consumer, and their retention (the library does the work,
 * see ferry/inbox.h). */
#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "ferry/inbox.h"
#include "timetext.h"
#include "util/printable.h"

/* ---- inbox status ------------------------------------------------------------------------ */

typedef struct status_opts {
    int json;
} status_opts;

static const opt_def status_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(status_opts, json), 0, 0, "Print one JSON object."},
};

static const cmd_spec status_spec = {"inbox status",
                                     "",
                                     "Show the idempotent consumers' markers: rows per consumer, "
                                     "the oldest and newest, and their ages.",
                                     NULL,
                                     0,
                                     0,
                                     0,
                                     0};

static int status_json(const ferry_inbox_status *s) {
    json_t *o = json_object(), *cs = json_array();
    json_object_set_new(o, "totalRows", json_integer(s->total_rows));
    for (size_t i = 0; i < s->n; i++) {
        const ferry_inbox_consumer_status *c = &s->consumers[i];
        json_t *x = json_object();
        json_object_set_new(x, "consumer", json_string(c->consumer));
        json_object_set_new(x, "rows", json_integer(c->rows));
        json_object_set_new(x, "oldestEpochMs", json_integer(c->oldest_epoch_ms));
        json_object_set_new(x, "newestEpochMs", json_integer(c->newest_epoch_ms));
        json_object_set_new(x, "oldestAgeSeconds",
                            json_real((double)(s->now_epoch_ms - c->oldest_epoch_ms) / 1000));
        json_array_append_new(cs, x);
    }
    json_object_set_new(o, "consumers", cs);
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!text) {
        fprintf(stderr, "ferry inbox status: out of memory\n");
        return CLI_EXIT_RUNTIME;
    }
    puts(text);
    free(text);
    return CLI_EXIT_OK;
}

static int status_run(int argc, char **argv, db_opts *d) {
    status_opts o = {0};
    opt_group groups[] = {{"Options", status_defs, 1, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&status_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if ((rc = db_resolve(&status_spec, d))) return rc;
    PGconn *conn = db_connect(&status_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    ferry_inbox_options io;
    ferry_inbox_options_init(&io);
    io.schema = d->schema;
    ferry_inbox_status *s = NULL;
    ferry_error e = {0};
    rc = ferry_inbox_status_get(conn, &io, &s, &e);
    PQfinish(conn);
    if (rc) return db_report(&status_spec, d->url, &e);
    if (o.json) {
        rc = status_json(s);
    } else {
        printf("markers: %lld\n", s->total_rows);
        if (s->n) {
            printf("\n%-40s %12s  %-20s %-10s  %-20s\n", "CONSUMER", "ROWS", "OLDEST", "AGE",
                   "NEWEST");
            for (size_t i = 0; i < s->n; i++) {
                const ferry_inbox_consumer_status *c = &s->consumers[i];
                char name[4 * FERRY_INBOX_CONSUMER_MAX + 8], old[32], new_[32], age[32];
                printf("%-40s %12lld  %-20s %-10s  %-20s\n",
                       ferryx_printable(c->consumer, name, sizeof name), c->rows,
                       cli_utc_text(c->oldest_epoch_ms, old, sizeof old),
                       cli_age_text(s->now_epoch_ms - c->oldest_epoch_ms, age, sizeof age),
                       cli_utc_text(c->newest_epoch_ms, new_, sizeof new_));
            }
        }
        rc = CLI_EXIT_OK;
    }
    ferry_inbox_status_free(s);
    return rc;
}

static int status_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = status_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- inbox cleanup ----------------------------------------------------------------------- */

typedef struct cleanup_opts {
    const char *older_than;
    long long batch;
} cleanup_opts;

static const opt_def cleanup_defs[] = {
    {"older-than", OPT_STRING, "DURATION", offsetof(cleanup_opts, older_than), 0, 0,
     "Delete markers processed longer ago than DURATION: a whole number and a unit, s, m, h "
     "or d (90s, 30m, 12h, 7d), at most 100 years (required). Keep it longer than any "
     "message can be redelivered (the queues' retries and the relay's retention)."},
    {"batch", OPT_INT, "N", offsetof(cleanup_opts, batch), 1, FERRY_INBOX_BATCH_MAX,
     "Rows per DELETE statement, each its own transaction, so no long lock is held on a big "
     "table (default 1000)."},
};

static const cmd_spec cleanup_spec = {
    "inbox cleanup",
    "--older-than DURATION",
    "Delete old idempotent-consumer markers (processed_messages) in bounded batches.",
    NULL,
    0,
    0,
    0,
    0};

static int cleanup_run(int argc, char **argv, db_opts *d) {
    cleanup_opts o = {0};
    opt_group groups[] = {{"Options", cleanup_defs, 2, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&cleanup_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if (!o.older_than) return opts_usage_error(&cleanup_spec, "--older-than DURATION is required");
    long long age = cli_duration_s(o.older_than);
    if (age < 0) {
        char shown[256];
        return opts_usage_error(&cleanup_spec,
                                "--older-than: expected a whole number and a unit s, m, h or d "
                                "(e.g. 7d), at most 100 years; got '%s'",
                                ferryx_printable(o.older_than, shown, sizeof shown));
    }
    if ((rc = db_resolve(&cleanup_spec, d))) return rc;
    PGconn *conn = db_connect(&cleanup_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    ferry_inbox_options io;
    ferry_inbox_options_init(&io);
    io.schema = d->schema;
    long long deleted = 0;
    ferry_error e = {0};
    rc = ferry_inbox_cleanup(conn, &io, age, (long)o.batch, &deleted, &e);
    PQfinish(conn);
    if (rc) {
        fprintf(stderr, "ferry inbox cleanup: deleted %lld marker(s) before the failure\n",
                deleted);
        return db_report(&cleanup_spec, d->url, &e);
    }
    printf("deleted %lld marker(s)\n", deleted);
    return CLI_EXIT_OK;
}

static int cleanup_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = cleanup_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

const cli_setup inbox_status_cmd = {.main = status_main};
const cli_setup inbox_cleanup_cmd = {.main = cleanup_main};
