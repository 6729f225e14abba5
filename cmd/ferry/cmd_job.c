/* cmd_job.c - `ferry job show | remove`: inspect or delete one job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "jsonw.h"
#include "util/printable.h"

/* Print "job ID not found in queue QUEUE" for FERRY_ENOTFOUND, else the library message. */
static int job_report(const cmd_spec *spec, const cli_conn *c, const char *queue, const char *id,
                      const ferry_error *err) {
    if (err->code == FERRY_ENOTFOUND) {
        char sid[256], sq[256];
        fprintf(stderr, "ferry %s: job %s not found in queue %s\n", spec->name,
                ferryx_printable(id, sid, sizeof sid), ferryx_printable(queue, sq, sizeof sq));
        return CLI_EXIT_RUNTIME;
    }
    return cli_report(spec, c, NULL, err);
}

/* ---- job show ------------------------------------------------------------------------- */

typedef struct show_opts {
    int json;
} show_opts;

static const opt_def show_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(show_opts, json), 0, 0,
     "Print one JSON object with BullMQ Job keys (data, opts, returnvalue and stacktrace "
     "parsed)."},
};

static const cmd_spec show_spec = {
    "job show", "QUEUE ID", "Show everything stored about job ID of QUEUE.", NULL, 2, 2, 0, 0};

static void print_ms(const char *label, long long ms) {
    if (ms < 0) {
        printf("%-16s -\n", label);
        return;
    }
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char iso[32] = "";
    if (gmtime_r(&secs, &tm)) strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    printf("%-16s %lld (%s.%03lldZ)\n", label, ms, iso, ms % 1000);
}

/* Text from Redis, escaped by ferryx_printable so a name, id or reason cannot forge lines
 * or send terminal codes; uncut (the buffer holds the longest escaped form). */
static void print_str(const char *label, const char *v) {
    if (!v) {
        printf("%-16s -\n", label);
        return;
    }
    size_t cap = 4 * strlen(v) + 8; /* at most 4 output bytes per input byte, + "...\0" */
    char *buf = malloc(cap);
    if (!buf) {
        printf("%-16s (not shown: out of memory)\n", label);
        return;
    }
    printf("%-16s %s\n", label, ferryx_printable(v, buf, cap));
    free(buf);
}

/* Stored JSON (data, opts, ...): as stored when that is safe on one line, its backslashes
 * being JSON's own escapes; escaped as print_str does when it holds a raw control
 * character (a line break between tokens too), C1 control or invalid UTF-8. */
static void print_json_text(const char *label, const char *v) {
    if (v && ferryx_printable_clean(v))
        printf("%-16s %s\n", label, v);
    else
        print_str(label, v);
}

static void show_human(const ferry_job_info *j) {
    print_str("id", j->id);
    print_str("name", j->name);
    print_str("state", j->state);
    print_json_text("data", j->data);
    print_json_text("opts", j->opts);
    print_json_text("progress", j->progress);
    print_json_text("returnvalue", j->returnvalue);
    print_str("failedReason", j->failed_reason);
    print_json_text("stacktrace", j->stacktrace);
    printf("%-16s %lld\n", "attemptsMade", j->attempts_made);
    printf("%-16s %lld\n", "attemptsStarted", j->attempts_started);
    printf("%-16s %lld\n", "stalledCounter", j->stalled_count);
    print_ms("timestamp", j->timestamp);
    print_ms("processedOn", j->processed_on);
    print_ms("finishedOn", j->finished_on);
    if (j->delay >= 0)
        printf("%-16s %lld\n", "delay", j->delay);
    else
        print_str("delay", NULL);
    if (j->priority >= 0)
        printf("%-16s %lld\n", "priority", j->priority);
    else
        print_str("priority", NULL);
    print_str("processedBy", j->processed_by);
}

static void show_json(const ferry_job_info *j) {
    jsonw w;
    jsonw_begin(&w, stdout);
    jsonw_str(&w, "id", j->id);
    jsonw_str(&w, "name", j->name);
    jsonw_raw(&w, "data", j->data);
    jsonw_raw(&w, "opts", j->opts);
    jsonw_str(&w, "state", j->state);
    jsonw_raw(&w, "progress", j->progress);
    jsonw_raw(&w, "returnvalue", j->returnvalue);
    jsonw_str(&w, "failedReason", j->failed_reason);
    jsonw_raw(&w, "stacktrace", j->stacktrace);
    jsonw_int(&w, "attemptsMade", j->attempts_made);
    jsonw_int(&w, "attemptsStarted", j->attempts_started);
    jsonw_int(&w, "stalledCounter", j->stalled_count);
    jsonw_int_or_null(&w, "timestamp", j->timestamp);
    jsonw_int_or_null(&w, "processedOn", j->processed_on);
    jsonw_int_or_null(&w, "finishedOn", j->finished_on);
    jsonw_int_or_null(&w, "delay", j->delay);
    jsonw_int_or_null(&w, "priority", j->priority);
    jsonw_str(&w, "processedBy", j->processed_by);
    jsonw_end(&w);
}

static show_opts show_o;

static int job_show(cli_ctx *x) {
    show_opts *so = x->opts;
    ferry_job_info *info = NULL;
    ferry_error err = {0};
    if (ferry_queue_get_job(x->q, x->r.pos[1], &info, &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    if (so->json)
        show_json(info);
    else
        show_human(info);
    ferry_job_info_free(info);
    return CLI_EXIT_OK;
}

const cli_setup job_show_cmd = {
    .spec = &show_spec, .defs = show_defs, .ndefs = 1, .opts = &show_o, .body = job_show};

/* ---- job remove ----------------------------------------------------------------------- */

static const cmd_spec remove_spec = {
    "job remove",
    "QUEUE ID",
    "Remove job ID of QUEUE in any state except active (locked by a worker).",
    NULL,
    2,
    2,
    0,
    0};

static int job_remove(cli_ctx *x) {
    ferry_error err = {0};
    if (ferry_queue_remove_job(x->q, x->r.pos[1], &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    return CLI_EXIT_OK;
}

const cli_setup job_remove_cmd = {.spec = &remove_spec, .body = job_remove};
