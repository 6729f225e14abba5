/* cmd_queue_admin.c - `ferry queue retry | promote | clean | drain | list | workers |
 * events`: the queue administration commands over many jobs, each Node BullMQ 6.7.0's Queue
 * method of the same name in effect (docs/cli.md, docs/queue.md). */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "jsonw.h"
#include "timetext.h"
#include "util/printable.h"

/* User text (a queue name) as messages show it. */
#define SHOWN(s, buf) ferryx_printable((s), (buf), sizeof(buf))

/* ---- queue retry / promote ------------------------------------------------------------ */

typedef struct requeue_opts {
    const char *state;
    long long limit;
    int json;
    /* queue retry's selector (ferry_queue_retry_selected) */
    const char *name, *reason_contains, *data_contains;
    long long scan_max;
} requeue_opts;

static requeue_opts requeue_o;

#define REQUEUE_LIMIT_HELP "At most N jobs (default: all), in chunks of 1000 per Redis script call."

static const opt_def retry_defs[] = {
    {"state", OPT_STRING, "STATE", offsetof(requeue_opts, state), 0, 0,
     "failed (default) or completed: the set whose jobs are retried."},
    {"limit", OPT_INT, "N", offsetof(requeue_opts, limit), 1, FERRY_QUEUE_MOVE_MAX,
     REQUEUE_LIMIT_HELP},
    {"name", OPT_STRING, "NAME", offsetof(requeue_opts, name), 0, 0,
     "Only the jobs named exactly NAME (a selective retry: see below)."},
    {"reason-contains", OPT_STRING, "TEXT", offsetof(requeue_opts, reason_contains), 0, 0,
     "Only the jobs whose failedReason contains TEXT (bytes, case-sensitive; at most 4096; "
     "state failed only)."},
    {"data-contains", OPT_STRING, "TEXT", offsetof(requeue_opts, data_contains), 0, 0,
     "Only the jobs whose data (its JSON text, as stored) contains TEXT (at most 4096 "
     "bytes)."},
    {"scan-max", OPT_INT, "N", offsetof(requeue_opts, scan_max), 1, FERRY_QUEUE_FIND_SCAN_MAX,
     "With a selector: look at N jobs at most (default 100000), then stop and say so."},
    {"json", OPT_FLAG, NULL, offsetof(requeue_opts, json), 0, 0,
     "Print {\"retried\": N} instead of the sentence (with a selector also total, "
     "scanned, matched, skipped and complete)."},
};

static const cmd_spec retry_spec = {
    "queue retry",
    "QUEUE",
    "Retry the failed (or completed) jobs of QUEUE (BullMQ queue.retryJobs) and print how "
    "many went back to waiting.",
    "Every job of the set that finished before the command started, oldest first, goes\n"
    "to the head of wait, so the oldest runs first; as in BullMQ, priority and lifo are\n"
    "not applied (each job goes to wait) and the attempt counts stay: a job with no\n"
    "attempts left fails for good at its next error (ferry job retry --reset-attempts\n"
    "retries one job with all its attempts). Jobs lose finishedOn, processedOn and their\n"
    "failedReason or returnvalue. Each chunk is one atomic script; after a failure midway\n"
    "the jobs moved so far stay moved and the message says how many.\n"
    "\n"
    "With --name, --reason-contains, --data-contains or --scan-max it is a selective retry\n"
    "instead: the set is read 200 jobs at a time, oldest first, each page matched inside\n"
    "Redis, and each match retried as ferry job retry retries it (priority and lifo\n"
    "apply). Only jobs finished before the command started are looked at. A progress\n"
    "line goes to stderr after every page; a match that another client moved meanwhile\n"
    "is counted as skipped. --limit does not combine with these options.\n",
    1,
    1,
    0,
    0};

static int queue_retry_check(cli_ctx *x) {
    const requeue_opts *ro = x->opts;
    char s[128];
    if (ro->state && strcmp(ro->state, "failed") != 0 && strcmp(ro->state, "completed") != 0)
        return opts_usage_error(x->spec, "--state: expected failed or completed, got '%s'",
                                SHOWN(ro->state, s));
    int selective = ro->name || ro->reason_contains || ro->data_contains || ro->scan_max;
    if (selective && ro->limit)
        return opts_usage_error(x->spec, "--limit does not combine with --name, "
                                         "--reason-contains, --data-contains or --scan-max");
    const char *texts[] = {ro->reason_contains, ro->data_contains};
    const char *names[] = {"--reason-contains", "--data-contains"};
    for (int i = 0; i < 2; i++) {
        if (texts[i] && strlen(texts[i]) > FERRY_RETRY_SELECT_TEXT_MAX)
            return opts_usage_error(x->spec, "%s: at most %d bytes (got %zu)", names[i],
                                    FERRY_RETRY_SELECT_TEXT_MAX, strlen(texts[i]));
        if (texts[i] && !texts[i][0]) return opts_usage_error(x->spec, "%s: empty text", names[i]);
    }
    if (ro->reason_contains && ro->state && strcmp(ro->state, "completed") == 0)
        return opts_usage_error(x->spec,
                                "--reason-contains needs --state failed (completed jobs have "
                                "no failedReason)");
    if (ro->name && strlen(ro->name) > FERRY_JOB_NAME_MAX)
        return opts_usage_error(x->spec, "--name: at most %d bytes", FERRY_JOB_NAME_MAX);
    return 0;
}

/* A failure midway: the library's message, then how many moved before it. */
static int requeue_failed(cli_ctx *x, const ferry_error *err, long long moved, const char *verb) {
    int rc = cli_report(x->spec, &x->conn, NULL, err);
    if (moved > 0)
        fprintf(stderr, "ferry %s: %lld job%s %s before the failure\n", x->spec->name, moved,
                moved == 1 ? "" : "s", verb);
    return rc;
}

static int retry_progress(void *ctx, const ferry_queue_retry_counts *c) {
    const cli_ctx *x = ctx;
    fprintf(stderr, "ferry %s: scanned %lld of %lld job%s, %lld match%s, %lld retried\n",
            x->spec->name, c->scanned, c->total, c->total == 1 ? "" : "s", c->matched,
            c->matched == 1 ? "" : "es", c->retried);
    return 0;
}

/* queue retry with a selector: ferry_queue_retry_selected. */
static int queue_retry_selected(cli_ctx *x, const char *state) {
    const requeue_opts *ro = x->opts;
    ferry_queue_retry_select sel = {.state = state,
                                    .name = ro->name,
                                    .reason_contains = ro->reason_contains,
                                    .data_contains = ro->data_contains,
                                    .scan_max = ro->scan_max,
                                    .progress = retry_progress,
                                    .progress_ctx = x};
    ferry_queue_retry_counts c;
    int ended = 0;
    ferry_error err = {0};
    if (ferry_queue_retry_selected(x->q, &sel, &c, &ended, &err) != 0)
        return requeue_failed(x, &err, c.retried, "were retried");
    char shown[256];
    if (ro->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_int(&w, "retried", c.retried);
        jsonw_int(&w, "total", c.total);
        jsonw_int(&w, "scanned", c.scanned);
        jsonw_int(&w, "matched", c.matched);
        jsonw_int(&w, "skipped", c.skipped);
        jsonw_bool(&w, "complete", ended == FERRY_RETRY_SELECT_DONE);
        jsonw_end(&w);
    } else {
        printf("queue %s: %lld %s job%s retried (%lld matched, %lld skipped, %lld scanned)\n",
               SHOWN(x->r.pos[0], shown), c.retried, state, c.retried == 1 ? "" : "s", c.matched,
               c.skipped, c.scanned);
    }
    if (ended == FERRY_RETRY_SELECT_SCAN_MAX)
        fprintf(stderr,
                "ferry %s: stopped at the scan limit after scanning %lld of %lld jobs "
                "(--scan-max %lld); the rest were not looked at: run it again to go on (the "
                "jobs retried have left the set, the ones that did not match are looked at "
                "again) or give a larger --scan-max\n",
                x->spec->name, c.scanned, c.total,
                ro->scan_max ? ro->scan_max : (long long)FERRY_QUEUE_FIND_SCAN_DEFAULT);
    return CLI_EXIT_OK;
}

static int queue_retry(cli_ctx *x) {
    const requeue_opts *ro = x->opts;
    const char *state = ro->state ? ro->state : "failed";
    if (ro->name || ro->reason_contains || ro->data_contains || ro->scan_max)
        return queue_retry_selected(x, state);
    ferry_error err = {0};
    long long moved = 0;
    if (ferry_queue_retry_jobs(x->q, state, ro->limit, &moved, &err) != 0)
        return requeue_failed(x, &err, moved, "were retried");
    char shown[256];
    if (ro->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_int(&w, "retried", moved);
        jsonw_end(&w);
    } else {
        printf("queue %s: %lld %s job%s retried\n", SHOWN(x->r.pos[0], shown), moved, state,
               moved == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

const cli_setup queue_retry_cmd = {.spec = &retry_spec,
                                   .defs = retry_defs,
                                   .ndefs = sizeof retry_defs / sizeof retry_defs[0],
                                   .opts = &requeue_o,
                                   .check = queue_retry_check,
                                   .body = queue_retry};

static const opt_def promote_defs[] = {
    {"limit", OPT_INT, "N", offsetof(requeue_opts, limit), 1, FERRY_QUEUE_MOVE_MAX,
     REQUEUE_LIMIT_HELP},
    {"json", OPT_FLAG, NULL, offsetof(requeue_opts, json), 0, 0,
     "Print {\"promoted\": N} instead of the sentence."},
};

static const cmd_spec promote_spec = {
    "queue promote",
    "QUEUE",
    "Promote the delayed jobs of QUEUE to run now (BullMQ queue.promoteJobs) and print how "
    "many.",
    "Soonest due first, each job goes to the head of wait. As in BullMQ's bulk promotion,\n"
    "priority is not applied (each job goes to wait) and the job's delay field is kept;\n"
    "ferry job promote moves one job the way Node's job.promote does (to prioritized when\n"
    "it has a priority, delay set to 0).\n",
    1,
    1,
    0,
    0};

static int queue_promote(cli_ctx *x) {
    const requeue_opts *ro = x->opts;
    ferry_error err = {0};
    long long moved = 0;
    if (ferry_queue_promote_jobs(x->q, ro->limit, &moved, &err) != 0)
        return requeue_failed(x, &err, moved, "were promoted");
    char shown[256];
    if (ro->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_int(&w, "promoted", moved);
        jsonw_end(&w);
    } else {
        printf("queue %s: %lld delayed job%s promoted\n", SHOWN(x->r.pos[0], shown), moved,
               moved == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

const cli_setup queue_promote_cmd = {.spec = &promote_spec,
                                     .defs = promote_defs,
                                     .ndefs = sizeof promote_defs / sizeof promote_defs[0],
                                     .opts = &requeue_o,
                                     .body = queue_promote};

/* ---- queue clean / drain -------------------------------------------------------------- */

typedef struct clean_opts {
    const char *state, *grace;
    long long limit;
    int json, delayed;
    long long grace_ms; /* --grace, checked */
} clean_opts;

static clean_opts clean_o;

static const opt_def clean_defs[] = {
    {"state", OPT_STRING, "STATE", offsetof(clean_opts, state), 0, 0,
     "Required: completed, failed, delayed, wait (or waiting), paused (the legacy BullMQ v5 "
     "list) or prioritized."},
    {"grace", OPT_STRING, "DURATION", offsetof(clean_opts, grace), 0, 0,
     "Required: keep jobs younger than this: 0, or a whole number with a unit: ms, s, m, "
     "h or d (500ms, 90s, 30m, 12h, 7d)."},
    {"limit", OPT_INT, "N", offsetof(clean_opts, limit), 1, FERRY_QUEUE_MOVE_MAX,
     "Delete at most N jobs (default: all), in calls of at most 10000."},
    {"json", OPT_FLAG, NULL, offsetof(clean_opts, json), 0, 0,
     "Print {\"count\": N, \"ids\": [...]} instead of the text."},
};

static const cmd_spec clean_spec = {
    "queue clean",
    "QUEUE --state STATE --grace DURATION",
    "Delete the jobs of QUEUE in STATE older than the grace period (BullMQ queue.clean) and "
    "print how many, then their ids, one per line.",
    "A job's age is measured as BullMQ measures it: completed and failed jobs by when\n"
    "they finished; wait and paused jobs by finishedOn, else processedOn, else when they\n"
    "were added; delayed jobs by processedOn, else when they were added; prioritized\n"
    "jobs by when they were added. Each call (at most 10000 jobs) looks only at that\n"
    "many jobs at the oldest end (for delayed: the soonest due, for prioritized: the\n"
    "most urgent), so older jobs behind younger ones there stay, as in BullMQ. The\n"
    "pending iteration of a job scheduler is never deleted. Each call writes a `cleaned`\n"
    "event with its count, also a count of 0 (as Node does).\n",
    1,
    1,
    0,
    0};

/* "0", "<n>ms", or what cli_duration_s reads, into ms; -1 when none of these. */
static long long grace_ms(const char *text) {
    size_t len = strlen(text);
    if (!strcmp(text, "0")) return 0;
    if (len > 2 && !strcmp(text + len - 2, "ms")) {
        char num[32];
        long long v = 0;
        if (len - 2 >= sizeof num) return -1;
        memcpy(num, text, len - 2);
        num[len - 2] = 0;
        if (opts_parse_ll(num, &v) || v < 0 || v > FERRY_LIMIT_MS_MAX) return -1;
        return v;
    }
    long long secs = cli_duration_s(text);
    if (secs < 0 || secs > FERRY_LIMIT_MS_MAX / 1000) return -1;
    return secs * 1000;
}

static int queue_clean_check(cli_ctx *x) {
    clean_opts *co = x->opts;
    char s[128];
    if (!co->state) return opts_usage_error(x->spec, "--state is required");
    static const char *const states[] = {"completed", "failed", "delayed",    "wait",
                                         "waiting",   "paused", "prioritized"};
    size_t i = 0;
    while (i < sizeof states / sizeof states[0] && strcmp(states[i], co->state) != 0)
        i++;
    if (i == sizeof states / sizeof states[0])
        return opts_usage_error(x->spec,
                                "--state: expected completed, failed, delayed, wait, paused or "
                                "prioritized, got '%s'",
                                SHOWN(co->state, s));
    if (!co->grace) return opts_usage_error(x->spec, "--grace is required (0 to delete all)");
    if ((co->grace_ms = grace_ms(co->grace)) < 0)
        return opts_usage_error(x->spec,
                                "--grace: expected 0 or a whole number with a unit (500ms, 90s, "
                                "30m, 12h, 7d), got '%s'",
                                SHOWN(co->grace, s));
    return 0;
}

static int queue_clean(cli_ctx *x) {
    const clean_opts *co = x->opts;
    ferry_error err = {0};
    char **ids = NULL;
    size_t n = 0;
    int rc = ferry_queue_clean(x->q, co->state, co->grace_ms, co->limit, &ids, &n, &err);
    char shown[256];
    if (rc != 0) {
        rc = cli_report(x->spec, &x->conn, NULL, &err);
        if (n)
            fprintf(stderr, "ferry %s: %zu job%s deleted before the failure\n", x->spec->name, n,
                    n == 1 ? "" : "s");
    } else if (co->json) {
        char *arr = NULL;
        size_t alen = 0;
        FILE *m = open_memstream(&arr, &alen);
        if (!m) {
            perror("ferry queue clean");
            rc = CLI_EXIT_RUNTIME;
        } else {
            fputc('[', m);
            for (size_t i = 0; i < n; i++) {
                if (i) fputc(',', m);
                jsonw_write_string(m, ids[i]);
            }
            fputc(']', m);
            fclose(m);
            jsonw w;
            jsonw_begin(&w, stdout);
            jsonw_int(&w, "count", (long long)n);
            jsonw_raw(&w, "ids", arr);
            jsonw_end(&w);
            free(arr);
        }
    } else {
        printf("queue %s: %zu %s job%s deleted\n", SHOWN(x->r.pos[0], shown), n, co->state,
               n == 1 ? "" : "s");
        char id[512];
        for (size_t i = 0; i < n; i++)
            printf("  %s\n", SHOWN(ids[i], id));
    }
    ferry_queue_job_ids_free(ids, n);
    return rc;
}

const cli_setup queue_clean_cmd = {.spec = &clean_spec,
                                   .defs = clean_defs,
                                   .ndefs = sizeof clean_defs / sizeof clean_defs[0],
                                   .opts = &clean_o,
                                   .check = queue_clean_check,
                                   .body = queue_clean};

static const opt_def drain_defs[] = {
    {"delayed", OPT_FLAG, NULL, offsetof(clean_opts, delayed), 0, 0,
     "Delete the delayed jobs too (BullMQ drain(true))."},
    {"json", OPT_FLAG, NULL, offsetof(clean_opts, json), 0, 0,
     "Print {\"deleted\": N} instead of the sentence."},
};

static const cmd_spec drain_spec = {
    "queue drain",
    "QUEUE [--delayed]",
    "Delete every job of QUEUE that waits to run (BullMQ queue.drain): wait, prioritized "
    "and, with --delayed, delayed. Prints how many.",
    "Active, completed and failed jobs stay, and so do the pending iterations of job\n"
    "schedulers. Jobs are deleted 1000 per Redis script call, so a long queue does not\n"
    "block Redis; jobs added while it runs may or may not be deleted. Pause the queue\n"
    "first if workers should not take jobs meanwhile.\n",
    1,
    1,
    0,
    0};

static int queue_drain(cli_ctx *x) {
    const clean_opts *co = x->opts;
    ferry_error err = {0};
    long long removed = 0;
    char shown[256];
    if (ferry_queue_drain(x->q, co->delayed, &removed, &err) != 0) {
        int rc = cli_report(x->spec, &x->conn, NULL, &err);
        if (removed > 0)
            fprintf(stderr, "ferry %s: %lld job%s deleted before the failure\n", x->spec->name,
                    removed, removed == 1 ? "" : "s");
        return rc;
    }
    if (co->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_int(&w, "deleted", removed);
        jsonw_end(&w);
    } else {
        printf("queue %s: drained, %lld job%s deleted\n", SHOWN(x->r.pos[0], shown), removed,
               removed == 1 ? "" : "s");
    }
    return CLI_EXIT_OK;
}

const cli_setup queue_drain_cmd = {.spec = &drain_spec,
                                   .defs = drain_defs,
                                   .ndefs = sizeof drain_defs / sizeof drain_defs[0],
                                   .opts = &clean_o,
                                   .body = queue_drain};

/* ---- queue list ----------------------------------------------------------------------- */

typedef struct qlist_opts {
    long long max;
    int json;
} qlist_opts;

static qlist_opts qlist_o = {.max = 1000};

static const opt_def qlist_defs[] = {
    {"max", OPT_INT, "N", offsetof(qlist_opts, max), 1, FERRY_QUEUE_NAMES_MAX,
     "List at most N queues (default 1000)."},
    {"json", OPT_FLAG, NULL, offsetof(qlist_opts, json), 0, 0,
     "Print {\"prefix\", \"complete\", \"queues\": [{\"name\", the counts, \"isPaused\"}]}."},
};

static const cmd_spec qlist_spec = {
    "queue list",
    "",
    "List the queues under the key prefix (--prefix), with their job counts.",
    "A queue is found by its <prefix>:<name>:meta key, which every BullMQ queue, Node's\n"
    "or ferry's, writes when it is opened. Redis has no index of queues: this is a\n"
    "bounded SCAN of the keyspace (pages of about 1000 keys, at most 10^7 keys); when\n"
    "a bound stops it, a line on standard error says the list is incomplete. Queues\n"
    "are listed by name, one line each: the counts of `ferry queue counts` and\n"
    "PAUSED when paused. The counts of each queue are read on a connection of its own.\n",
    0,
    0,
    0,
    0};

static void qlist_json_queue(FILE *m, const char *name, const ferry_job_counts *c, int paused) {
    fputs("{\"name\":", m);
    jsonw_write_string(m, name);
    fprintf(m,
            ",\"waiting\":%lld,\"active\":%lld,\"completed\":%lld,\"failed\":%lld,"
            "\"delayed\":%lld,\"prioritized\":%lld,\"waiting-children\":%lld,\"paused\":%lld,"
            "\"isPaused\":%s}",
            c->waiting, c->active, c->completed, c->failed, c->delayed, c->prioritized,
            c->waiting_children, c->paused, paused ? "true" : "false");
}

static int queue_list(cli_ctx *x) {
    const qlist_opts *lo = x->opts;
    ferry_error err = {0};
    char **names = NULL;
    size_t n = 0;
    int complete = 0;
    if (ferry_queue_names(&x->conn.redis, x->conn.prefix, (size_t)lo->max, &names, &n, &complete,
                          &err) != 0)
        return cli_report(x->spec, &x->conn, NULL, &err);
    char *arr = NULL;
    size_t alen = 0;
    FILE *m = lo->json ? open_memstream(&arr, &alen) : NULL;
    int rc = CLI_EXIT_OK;
    if (lo->json && !m) {
        perror("ferry queue list");
        rc = CLI_EXIT_RUNTIME;
    }
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) {
        ferry_queue *q = NULL;
        if ((rc = cli_open_queue(x->spec, &x->conn, names[i], CLI_QUEUE_READS, &q)) != 0) break;
        ferry_job_counts c;
        int paused = 0;
        if (ferry_queue_counts(q, &c, &err) != 0 || ferry_queue_is_paused(q, &paused, &err) != 0) {
            rc = cli_report(x->spec, &x->conn, NULL, &err);
        } else if (m) {
            if (i) fputc(',', m);
            qlist_json_queue(m, names[i], &c, paused);
        } else {
            char shown[256];
            printf("%s  waiting %lld  active %lld  delayed %lld  prioritized %lld  completed %lld  "
                   "failed %lld  waiting-children %lld%s\n",
                   SHOWN(names[i], shown), c.waiting, c.active, c.delayed, c.prioritized,
                   c.completed, c.failed, c.waiting_children, paused ? "  PAUSED" : "");
            if (c.paused) printf("  legacy-paused %lld\n", c.paused);
        }
        ferry_queue_close(q);
    }
    if (m) {
        fclose(m);
        if (rc == CLI_EXIT_OK) {
            printf("{\"prefix\":");
            jsonw_write_string(stdout, x->conn.prefix ? x->conn.prefix : FERRY_DEFAULT_PREFIX);
            printf(",\"complete\":%s,\"queues\":[%s]}\n", complete ? "true" : "false",
                   arr ? arr : "");
        }
        free(arr);
    }
    if (rc == CLI_EXIT_OK && !complete)
        fprintf(stderr,
                "ferry queue list: the list is incomplete: the scan stopped at its bound (%zu "
                "queue%s listed; see --max)\n",
                n, n == 1 ? "" : "s");
    ferry_queue_job_ids_free(names, n);
    return rc;
}

const cli_setup queue_list_cmd = {.spec = &qlist_spec,
                                  .defs = qlist_defs,
                                  .ndefs = sizeof qlist_defs / sizeof qlist_defs[0],
                                  .opts = &qlist_o,
                                  .body = queue_list};

/* ---- queue workers -------------------------------------------------------------------- */

typedef struct workers_opts {
    int json;
} workers_opts;

static workers_opts workers_o;

static const opt_def workers_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(workers_opts, json), 0, 0,
     "Print {\"workers\": [{\"id\", \"addr\", \"name\" (the queue, as Node), \"rawname\", "
     "\"workerName\", \"age\", \"idle\"}]}."},
};

static const cmd_spec workers_spec = {
    "queue workers",
    "QUEUE",
    "List the workers of QUEUE, Node BullMQ's and ferry's (BullMQ queue.getWorkers).",
    "A worker is found by the name of its blocking Redis connection,\n"
    "<prefix>:<base64(queue)> or <prefix>:<base64(queue)>:w:<worker name>, in CLIENT\n"
    "LIST (a Redis that refuses CLIENT LIST, as some hosted ones do, exits 1). One line\n"
    "per worker: its name (- when it has none), Redis client id, address, seconds\n"
    "connected and seconds idle.\n",
    1,
    1,
    0,
    0};

static int queue_workers(cli_ctx *x) {
    const workers_opts *wo = x->opts;
    ferry_error err = {0};
    ferry_queue_worker *w = NULL;
    size_t n = 0;
    if (ferry_queue_workers(x->q, &w, &n, &err) != 0)
        return cli_report(x->spec, &x->conn, NULL, &err);
    char a[512], b[512];
    if (wo->json) {
        fputs("{\"workers\":[", stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ",{\"id\":" : "{\"id\":", stdout);
            jsonw_write_string(stdout, w[i].id ? w[i].id : "");
            fputs(",\"addr\":", stdout);
            if (w[i].addr)
                jsonw_write_string(stdout, w[i].addr);
            else
                fputs("null", stdout);
            fputs(",\"name\":", stdout);
            jsonw_write_string(stdout, x->r.pos[0]);
            fputs(",\"rawname\":", stdout);
            jsonw_write_string(stdout, w[i].rawname);
            fputs(",\"workerName\":", stdout);
            if (w[i].worker_name)
                jsonw_write_string(stdout, w[i].worker_name);
            else
                fputs("null", stdout);
            printf(",\"age\":%lld,\"idle\":%lld}", w[i].age_s, w[i].idle_s);
        }
        fputs("]}\n", stdout);
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s  id %s  addr %s  age %lld s  idle %lld s\n",
                   w[i].worker_name ? SHOWN(w[i].worker_name, a) : "-",
                   w[i].id ? SHOWN(w[i].id, b) : "?", w[i].addr ? w[i].addr : "?", w[i].age_s,
                   w[i].idle_s);
    }
    ferry_queue_workers_free(w, n);
    return CLI_EXIT_OK;
}

const cli_setup queue_workers_cmd = {.spec = &workers_spec,
                                     .defs = workers_defs,
                                     .ndefs = sizeof workers_defs / sizeof workers_defs[0],
                                     .opts = &workers_o,
                                     .body = queue_workers};

/* ---- queue events --------------------------------------------------------------------- */

typedef struct events_opts {
    int follow, json;
    const char *from;
    long long count;
} events_opts;

static events_opts events_o = {.count = 100};

#define EVENTS_FOLLOW_BLOCK_MS 1000 /* one XREAD BLOCK: how soon a stop signal is seen */
#define EVENTS_FOLLOW_COUNT 1000    /* events one follow read takes at most */

static const opt_def events_defs[] = {
    {"follow", OPT_FLAG, NULL, offsetof(events_opts, follow), 0, 0,
     "After the events already there, wait for new ones and print them as they come, until "
     "SIGINT or SIGTERM (then exit 0)."},
    {"json", OPT_FLAG, NULL, offsetof(events_opts, json), 0, 0,
     "One object per line: {\"id\", \"event\", and every other field of the entry as a "
     "string}."},
    {"from", OPT_STRING, "ID", offsetof(events_opts, from), 0, 0,
     "Start after stream id ID (<ms> or <ms>-<seq>; 0 = from the oldest, $ = only new "
     "ones), instead of with the newest --count events."},
    {"count", OPT_INT, "N", offsetof(events_opts, count), 1, FERRY_QUEUE_EVENTS_MAX,
     "At most N events before --follow goes on (default 100)."},
};

static const cmd_spec events_spec = {
    "queue events",
    "QUEUE",
    "Print the events of QUEUE (its <prefix>:<queue>:events stream), as Node BullMQ's "
    "QueueEvents sees them.",
    "One line per event, oldest first: the stream id, the event name (added, waiting,\n"
    "active, completed, failed, delayed, progress, removed, drained, ...) and its fields\n"
    "(jobId, returnvalue, failedReason, prev, delay, ...) as name=value, values escaped\n"
    "and cut at 4 KiB (--json gives them whole). Without --from, the newest --count events;\n"
    "with it, up to --count events after that id. The stream is capped by BullMQ (meta\n"
    "opts.maxLenEvents, default 10000), so older events are gone. --follow then waits for\n"
    "new events (XREAD BLOCK, 1 s at a time) until SIGINT or SIGTERM and exits 0.\n",
    1,
    1,
    0,
    0};

static volatile sig_atomic_t events_stop;

static void events_on_signal(int sig) {
    events_stop = sig;
}

static void events_print(const events_opts *eo, const ferry_queue_event *ev, size_t n) {
    static char value[4096];
    char name[256];
    for (size_t i = 0; i < n; i++) {
        if (eo->json) {
            fputs("{\"id\":", stdout);
            jsonw_write_string(stdout, ev[i].id);
            fputs(",\"event\":", stdout);
            jsonw_write_string(stdout, ev[i].event);
            for (size_t j = 0; j < ev[i].nfields; j++) {
                /* "id" and "event" are ours; a field of that name would repeat a key */
                if (!strcmp(ev[i].names[j], "id") || !strcmp(ev[i].names[j], "event")) continue;
                fputc(',', stdout);
                jsonw_write_string(stdout, ev[i].names[j]);
                fputc(':', stdout);
                jsonw_write_string(stdout, ev[i].values[j]);
            }
            fputs("}\n", stdout);
        } else {
            printf("%s %s", ev[i].id, SHOWN(ev[i].event, name));
            for (size_t j = 0; j < ev[i].nfields; j++) {
                printf(" %s=", SHOWN(ev[i].names[j], name));
                fputs(SHOWN(ev[i].values[j], value), stdout);
            }
            fputc('\n', stdout);
        }
    }
    fflush(stdout);
}

static int queue_events(cli_ctx *x) {
    const events_opts *eo = x->opts;
    ferry_error err = {0};
    ferry_queue_event *ev = NULL;
    size_t n = 0;
    char last[FERRY_QUEUE_EVENT_ID_MAX];
    if (eo->follow) {
        struct sigaction sa = {0};
        sa.sa_handler = events_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
    }
    if (ferry_queue_events_read(x->q, eo->from, (size_t)eo->count, 0, &ev, &n, last, &err) != 0)
        return cli_report(x->spec, &x->conn, NULL, &err);
    events_print(eo, ev, n);
    ferry_queue_events_free(ev, n);
    while (eo->follow && !events_stop) {
        ev = NULL;
        n = 0;
        if (ferry_queue_events_read(x->q, last, EVENTS_FOLLOW_COUNT, EVENTS_FOLLOW_BLOCK_MS, &ev,
                                    &n, last, &err) != 0) {
            if (events_stop) break; /* the read was cut short by the stop signal */
            return cli_report(x->spec, &x->conn, NULL, &err);
        }
        events_print(eo, ev, n);
        ferry_queue_events_free(ev, n);
    }
    return CLI_EXIT_OK;
}

const cli_setup queue_events_cmd = {.spec = &events_spec,
                                    .defs = events_defs,
                                    .ndefs = sizeof events_defs / sizeof events_defs[0],
                                    .opts = &events_o,
                                    .body = queue_events};
