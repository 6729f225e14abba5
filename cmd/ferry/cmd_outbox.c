/* cmd_outbox.c - `ferry migrate`, `ferry relay`, `ferry outbox status`, `ferry outbox
 * cleanup`: the command-line side of the transactional outbox (the library does the work,
 * see ferry/outbox.h). The relay handles SIGTERM/SIGINT on a sigwait thread that calls the
 * thread-safe ferry_relay_stop; the batch in progress finishes and the exit status is 0.
 * Every line the relay writes carries a timestamp (logline.h); with --log-format json each is
 * one JSON object, the library's typed events (batches, rows set aside, failures, unknown
 * topics, retention) with their fields and trace ids (docs/logging.md).
 *
 * Test only, on purpose absent from --help and the docs: FERRY_FAULT=relay_after_publish[:N]
 * makes `ferry relay` kill itself with SIGKILL after the Nth batch's jobs were added to
 * Redis and before its COMMIT (N defaults to 1), through ferry_relay_options.fault
 * (tests/integration/test_outbox.c uses it). */
#include <jansson.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "ferry/outbox.h"
#include "logline.h"
#include "metrics_opt.h"
#include "signals.h"
#include "util/printable.h"

#define CLI_EXIT_STARTUP 3 /* relay could not start: database/Redis unreachable, not migrated */

static const cmd_spec relay_spec;

/* One line on stderr: "ferry <cmd>: text", with a timestamp for the relay (a daemon, whose
 * every line is placed in time). */
static void say(const cmd_spec *spec, const char *fmt, ...) FERRY_PRINTF(2, 3);
static void say(const cmd_spec *spec, const char *fmt, ...) {
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (spec == &relay_spec) /* only failures come here: "relay.error" in JSON */
        logline_event("relay", FERRY_LOG_ERROR, "relay.error", NULL, "%s", text);
    else
        fprintf(stderr, "ferry %s: %s\n", spec->name, text);
}

/* ---- database options: db_opts.h ----------------------------------------------------- */

/* The relay's: the same options with its own timeout defaults. */
static const opt_def relay_db_defs[] = {
    {"database", OPT_STRING, "URL", offsetof(db_opts, url), 0, 0, DB_URL_HELP},
    {"database-url-file", OPT_STRING, "FILE", offsetof(db_opts, url_file), 0, 0, DB_URL_FILE_HELP},
    {"schema", OPT_STRING, "NAME", offsetof(db_opts, schema), 0, 0, DB_SCHEMA_HELP},
    {"db-timeout", OPT_INT, "MS", offsetof(db_opts, timeout_ms), 1, 3600000,
     "Database connect and statement timeout in milliseconds (default: connect 5000, "
     "statements 10000)."},
};

/* A library failure on one line; the database URL's password masked (url may be NULL). */
static int report(const cmd_spec *spec, const char *url, const ferry_error *e) {
    char msg[FERRY_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", e->message);
    ferry_outbox_database_url_mask(url, msg);
    say(spec, "%s", msg);
    return e->code == FERRY_EINVAL || e->code == FERRY_ETOOBIG ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
}

/* --routes FILE: a file that cannot be loaded (missing, unreadable, too large, a bad line)
 * is a bad argument, exit 2, whatever the library's code for it (FERRY_EIO for a missing
 * file); one line, which names the file (the library's message starts with it). */
static int load_routes(const cmd_spec *spec, const char *path, ferry_routes **out) {
    ferry_error e = {0};
    if (ferry_routes_load(path, out, &e) == 0) return 0;
    char shown[4 * FERRY_ERROR_MESSAGE_MAX]; /* names the file and what it holds */
    say(spec, "--routes: %s", ferryx_printable(e.message, shown, sizeof shown));
    return e.code == FERRY_ENOMEM ? CLI_EXIT_RUNTIME : CLI_EXIT_USAGE;
}

/* ---- migrate ------------------------------------------------------------------------------ */

typedef struct migrate_opts {
    int dry_run;
} migrate_opts;

static const opt_def migrate_defs[] = {
    {"dry-run", OPT_FLAG, NULL, offsetof(migrate_opts, dry_run), 0, 0,
     "Print the SQL of the pending migrations and change nothing. Without a database (no "
     "--database, --database-url-file or $DATABASE_URL) print every migration."},
};

static const cmd_spec migrate_spec = {
    "migrate",
    "",
    "Create or upgrade ferry's PostgreSQL tables (outbox, inbox, dead letters).",
    "Migrations are versioned and recorded in <schema>.ferry_schema_migrations. All pending\n"
    "ones run in one transaction under an advisory lock, so replicas may all run\n"
    "`ferry migrate` at start-up: one applies, the others wait and find nothing to do.\n"
    "Tables an application created itself are adopted (columns are only added).\n",
    0,
    0,
    0,
    0};

static void print_migration(int version, const char *name, const char *sql, void *ud) {
    int *dry = ud;
    if (*dry)
        printf("-- ferry migration %03d_%s\n%s\n", version, name, sql);
    else
        printf("applying %03d_%s\n", version, name);
    fflush(stdout);
}

static int migrate_run(int argc, char **argv, db_opts *d) {
    migrate_opts o = {0};
    opt_group groups[] = {{"Options", migrate_defs, 1, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&migrate_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    int no_db = !db_given(d);
    if ((rc = db_resolve(&migrate_spec, d))) return rc;
    ferry_error e = {0};
    if (o.dry_run && no_db) {
        ferry_migrate_options mo = {
            .schema = d->schema, .fn = print_migration, .userdata = &o.dry_run};
        if (ferry_outbox_migrations_sql(&mo, &e)) return report(&migrate_spec, d->url, &e);
        return CLI_EXIT_OK;
    }
    PGconn *conn = db_connect(&migrate_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    ferry_migrate_options mo = {.schema = d->schema,
                                .dry_run = o.dry_run,
                                .timeout_ms = (int)db_timeout(d),
                                .fn = print_migration,
                                .userdata = &o.dry_run};
    int applied = 0, version = 0;
    const char *schema = d->schema ? d->schema : FERRY_OUTBOX_DEFAULT_SCHEMA;
    rc = ferry_outbox_migrate(conn, &mo, &applied, &e);
    /* the database's own version: a newer ferry may have migrated it further */
    if (!rc) {
        ferry_outbox_options oo;
        ferry_outbox_options_init(&oo);
        oo.schema = schema;
        rc = ferry_outbox_schema_applied(conn, &oo, &version, &e);
    }
    PQfinish(conn);
    if (rc) return report(&migrate_spec, d->url, &e);
    char names[4 * FERRY_OUTBOX_SCHEMA_MAX + 8];
    ferryx_printable(schema, names, sizeof names);
    int ours = ferry_outbox_schema_version();
    if (o.dry_run)
        printf("-- %d pending migration(s) for schema %s\n", applied, names);
    else if (applied)
        printf("schema %s: applied %d migration(s), now at version %d\n", names, applied, version);
    else if (version > ours)
        printf("schema %s: at version %d, newer than this ferry's %d: nothing applied (a newer "
               "ferry migrated it; upgrade this one)\n",
               names, version, ours);
    else
        printf("schema %s: up to date (version %d)\n", names, version);
    return CLI_EXIT_OK;
}

static int migrate_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = migrate_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- relay -------------------------------------------------------------------------------- */

typedef struct relay_opts {
    const char *routes, *default_job_opts;
    const char *metrics_listen; /* --metrics-listen ADDR:PORT */
    const char *log_format;     /* --log-format text|json */
    int log_events;             /* --log-events: one line per published event */
    long long batch, batch_bytes, poll_ms, max_backoff_ms, retention_days, retention_interval_ms,
        retention_batch, unknown_ms, max_envelope;
} relay_opts;

static const opt_def relay_defs[] = {
    {"routes", OPT_STRING, "FILE", offsetof(relay_opts, routes), 0, 0,
     "Routes file (required): lines of `topic queue:job-name [queue:job-name...]`; # starts a "
     "comment. The relay refuses to start on a bad file (the error names file and line)."},
    {"batch", OPT_INT, "N", offsetof(relay_opts, batch), 1, FERRY_RELAY_BATCH_SIZE_MAX,
     "Rows per batch transaction (default 100). Full batches are followed by the next at once."},
    {"batch-bytes", OPT_INT, "BYTES", offsetof(relay_opts, batch_bytes),
     (long long)FERRY_RELAY_BATCH_BYTES_MIN, (long long)FERRY_RELAY_BATCH_BYTES_MAX,
     "Payload bytes per batch (default 16777216, 16 MiB): a batch takes rows, oldest first, "
     "while their payloads' JSON text adds up to at most this, and at least one row (a larger "
     "row goes alone). Bounds the relay's memory; a batch cut short is followed by the next "
     "at once."},
    {"poll-interval", OPT_INT, "MS", offsetof(relay_opts, poll_ms), 1, FERRY_RELAY_INTERVAL_MAX_MS,
     "Fallback poll when no NOTIFY arrives (default 500)."},
    {"max-backoff", OPT_INT, "MS", offsetof(relay_opts, max_backoff_ms), 1,
     FERRY_RELAY_INTERVAL_MAX_MS,
     "Cap of the retry backoff after Redis or database failures (default 30000)."},
    {"retention-days", OPT_INT, "N", offsetof(relay_opts, retention_days), 0,
     FERRY_RELAY_RETENTION_MAX_S / 86400,
     "Delete published rows older than N days (default 7; 0 = keep them). One relay at a time "
     "does it, at most once per --retention-interval across all relays."},
    {"retention-interval", OPT_INT, "MS", offsetof(relay_opts, retention_interval_ms), 1000,
     FERRY_RELAY_RETENTION_INTERVAL_MAX_MS, "How often retention runs (default 3600000)."},
    {"retention-batch", OPT_INT, "N", offsetof(relay_opts, retention_batch), 1,
     FERRY_RELAY_RETENTION_BATCH_MAX, "Rows deleted per retention statement (default 1000)."},
    {"unknown-report", OPT_INT, "MS", offsetof(relay_opts, unknown_ms), 1000,
     FERRY_RELAY_INTERVAL_MAX_MS,
     "How often rows of unrouted topics are counted and warned about, once per topic "
     "(default 60000)."},
    {"default-job-options", OPT_JSON_OBJECT, "JSON", offsetof(relay_opts, default_job_opts), 0, 0,
     "Default BullMQ JobsOptions for the jobs the relay adds, e.g. "
     "'{\"attempts\":5,\"backoff\":{\"type\":\"exponential\",\"delay\":1000}}'. jobId is always "
     "the event id."},
    {"max-envelope", OPT_INT, "BYTES", offsetof(relay_opts, max_envelope), 1024,
     (long long)FERRY_RELAY_MAX_ENVELOPE_LIMIT,
     "Largest job data written (default 2097152); larger rows are set aside (quarantined_at) "
     "and reported, never retried."},
    {"metrics-listen", OPT_STRING, "ADDR:PORT", offsetof(relay_opts, metrics_listen), 0, 0,
     "Serve Prometheus metrics (GET /metrics) on ADDR:PORT: ADDR an IPv4 literal, [IPv6] or "
     "localhost, PORT 0 for any free one (the log line at start says which). Nothing is "
     "served without it. A port that cannot be bound exits 3. See docs/metrics.md."},
    {"log-format", OPT_STRING, "F", offsetof(relay_opts, log_format), 0, 0,
     "Log lines on stderr: text (default: a UTC timestamp, then the text) or json (one JSON "
     "object per line with \"time\", \"level\", \"event\", \"msg\" and the event's fields, "
     "trace ids included; see docs/logging.md). Never a payload or a password."},
    {"log-events", OPT_FLAG, NULL, offsetof(relay_opts, log_events), 0, 0,
     "Also log one line per published event (its id, topic, trace id and job count), "
     "besides the line per batch: for following a request's trace id into the queues."},
};

static const cmd_spec relay_spec = {
    "relay",
    "--routes FILE",
    "Move outbox events into queues: one job per route target, jobId = event id, data = "
    "{eventId, traceId, payload}.",
    "Each batch is one PostgreSQL transaction: lock unpublished rows (FOR UPDATE SKIP LOCKED,\n"
    "oldest first, up to --batch rows and --batch-bytes of payload), add their jobs (one\n"
    "round trip per queue), mark them published, commit.\n"
    "Relays wake on NOTIFY (trigger made by `ferry migrate`) and poll as a fallback; any\n"
    "number may run. A relay that dies before committing republishes its rows; the queues\n"
    "drop duplicates by jobId. Rows of topics without a route stay unpublished and are\n"
    "reported. When Redis fails the batch is rolled back, attempts/last_error are recorded\n"
    "and the relay retries with capped backoff.\n"
    "At start the relay warns when Redis' maxmemory-policy is not noeviction (Redis could\n"
    "evict job keys). Log lines go to stderr, each with a UTC timestamp (--log-format json:\n"
    "one JSON object per line), one per committed batch with its counts (--log-events: one\n"
    "per event too, with its trace id).\n"
    "SIGTERM/SIGINT/SIGHUP: finish the current batch and exit 0 (a second signal exits at\n"
    "once).\n"
    "Exit status: 0 stopped by a signal, 2 bad arguments or routes file, 3 could not start\n"
    "(database or Redis unreachable, schema not migrated, --metrics-listen port taken), 1\n"
    "other failures.\n",
    0,
    0,
    0,
    1};

typedef struct fault_state {
    long long remaining;
} fault_state;

static void relay_fault(const char *point, void *ud) {
    fault_state *f = ud;
    if (strcmp(point, "relay_after_publish") || f->remaining <= 0) return;
    if (--f->remaining == 0) {
        logline("relay", "FERRY_FAULT=%s: killing this process (SIGKILL)", point);
        raise(SIGKILL);
    }
}

/* What the relay's log and event callbacks need (their userdata). */
typedef struct relay_log_ctx {
    const char *database_url; /* its password is masked in case libpq or the server quotes it */
    const char *redis_url;    /* and this one's, in case a Redis error does */
    int log_events;           /* --log-events */
} relay_log_ctx;

/* A library text made safe for a line: "relay: " dropped, both URLs' passwords masked. */
static void relay_text(const relay_log_ctx *x, const char *message, char *line, size_t cap) {
    if (!strncmp(message, "relay: ", 7)) message += 7;
    snprintf(line, cap, "%s", message);
    ferry_outbox_database_url_mask(x->database_url, line);
    logline_mask_url_password(line, cap, x->redis_url);
}

/* One line of the library at `level`: text "<level>: <message>" as the relay always wrote
 * it; JSON the event with "msg" the message alone (the level has its own member). */
static void relay_line(const relay_log_ctx *x, int level, const char *event, json_t *fields,
                       const char *message) {
    static const char *const names[] = {"debug", "info", "warning", "error"};
    const char *lvl = level >= 0 && level <= 3 ? names[level] : "info";
    char line[2048];
    relay_text(x, message, line, sizeof line);
    if (logline_get_format() == LOGLINE_JSON)
        logline_event("relay", level, event, fields, "%s", line);
    else
        logline_event("relay", level, event, fields, "%s: %s", lvl, line);
}

/* The library's free-text lines: "relay.log". */
static void relay_log(int level, const char *message, void *ud) {
    relay_line(ud, level, "relay.log", NULL, message);
}

/* An event row's members: id, topic, the trace members (logline_set_trace), jobs. */
static void row_fields(json_t *f, const ferry_relay_event_row *row, int with_jobs) {
    logline_set_str(f, "id", row->id);
    logline_set_str(f, "topic", row->topic);
    logline_set_trace(f, row->trace_id);
    if (with_jobs) logline_set_int(f, "jobs", (long long)row->jobs);
}

/* A committed batch: one "relay.batch" line, and with --log-events one "relay.event" line
 * per published event (debug: the batch line says the counts). */
static void relay_published(const relay_log_ctx *x, const ferry_relay_event *ev) {
    json_t *f = json_object();
    logline_set_int(f, "published", (long long)ev->published);
    logline_set_int(f, "jobs", (long long)ev->jobs);
    logline_set_int(f, "quarantined", (long long)ev->quarantined);
    logline_set_int(f, "duration_ms", ev->duration_ms);
    logline_event("relay", FERRY_LOG_INFO, "relay.batch", f,
                  "batch: %zu row(s) published, %zu job(s) added, %zu set aside (%lld ms)",
                  ev->published, ev->jobs, ev->quarantined, ev->duration_ms);
    if (!x->log_events) return;
    for (size_t i = 0; i < ev->nrows; i++) {
        const ferry_relay_event_row *row = &ev->rows[i];
        json_t *e = json_object();
        row_fields(e, row, 1);
        char topic[4 * FERRY_OUTBOX_TOPIC_MAX + 8], trace[4 * FERRY_OUTBOX_TRACE_ID_MAX + 8];
        logline_event("relay", FERRY_LOG_INFO, "relay.event", e,
                      "event %s published: topic=%s trace=%s jobs=%zu", row->id,
                      ferryx_printable(row->topic, topic, sizeof topic),
                      row->trace_id ? ferryx_printable(row->trace_id, trace, sizeof trace) : "-",
                      row->jobs);
    }
}

/* The library's typed events: each as its line (text) or its event with fields (JSON). */
static void relay_event(const ferry_relay_event *ev, void *ud) {
    const relay_log_ctx *x = ud;
    if (ev->kind == FERRY_RELAY_EVENT_PUBLISHED) {
        relay_published(x, ev);
        return;
    }
    json_t *f = json_object();
    const char *name = "relay.log";
    char reason[2048];
    if (ev->reason) relay_text(x, ev->reason, reason, sizeof reason);
    switch (ev->kind) {
    case FERRY_RELAY_EVENT_QUARANTINED:
        name = "relay.quarantined";
        if (ev->nrows) row_fields(f, &ev->rows[0], 0);
        break;
    case FERRY_RELAY_EVENT_BATCH_FAILED:
        name = "relay.batch_failed";
        logline_set_int(f, "rows", (long long)ev->batch_rows);
        logline_set_str(f, "code", ferry_err_name(ev->code));
        logline_set_int(f, "retry_in_ms", ev->retry_in_ms);
        break;
    case FERRY_RELAY_EVENT_UNKNOWN_TOPIC:
        name = "relay.unknown_topic";
        logline_set_str(f, "topic", ev->topic);
        logline_set_int(f, "rows", ev->count);
        break;
    case FERRY_RELAY_EVENT_RETENTION:
        name = "relay.retention";
        logline_set_int(f, "deleted", ev->count);
        logline_set_int(f, "older_than_s", ev->older_than_s);
        if (ev->code) logline_set_str(f, "code", ferry_err_name(ev->code));
        break;
    default:
        break;
    }
    if (ev->reason) logline_set_str(f, "reason", reason);
    relay_line(x, ev->level, name, f, ev->message ? ev->message : "");
}

/* First signal: finish the current batch; second: leave at once. */
static void on_signal(int sig, int count, void *userdata) {
    ferry_relay *relay = userdata;
    json_t *f = json_object();
    logline_set_str(f, "signal", cli_signame(sig));
    logline_set_int(f, "count", count);
    logline_set_str(f, "action", count == 1 ? "drain" : "exit");
    if (count == 1) {
        logline_event("relay", FERRY_LOG_INFO, "relay.signal", f,
                      "%s received: finishing the current batch", cli_signame(sig));
        ferry_relay_stop(relay);
    } else {
        logline_event("relay", FERRY_LOG_WARN, "relay.signal", f,
                      "second signal: exiting now (unfinished rows are published again by the "
                      "next relay)");
        _exit(CLI_EXIT_RUNTIME);
    }
}

/* FERRY_FAULT=relay_after_publish[:N] -> N (1 when absent); 0 when unset; -1 when bad. */
static long long fault_count(void) {
    const char *f = getenv("FERRY_FAULT");
    if (!f || !*f) return 0;
    const char *point = "relay_after_publish";
    size_t n = strlen(point);
    if (strncmp(f, point, n)) return -1;
    if (!f[n]) return 1;
    if (f[n] != ':') return -1;
    char *end;
    long long v = strtoll(f + n + 1, &end, 10);
    return *end || v < 1 ? -1 : v;
}

static int relay_run_with(int argc, char **argv, db_opts *d, ferry_metrics **metrics,
                          ferry_metrics_listener **listener) {
    cli_conn conn = {0};
    relay_opts o = {.retention_days = -1};
    opt_group groups[] = {{"Options", relay_defs, sizeof relay_defs / sizeof relay_defs[0], &o},
                          {"Database options", relay_db_defs, DB_DEFS_COUNT, d},
                          cli_conn_group(&conn, 0)};
    opt_result res;
    int rc = opts_parse(&relay_spec, groups, 3, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if (!o.routes) return opts_usage_error(&relay_spec, "--routes FILE is required");
    if ((rc = cli_conn_resolve(&relay_spec, &conn))) return rc;
    if ((rc = db_resolve(&relay_spec, d))) return rc;
    fault_state fault = {fault_count()};
    if (fault.remaining < 0)
        return opts_usage_error(&relay_spec, "FERRY_FAULT: expected relay_after_publish[:N]");
    logline_format fmt = LOGLINE_TEXT;
    if (o.log_format && logline_format_parse(o.log_format, &fmt))
        return opts_usage_error(&relay_spec, "--log-format: expected text or json, got '%s'",
                                o.log_format);
    logline_set_format(fmt); /* before any thread: every later line is in this format */

    ferry_routes *routes = NULL;
    if ((rc = load_routes(&relay_spec, o.routes, &routes))) return rc;
    if ((rc = cli_metrics_start(&relay_spec, "relay", o.metrics_listen, CLI_EXIT_STARTUP, metrics,
                                listener))) {
        ferry_routes_free(routes);
        return rc;
    }

    ferry_relay_options ro;
    ferry_relay_options_init(&ro);
    ro.database_url = d->url;
    ro.schema = d->schema;
    ro.routes = routes;
    ro.redis = &conn.redis;
    ro.prefix = conn.prefix;
    ro.default_job_opts = o.default_job_opts;
    ro.batch_size = (int)o.batch;
    ro.batch_bytes = (size_t)o.batch_bytes; /* 0: the default */
    ro.poll_interval_ms = (int)o.poll_ms;
    ro.max_backoff_ms = (int)o.max_backoff_ms;
    ro.statement_timeout_ms = (int)d->timeout_ms; /* 0: the relay's defaults (10 s, connect 5 s) */
    ro.connect_timeout_ms = (int)d->timeout_ms;
    ro.retention_s = o.retention_days < 0    ? 0
                     : o.retention_days == 0 ? -1
                                             : o.retention_days * 86400;
    ro.retention_interval_ms = (int)o.retention_interval_ms;
    ro.retention_batch = (int)o.retention_batch;
    ro.unknown_report_ms = (int)o.unknown_ms;
    ro.max_envelope_bytes = (size_t)o.max_envelope;
    relay_log_ctx logctx = {
        .database_url = d->url, .redis_url = conn.redis_url, .log_events = o.log_events};
    ro.log = relay_log;
    ro.event = relay_event;
    ro.log_userdata = &logctx;
    ro.metrics = *metrics;
    if (fault.remaining) {
        ro.fault = relay_fault;
        ro.fault_userdata = &fault;
    }
    ferry_relay *relay = NULL;
    ferry_error e = {0};
    rc = ferry_relay_create(&ro, &relay, &e);
    ferry_routes_free(routes); /* the relay keeps its own copy */
    if (rc) return report(&relay_spec, d->url, &e);

    cli_signals_block(); /* before any thread exists: all inherit the mask */
    cli_signals sigs;
    if (cli_signals_start(&sigs, on_signal, relay) != 0) {
        logline("relay", "cannot start the signal thread");
        ferry_relay_free(relay);
        return CLI_EXIT_RUNTIME;
    }
    char where[300];
    db_display(d, where, sizeof where);
    char host[4 * sizeof conn.host], prefix[512], routes_shown[1024];
    json_t *f = json_object();
    logline_set_str(f, "database", where);
    logline_set_str(f, "redis", conn.host);
    logline_set_str(f, "prefix", conn.prefix);
    logline_set_str(f, "routes", o.routes);
    logline_set_str(f, "schema", d->schema ? d->schema : FERRY_OUTBOX_DEFAULT_SCHEMA);
    logline_set_str(f, "version", ferry_version());
    logline_event("relay", FERRY_LOG_INFO, "relay.start", f,
                  "database %s, redis %s, prefix %s, routes %s", where,
                  ferryx_printable(conn.host, host, sizeof host),
                  ferryx_printable(conn.prefix, prefix, sizeof prefix),
                  ferryx_printable(o.routes, routes_shown, sizeof routes_shown));
    rc = ferry_relay_run(relay, &e);
    if (rc) {
        ferry_outbox_database_url_mask(d->url, e.message);
        logline_mask_url_password(e.message, sizeof e.message, conn.redis_url);
        json_t *ef = json_object();
        logline_set_str(ef, "code", ferry_err_name(e.code));
        logline_event("relay", FERRY_LOG_ERROR, "relay.start_failed", ef, "could not start: %s",
                      e.message);
        rc = CLI_EXIT_STARTUP;
    }
    cli_signals_stop(&sigs);
    ferry_relay_stats stats;
    ferry_relay_get_stats(relay, &stats);
    if (!rc) {
        json_t *sf = json_object();
        logline_set_int(sf, "published", (long long)stats.published);
        logline_set_int(sf, "batches", (long long)stats.batches);
        logline_set_int(sf, "jobs", (long long)stats.jobs_added);
        logline_set_int(sf, "failed_batches", (long long)stats.failed_batches);
        logline_set_int(sf, "quarantined", (long long)stats.quarantined);
        logline_set_int(sf, "retention_deleted", (long long)stats.retention_deleted);
        logline_event("relay", FERRY_LOG_INFO, "relay.exit", sf,
                      "exiting: %llu row(s) published in %llu batch(es), %llu job(s) added, %llu "
                      "failed batch(es)",
                      stats.published, stats.batches, stats.jobs_added, stats.failed_batches);
    }
    ferry_relay_free(relay);
    return rc;
}

/* The relay is freed before the listener stops and the registry goes. */
static int relay_run(int argc, char **argv, db_opts *d) {
    ferry_metrics *metrics = NULL;
    ferry_metrics_listener *listener = NULL;
    int rc = relay_run_with(argc, argv, d, &metrics, &listener);
    ferry_metrics_listener_stop(listener);
    ferry_metrics_destroy(metrics);
    return rc;
}

static int relay_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = relay_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- outbox status ------------------------------------------------------------------------ */

typedef struct status_opts {
    int json;
    const char *routes;
} status_opts;

static const opt_def status_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(status_opts, json), 0, 0, "Print one JSON object."},
    {"routes", OPT_STRING, "FILE", offsetof(status_opts, routes), 0, 0,
     "The relay's routes file: topics it does not name are reported as unknown."},
};

static const cmd_spec status_spec = {
    "outbox status",
    "",
    "Show the outbox backlog: unpublished rows, the oldest one's age, counts per topic, topics "
    "without a route, rows with errors.",
    NULL,
    0,
    0,
    0,
    0};

static const char *age_text(double s, char *buf, size_t cap) {
    if (s < 1)
        snprintf(buf, cap, "%.0f ms", s * 1000);
    else if (s < 120)
        snprintf(buf, cap, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, cap, "%.1f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
    return buf;
}

static int status_json(const char *schema, const ferry_outbox_status *s, int have_routes) {
    json_t *o = json_object(), *topics = json_array();
    json_object_set_new(o, "schema", json_string(schema));
    json_object_set_new(o, "schemaVersion", json_integer(s->schema_version));
    json_object_set_new(o, "unpublished", json_integer(s->unpublished));
    json_object_set_new(o, "oldestUnpublishedAgeSeconds", json_real(s->oldest_age_s));
    json_object_set_new(o, "withErrors", json_integer(s->with_errors));
    json_object_set_new(o, "quarantined", json_integer(s->quarantined));
    json_object_set_new(o, "unknownTopicRows",
                        have_routes ? json_integer(s->unknown_rows) : json_null());
    for (size_t i = 0; i < s->ntopics; i++) {
        const ferry_outbox_topic_status *t = &s->topics[i];
        json_t *x = json_object();
        json_object_set_new(x, "topic", json_string(t->topic));
        json_object_set_new(x, "unpublished", json_integer(t->unpublished));
        json_object_set_new(x, "withErrors", json_integer(t->with_errors));
        json_object_set_new(x, "quarantined", json_integer(t->quarantined));
        json_object_set_new(x, "oldestAgeSeconds", json_real(t->oldest_age_s));
        json_object_set_new(x, "routed", t->known < 0 ? json_null() : json_boolean(t->known));
        json_array_append_new(topics, x);
    }
    json_object_set_new(o, "topics", topics);
    json_object_set_new(o, "topicsTruncated", json_boolean(s->topics_truncated));
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
    json_decref(o);
    if (!text) {
        fprintf(stderr, "ferry outbox status: out of memory\n");
        return CLI_EXIT_RUNTIME;
    }
    puts(text);
    free(text);
    return CLI_EXIT_OK;
}

static int status_run(int argc, char **argv, db_opts *d) {
    status_opts o = {0};
    opt_group groups[] = {{"Options", status_defs, 2, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&status_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if ((rc = db_resolve(&status_spec, d))) return rc;
    ferry_error e = {0};
    ferry_routes *routes = NULL;
    if (o.routes && (rc = load_routes(&status_spec, o.routes, &routes))) return rc;
    PGconn *conn = db_connect(&status_spec, d);
    if (!conn) {
        ferry_routes_free(routes);
        return CLI_EXIT_RUNTIME;
    }
    ferry_outbox_status *s = NULL;
    ferry_outbox_options oo = {.schema = d->schema};
    rc = ferry_outbox_status_get(conn, &oo, routes, &s, &e);
    PQfinish(conn);
    if (rc) {
        ferry_routes_free(routes);
        return report(&status_spec, d->url, &e);
    }
    const char *schema = d->schema ? d->schema : FERRY_OUTBOX_DEFAULT_SCHEMA;
    if (o.json) {
        rc = status_json(schema, s, routes != NULL);
    } else {
        char shown[4 * FERRY_OUTBOX_SCHEMA_MAX + 8];
        printf("schema:        %s (version %d)\n", ferryx_printable(schema, shown, sizeof shown),
               s->schema_version);
        char age[32];
        printf("unpublished:   %lld", s->unpublished);
        if (s->unpublished) printf(" (oldest %s)", age_text(s->oldest_age_s, age, sizeof age));
        printf("\nwith errors:   %lld\nquarantined:   %lld\n", s->with_errors, s->quarantined);
        if (routes) printf("unknown topic: %lld row(s)\n", s->unknown_rows);
        if (s->ntopics) {
            printf("\n%-40s %11s %7s %11s  %-10s%s\n", "TOPIC", "UNPUBLISHED", "ERRORS",
                   "QUARANTINED", "OLDEST", routes ? " ROUTED" : "");
            for (size_t i = 0; i < s->ntopics; i++) {
                const ferry_outbox_topic_status *t = &s->topics[i];
                char topic[4 * FERRY_OUTBOX_TOPIC_MAX + 8];
                printf("%-40s %11lld %7lld %11lld  %-10s%s\n",
                       ferryx_printable(t->topic, topic, sizeof topic), t->unpublished,
                       t->with_errors, t->quarantined, age_text(t->oldest_age_s, age, sizeof age),
                       t->known < 0 ? ""
                       : t->known   ? " yes"
                                    : " NO");
            }
            if (s->topics_truncated) printf("(more topics not shown)\n");
        }
    }
    ferry_outbox_status_free(s);
    ferry_routes_free(routes);
    return rc;
}

static int status_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = status_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

/* ---- outbox cleanup ----------------------------------------------------------------------- */

typedef struct cleanup_opts {
    long long older_than_days, batch;
} cleanup_opts;

static const opt_def cleanup_defs[] = {
    {"older-than-days", OPT_INT, "N", offsetof(cleanup_opts, older_than_days), 0,
     FERRY_RELAY_RETENTION_MAX_S / 86400,
     "Delete published rows published more than N days ago (required)."},
    {"batch", OPT_INT, "N", offsetof(cleanup_opts, batch), 1, FERRY_RELAY_RETENTION_BATCH_MAX,
     "Rows per DELETE statement, each its own transaction (default 1000)."},
};

static const cmd_spec cleanup_spec = {
    "outbox cleanup",
    "--older-than-days N",
    "Delete old published outbox rows now (what the relay's retention task does).",
    NULL,
    0,
    0,
    0,
    0};

static int cleanup_run(int argc, char **argv, db_opts *d) {
    cleanup_opts o = {.older_than_days = -1};
    opt_group groups[] = {{"Options", cleanup_defs, 2, &o},
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&cleanup_spec, groups, 2, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(res.pos);
    if (o.older_than_days < 0)
        return opts_usage_error(&cleanup_spec, "--older-than-days N is required");
    if ((rc = db_resolve(&cleanup_spec, d))) return rc;
    PGconn *conn = db_connect(&cleanup_spec, d);
    if (!conn) return CLI_EXIT_RUNTIME;
    long long deleted = 0;
    ferry_error e = {0};
    ferry_outbox_options oo = {.schema = d->schema};
    rc = ferry_outbox_cleanup(conn, &oo, o.older_than_days * 86400, (int)o.batch, 0, &deleted, &e);
    PQfinish(conn);
    if (rc) return report(&cleanup_spec, d->url, &e);
    printf("deleted %lld published row(s)\n", deleted);
    return CLI_EXIT_OK;
}

static int cleanup_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = cleanup_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

const cli_setup migrate_cmd = {.main = migrate_main};
const cli_setup relay_cmd = {.main = relay_main};
const cli_setup outbox_status_cmd = {.main = status_main};
const cli_setup outbox_cleanup_cmd = {.main = cleanup_main};
