/* cmd_scheduler.c - `ferry scheduler upsert | list | remove`: BullMQ job schedulers (a cron
 * pattern in a time zone, or a fixed interval) from the command line, e.g. in a deploy step
 * that upserts the same schedulers on every release. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "ferry/scheduler.h"
#include "jsonw.h"
#include "util/printable.h"

/* Latest --start: the first run must come before 2039-09, where delayed scores stop being
 * exact (the library refuses later ones). --end only bounds the runs, so it may be any
 * instant JavaScript can hold (Number.MAX_SAFE_INTEGER), as in Node. */
#define START_MS_MAX 2199023255551LL
#define END_MS_MAX 9007199254740991LL

/* ---- scheduler upsert ------------------------------------------------------------------ */

typedef struct upsert_opts {
    const char *cron, *tz, *name, *data, *opts;
    long long every, limit, start, end, offset;
    int immediately, json;
} upsert_opts;

static const opt_def upsert_defs[] = {
    {"cron", OPT_STRING, "EXPR", offsetof(upsert_opts, cron), 0, 0,
     "Cron pattern: 5 fields (minute hour day month weekday) or 6 with seconds first, or "
     "@daily, @hourly... Quote it: --cron '0 3 * * *'."},
    {"tz", OPT_STRING, "ZONE", offsetof(upsert_opts, tz), 0, 0,
     "IANA time zone of the cron pattern, e.g. Asia/Ho_Chi_Minh (default UTC)."},
    {"every", OPT_INT, "MS", offsetof(upsert_opts, every), 1, FERRY_SCHEDULER_EVERY_MAX,
     "Run every MS milliseconds instead of on a cron pattern (1 to 315360000000: ten "
     "years)."},
    {"name", OPT_STRING, "NAME", offsetof(upsert_opts, name), 0, 0,
     "Job name of the iterations (default: the scheduler ID)."},
    {"data", OPT_JSON, "JSON", offsetof(upsert_opts, data), 0, 0,
     "Job data of the iterations (default {})."},
    {"opts", OPT_JSON_OBJECT, "JSON", offsetof(upsert_opts, opts), 0, 0,
     "BullMQ job options of the iterations, e.g. '{\"attempts\":3,\"removeOnComplete\":100}' "
     "(jobId, delay and repeat are set by the scheduler)."},
    {"limit", OPT_INT, "N", offsetof(upsert_opts, limit), 1, 9007199254740991LL,
     "Stop after N iterations (1 to 9007199254740991)."},
    {"start", OPT_INT, "MS", offsetof(upsert_opts, start), 1, START_MS_MAX,
     "No iteration before this time (Unix epoch milliseconds, 1 to 2199023255551: the first "
     "run must come before 2039-09)."},
    {"end", OPT_INT, "MS", offsetof(upsert_opts, end), 1, END_MS_MAX,
     "No iteration after this time (Unix epoch milliseconds in the future, up to "
     "9007199254740991)."},
    {"offset", OPT_INT, "MS", offsetof(upsert_opts, offset), 1, FERRY_SCHEDULER_EVERY_MAX,
     "With --every: run at multiples of the interval plus MS (1 to 315360000000; MS equal to "
     "the interval aligns runs to its exact multiples). Without it (BullMQ has no offset 0) "
     "the first run is now and the next ones follow every interval from it."},
    {"immediately", OPT_FLAG, NULL, offsetof(upsert_opts, immediately), 0, 0,
     "With --cron: run the first iteration now, then on the pattern."},
    {"json", OPT_FLAG, NULL, offsetof(upsert_opts, json), 0, 0,
     "Print {\"id\", \"jobId\", \"delay\"} as JSON instead of the job id."},
};

static const cmd_spec upsert_spec = {
    "scheduler upsert",
    "QUEUE ID",
    "Create or replace job scheduler ID of QUEUE (BullMQ upsertJobScheduler) and print the id "
    "of its pending iteration. Give --cron EXPR [--tz ZONE] or --every MS.",
    "Running it again with the same ID (on every deploy, from several replicas) replaces the\n"
    "scheduler instead of adding one; an unchanged --every keeps its timing. The schedule is\n"
    "kept going by the workers: whichever worker (ferry or Node BullMQ) fetches an iteration\n"
    "adds the next one.\n",
    2,
    2,
    0,
    0};

static upsert_opts upsert_o;

static int upsert_check(cli_ctx *x) {
    const upsert_opts *uo = x->opts;
    if (!uo->cron == !uo->every)
        return opts_usage_error(&upsert_spec, uo->cron ? "give --cron or --every, not both"
                                                       : "give --cron EXPR or --every MS");
    if (uo->tz && !uo->cron) return opts_usage_error(&upsert_spec, "--tz applies to --cron only");
    if (uo->offset && !uo->every)
        return opts_usage_error(&upsert_spec, "--offset applies to --every only");
    if (uo->immediately && !uo->cron)
        return opts_usage_error(&upsert_spec, "--immediately applies to --cron only");
    /* Checked here too (the library would refuse them as well) so that the message names
     * the options, not the API's fields. */
    if (uo->immediately && uo->start)
        return opts_usage_error(&upsert_spec, "--immediately cannot be combined with --start");
    if (uo->start && uo->end && uo->start > uo->end)
        return opts_usage_error(&upsert_spec, "--start %lld is after --end %lld", uo->start,
                                uo->end);
    long long now_ms = (long long)time(NULL) * 1000;
    if (uo->end && uo->end < now_ms)
        return opts_usage_error(&upsert_spec, "--end %lld is in the past (now is about %lld)",
                                uo->end, now_ms);
    return 0;
}

static int scheduler_upsert(cli_ctx *x) {
    const upsert_opts *uo = x->opts;
    ferry_scheduler_spec s;
    ferry_scheduler_spec_init(&s);
    s.pattern = uo->cron;
    s.tz = uo->tz;
    s.every_ms = uo->every;
    s.limit = uo->limit;
    s.start_date_ms = uo->start;
    s.end_date_ms = uo->end;
    s.offset_ms = uo->offset;
    s.immediately = uo->immediately;
    s.name = uo->name;
    s.data_json = uo->data;
    s.opts_json = uo->opts;
    long long delay = 0;
    char *job_id = NULL;
    ferry_error err = {0};
    int rc = CLI_EXIT_OK;
    if (ferry_scheduler_upsert(x->q, x->r.pos[1], &s, &job_id, &delay, &err) != 0) {
        rc = cli_report(&upsert_spec, &x->conn, NULL, &err);
    } else if (uo->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_str(&w, "id", x->r.pos[1]);
        jsonw_str(&w, "jobId", job_id);
        jsonw_int(&w, "delay", delay);
        jsonw_end(&w);
    } else {
        /* Escaped (the id is user text) and uncut: 4 output bytes per input byte at most. */
        size_t cap = 4 * strlen(job_id) + 8;
        char *sjob = malloc(cap);
        if (!sjob) {
            fprintf(stderr, "ferry %s: out of memory\n", upsert_spec.name);
            rc = CLI_EXIT_RUNTIME;
        } else {
            printf("%s\n", ferryx_printable(job_id, sjob, cap));
            free(sjob);
        }
    }
    free(job_id);
    return rc;
}

const cli_setup scheduler_upsert_cmd = {.spec = &upsert_spec,
                                        .defs = upsert_defs,
                                        .ndefs = sizeof upsert_defs / sizeof upsert_defs[0],
                                        .opts = &upsert_o,
                                        .check = upsert_check,
                                        .body = scheduler_upsert};

/* ---- scheduler list -------------------------------------------------------------------- */

typedef struct list_opts {
    int json;
} list_opts;

static const opt_def list_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(list_opts, json), 0, 0,
     "Print one JSON object per scheduler with the keys of BullMQ's getJobSchedulers() (key, "
     "name, next, iterationCount, limit, startDate, endDate, tz, pattern, every, offset, "
     "template)."},
};

static const cmd_spec list_spec = {
    "scheduler list",
    "QUEUE",
    "List the job schedulers of QUEUE (ferry's and Node BullMQ's), soonest next run first.",
    NULL,
    1,
    1,
    0,
    0};

static void iso_ms(long long ms, char *buf, size_t cap) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    char day[32] = "?";
    if (ms >= 0 && gmtime_r(&secs, &tm)) strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03lldZ", day, ms >= 0 ? ms % 1000 : 0);
}

/* Stored option names back to the public ones, as Node's Job.optsFromJSON does. */
static void decode_opts(json_t *o) {
    static const char *const names[][2] = {{"de", "deduplication"},
                                           {"fpof", "failParentOnFailure"},
                                           {"cpof", "continueParentOnFailure"},
                                           {"idof", "ignoreDependencyOnFailure"},
                                           {"kl", "keepLogs"},
                                           {"rdof", "removeDependencyOnFailure"}};
    if (!json_is_object(o)) return;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        json_t *v = json_object_get(o, names[k][0]);
        if (!v) continue;
        if (json_object_set(o, names[k][1], v) == 0) json_object_del(o, names[k][0]);
    }
    const char *tele[][2] = {{"tm", "metadata"}, {"omc", "omitContext"}};
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_object_get(o, tele[k][0]);
        if (!v) continue;
        json_t *t = json_object_get(o, "telemetry");
        if (!json_is_object(t)) {
            t = json_object();
            if (json_object_set_new(o, "telemetry", t) != 0) return; /* no memory */
        }
        if (json_object_set(t, tele[k][1], v) == 0) json_object_del(o, tele[k][0]);
    }
}

/* A stored part that is not JSON, as a JSON string. Text that is not UTF-8 either (written
 * by some other client) cannot be one: its non-ASCII bytes are shown as '?'. */
static json_t *text_as_json(const char *text) {
    json_t *v = json_string(text);
    if (v) return v;
    char *ascii = strdup(text);
    if (!ascii) return NULL;
    for (char *p = ascii; *p; p++)
        if ((unsigned char)*p >= 0x80) *p = '?';
    v = json_string(ascii);
    free(ascii);
    return v;
}

/* {"data": ..., "opts": ...} as Node's template (only the parts stored), or NULL when none
 * is stored. malloc'd. *oom is set when memory ran out (the template then cannot be shown:
 * better said than silently missing). */
static char *template_json(const ferry_scheduler_info *i, int *oom) {
    *oom = 0;
    if (!i->data_json && !i->opts_json) return NULL;
    json_t *t = json_object();
    const char *parts[2][2] = {{"data", i->data_json}, {"opts", i->opts_json}};
    int ok = t != NULL;
    for (int k = 0; ok && k < 2; k++) {
        if (!parts[k][1]) continue;
        json_t *v = json_loads(parts[k][1], JSON_DECODE_ANY, NULL);
        if (k == 1) decode_opts(v);
        if (!v) v = text_as_json(parts[k][1]);
        ok = v && json_object_set_new(t, parts[k][0], v) == 0;
    }
    char *s = ok ? json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    *oom = !s;
    return s;
}

static void list_json_one(const ferry_scheduler_info *i) {
    jsonw w;
    jsonw_begin(&w, stdout);
    jsonw_str(&w, "key", i->id);
    jsonw_str(&w, "name", i->name);
    jsonw_int(&w, "next", i->next_ms);
    if (i->iteration_count) jsonw_int(&w, "iterationCount", i->iteration_count);
    if (i->limit) jsonw_int(&w, "limit", i->limit);
    if (i->start_date_ms) jsonw_int(&w, "startDate", i->start_date_ms);
    if (i->end_date_ms) jsonw_int(&w, "endDate", i->end_date_ms);
    if (i->tz) jsonw_str(&w, "tz", i->tz);
    if (i->pattern) jsonw_str(&w, "pattern", i->pattern);
    if (i->every_ms) jsonw_int(&w, "every", i->every_ms);
    if (i->offset_ms >= 0) jsonw_int(&w, "offset", i->offset_ms);
    int oom = 0;
    char *t = template_json(i, &oom);
    if (t) jsonw_raw(&w, "template", t);
    free(t);
    if (oom) {
        char sid[256];
        fprintf(stderr, "ferry %s: out of memory: template of %s not shown\n", list_spec.name,
                ferryx_printable(i->id, sid, sizeof sid));
    }
    jsonw_end(&w);
}

static void list_human(const ferry_scheduler_info *items, size_t n) {
    printf("%-24s %-20s %-40s %-24s %s\n", "ID", "NAME", "SCHEDULE", "NEXT (UTC)", "ITERATIONS");
    for (size_t k = 0; k < n; k++) {
        const ferry_scheduler_info *i = &items[k];
        char sched[512], next[48], iters[64], sid[256], sname[256], spat[200], stz[100];
        if (!i->name)
            snprintf(sched, sizeof sched, "(no scheduler hash: legacy repeatable job?)");
        else if (i->pattern)
            snprintf(sched, sizeof sched, "cron '%s' %s",
                     ferryx_printable(i->pattern, spat, sizeof spat),
                     ferryx_printable(i->tz ? i->tz : "UTC", stz, sizeof stz));
        else if (i->offset_ms > 0)
            snprintf(sched, sizeof sched, "every %lld ms +%lld ms", i->every_ms, i->offset_ms);
        else
            snprintf(sched, sizeof sched, "every %lld ms", i->every_ms);
        iso_ms(i->next_ms, next, sizeof next);
        if (i->limit)
            snprintf(iters, sizeof iters, "%lld of %lld", i->iteration_count, i->limit);
        else
            snprintf(iters, sizeof iters, "%lld", i->iteration_count);
        printf("%-24s %-20s %-40s %-24s %s\n", ferryx_printable(i->id, sid, sizeof sid),
               ferryx_printable(i->name ? i->name : "-", sname, sizeof sname), sched, next, iters);
    }
}

static list_opts list_o;

static int scheduler_list(cli_ctx *x) {
    const list_opts *lo = x->opts;
    ferry_scheduler_info *all = NULL;
    size_t nall = 0;
    int rc = CLI_EXIT_OK;
    for (;;) {
        ferry_scheduler_info *page = NULL;
        size_t n = 0;
        ferry_error err = {0};
        if (ferry_scheduler_list(x->q, (long long)nall, FERRY_SCHEDULER_LIST_MAX, 1, &page, &n,
                                 &err) != 0) {
            rc = cli_report(&list_spec, &x->conn, NULL, &err);
            goto out;
        }
        ferry_scheduler_info *grown = n ? realloc(all, (nall + n) * sizeof *all) : all;
        if (n && !grown) {
            ferry_scheduler_list_free(page, n);
            fprintf(stderr, "ferry %s: out of memory\n", list_spec.name);
            rc = CLI_EXIT_RUNTIME;
            goto out;
        }
        all = grown;
        if (n) memcpy(all + nall, page, n * sizeof *page);
        nall += n;
        free(page); /* the strings now belong to `all` */
        if (n < FERRY_SCHEDULER_LIST_MAX) break;
    }
    if (lo->json)
        for (size_t k = 0; k < nall; k++)
            list_json_one(&all[k]);
    else
        list_human(all, nall);
out:
    ferry_scheduler_list_free(all, nall);
    return rc;
}

const cli_setup scheduler_list_cmd = {
    .spec = &list_spec, .defs = list_defs, .ndefs = 1, .opts = &list_o, .body = scheduler_list};

/* ---- scheduler remove ------------------------------------------------------------------ */

static const cmd_spec remove_spec = {
    "scheduler remove",
    "QUEUE ID",
    "Remove job scheduler ID of QUEUE and its pending iteration (an iteration already running "
    "finishes, and no further one is added).",
    NULL,
    2,
    2,
    0,
    0};

static int scheduler_remove(cli_ctx *x) {
    ferry_error err = {0};
    if (ferry_scheduler_remove(x->q, x->r.pos[1], &err) == 0) return CLI_EXIT_OK;
    if (err.code != FERRY_ENOTFOUND) return cli_report(&remove_spec, &x->conn, NULL, &err);
    char sid[256], sq[256];
    fprintf(stderr, "ferry %s: no job scheduler %s in queue %s\n", remove_spec.name,
            ferryx_printable(x->r.pos[1], sid, sizeof sid),
            ferryx_printable(x->r.pos[0], sq, sizeof sq));
    return CLI_EXIT_RUNTIME;
}

const cli_setup scheduler_remove_cmd = {.spec = &remove_spec, .body = scheduler_remove};
