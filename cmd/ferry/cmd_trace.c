/* cmd_trace.c - `ferry trace EVENT_ID`: everything known about one outbox event
 * (ferry/trace.h), one section per hop (outbox, routes, jobs, inbox, dead letters,
 * redrives), or one JSON object with --json (the shape of GET /api/trace/{eventId}). */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "db_opts.h"
#include "ferry/trace.h"
#include "timetext.h"
#include "util/printable.h"

typedef struct trace_opts {
    int json;
    const char *routes;
    long long max_queues;
} trace_opts;

static const opt_def trace_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(trace_opts, json), 0, 0, "Print one JSON object."},
    {"routes", OPT_STRING, "FILE", offsetof(trace_opts, routes), 0, 0,
     "The relay's routes file: the jobs are looked for only in the queues the event's topic "
     "routes to (and those of its dead letters). Without it, in every queue under the "
     "prefix."},
    {"max-queues", OPT_INT, "N", offsetof(trace_opts, max_queues), 1, FERRY_TRACE_QUEUES_MAX,
     "Without --routes, look in at most N queues (default 1000)."},
};

static const cmd_spec trace_spec = {
    "trace",
    "EVENT_ID",
    "Show everything known about one outbox event: its outbox row, its routes, the jobs it "
    "became, the inbox markers, the dead letters and their redrives.",
    "EVENT_ID is the event's id (a UUID, as ferry_outbox_append returns it; the relay gives\n"
    "each job it adds for the event that id as jobId). Nothing is changed anywhere.\n"
    "Exit status: 0 when something knows the id, 1 when nothing does (or on an error), 2 for\n"
    "bad arguments.\n",
    1,
    1,
    0,
    0};

/* ---- text ----------------------------------------------------------------------------- */

static const char *shown(const char *s, char *buf, size_t cap) {
    return ferryx_printable(s ? s : "", buf, cap);
}

static const char *when(long long ms, char *buf, size_t cap) {
    if (ms <= 0) return "-";
    return cli_utc_text(ms, buf, cap);
}

static void text_out(const ferry_trace *t) {
    char a[512], b[512], c[512], d[64];
    printf("event %s\n", t->event_id);
    printf("\noutbox:\n");
    if (!t->outbox) {
        printf("  (no row: never appended, or deleted by retention)\n");
    } else {
        const ferry_trace_outbox *o = t->outbox;
        printf("  topic %s, aggregate %s\n", shown(o->topic, a, sizeof a),
               shown(o->aggregate_id, b, sizeof b));
        printf("  created %s, ", when(o->created_at_ms, d, sizeof d));
        if (o->published_at_ms)
            printf("published %s", when(o->published_at_ms, d, sizeof d));
        else if (o->quarantined_at_ms)
            printf("set aside (quarantined) %s", when(o->quarantined_at_ms, d, sizeof d));
        else
            printf("not published yet");
        printf(", %ld attempt%s\n", o->attempts, o->attempts == 1 ? "" : "s");
        if (o->trace_id) printf("  trace id %s\n", shown(o->trace_id, a, sizeof a));
        if (o->last_error) printf("  last error: %s\n", shown(o->last_error, a, sizeof a));
    }
    printf("\nroutes:\n");
    if (!t->routes_known)
        printf("  (not given: --routes FILE)\n");
    else if (!t->nroutes)
        printf("  (none for this topic)\n");
    for (size_t i = 0; i < t->nroutes; i++)
        printf("  %s:%s\n", shown(t->routes[i].queue, a, sizeof a),
               shown(t->routes[i].name, b, sizeof b));
    printf("\njobs:\n");
    if (!t->njobs) printf("  (none found)\n");
    for (size_t i = 0; i < t->njobs; i++) {
        const ferry_trace_job *j = &t->jobs[i];
        printf("  %s job %s (%s): %s, %lld attempt%s made", shown(j->queue, a, sizeof a),
               shown(j->job->id, b, sizeof b), shown(j->job->name, c, sizeof c),
               j->job->state ? j->job->state : "unknown", j->job->attempts_made,
               j->job->attempts_made == 1 ? "" : "s");
        if (j->job->finished_on > 0)
            printf(", finished %s", when(j->job->finished_on, d, sizeof d));
        printf("\n");
        if (j->redrive_of) printf("    redrive of dead letter %s\n", j->redrive_of);
        if (j->job->failed_reason && *j->job->failed_reason)
            printf("    failed: %s\n", shown(j->job->failed_reason, a, sizeof a));
    }
    if (!t->queues_complete) printf("  (not every queue was looked in: see --max-queues)\n");
    printf("\ninbox:\n");
    if (!t->ninbox) printf("  (no consumer marked it processed)\n");
    for (size_t i = 0; i < t->ninbox; i++)
        printf("  %s processed it %s\n", shown(t->inbox[i].consumer, a, sizeof a),
               when(t->inbox[i].processed_at_ms, d, sizeof d));
    printf("\ndead letters:\n");
    if (!t->ndead_letters) printf("  (none)\n");
    for (size_t i = 0; i < t->ndead_letters; i++) {
        const ferry_trace_dead_letter *x = &t->dead_letters[i];
        printf("  %s: %s job %s (%s) failed %s after %ld attempt%s\n", x->id,
               shown(x->queue, a, sizeof a), shown(x->job_id, b, sizeof b),
               shown(x->name, c, sizeof c), when(x->failed_at_ms, d, sizeof d), x->attempts_made,
               x->attempts_made == 1 ? "" : "s");
        printf("    error: %s\n", shown(x->error, a, sizeof a));
        if (x->redrive_count)
            printf("    redriven %ld time%s, last as %s by %s\n", x->redrive_count,
                   x->redrive_count == 1 ? "" : "s", shown(x->redrive_job_id, b, sizeof b),
                   shown(x->redriven_by, c, sizeof c));
    }
    printf("\nredrives:\n");
    if (!t->nredrives) printf("  (none)\n");
    for (size_t i = 0; i < t->nredrives; i++) {
        const ferry_trace_redrive *r = &t->redrives[i];
        printf("  %s %s%s of %s by %s", when(r->redriven_at_ms, d, sizeof d),
               r->dry_run ? "dry-run " : "", shown(r->action, a, sizeof a), r->dead_letter_id,
               shown(r->redriven_by, b, sizeof b));
        if (r->new_job_id) printf(" -> job %s", shown(r->new_job_id, c, sizeof c));
        printf("\n");
    }
}

static int trace_run(int argc, char **argv, db_opts *d) {
    trace_opts o = {0};
    cli_conn conn = {0};
    opt_group groups[] = {{"Options", trace_defs, sizeof trace_defs / sizeof trace_defs[0], &o},
                          cli_conn_group(&conn, 0),
                          {"Database options", db_defs, DB_DEFS_COUNT, d}};
    opt_result res;
    int rc = opts_parse(&trace_spec, groups, 3, argc, argv, &res);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    const char *id = res.pos[0];
    free(res.pos);
    if ((rc = cli_conn_resolve(&trace_spec, &conn))) return rc;
    if ((rc = db_resolve(&trace_spec, d))) return rc;
    ferry_routes *routes = NULL;
    ferry_error e = {0};
    if (o.routes && ferry_routes_load(o.routes, &routes, &e)) {
        char msg[4 * FERRY_ERROR_MESSAGE_MAX];
        fprintf(stderr, "ferry trace: --routes: %s\n",
                ferryx_printable(e.message, msg, sizeof msg));
        return e.code == FERRY_ENOMEM ? CLI_EXIT_RUNTIME : CLI_EXIT_USAGE;
    }
    PGconn *pg = db_connect(&trace_spec, d);
    if (!pg) {
        ferry_routes_free(routes);
        return CLI_EXIT_RUNTIME;
    }
    ferry_trace_options to;
    ferry_trace_options_init(&to);
    to.schema = d->schema;
    to.redis = &conn.redis;
    to.prefix = conn.prefix;
    to.routes = routes;
    to.max_queues = (size_t)o.max_queues;
    ferry_trace *t = NULL;
    rc = ferry_trace_get(pg, &to, id, &t, &e);
    PQfinish(pg);
    ferry_routes_free(routes);
    /* the library's messages start "trace: "; this command's own prefix says so already */
    if (rc && strncmp(e.message, "trace: ", 7) == 0)
        memmove(e.message, e.message + 7, strlen(e.message + 7) + 1);
    if (rc == FERRY_ENOTFOUND) {
        char msg[4 * FERRY_ERROR_MESSAGE_MAX];
        fprintf(stderr, "ferry trace: %s\n", ferryx_printable(e.message, msg, sizeof msg));
        return CLI_EXIT_RUNTIME;
    }
    if (rc) {
        if (e.code == FERRY_EDB || e.code == FERRY_EIO) return db_report(&trace_spec, d->url, &e);
        return cli_report(&trace_spec, &conn, NULL, &e);
    }
    if (o.json) {
        char *text = ferry_trace_json(t);
        ferry_trace_free(t);
        if (!text) {
            fprintf(stderr, "ferry trace: out of memory\n");
            return CLI_EXIT_RUNTIME;
        }
        puts(text);
        free(text);
        return CLI_EXIT_OK;
    }
    text_out(t);
    ferry_trace_free(t);
    return CLI_EXIT_OK;
}

static int trace_main(int argc, char **argv) {
    db_opts d = {0};
    int rc = trace_run(argc, argv, &d);
    db_opts_free(&d);
    return rc;
}

const cli_setup trace_cmd = {.main = trace_main};
