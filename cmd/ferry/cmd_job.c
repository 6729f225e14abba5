/* cmd_job.c - `ferry job show | remove | retry | promote | list | logs | find`: inspect,
 * delete, retry or promote one job, read its log or add a line to it; list a page of a
 * state's jobs; find jobs by name or data (a bounded scan). */
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

/* ---- job retry / promote -------------------------------------------------------------- */

typedef struct retry_opts {
    const char *state;
    int reset_attempts, reset_started;
} retry_opts;

static const opt_def retry_defs[] = {
    {"state", OPT_STRING, "STATE", offsetof(retry_opts, state), 0, 0,
     "failed or completed: retry the job only from that state (BullMQ job.retry(state)); "
     "default: whichever of the two it is in."},
    {"reset-attempts", OPT_FLAG, NULL, offsetof(retry_opts, reset_attempts), 0, 0,
     "Also forget the attempts made (resetAttemptsMade), so the job gets all its attempts "
     "again; without it a job with no attempts left fails for good at its next error."},
    {"reset-attempts-started", OPT_FLAG, NULL, offsetof(retry_opts, reset_started), 0, 0,
     "Also forget the attempts started (resetAttemptsStarted)."},
};

static const cmd_spec retry_spec = {
    "job retry",
    "QUEUE ID",
    "Retry finished job ID of QUEUE (BullMQ job.retry): a failed or completed job goes back "
    "to waiting and runs again.",
    "As Node's job.retry: the job loses finishedOn, processedOn and its failedReason or\n"
    "returnvalue (its stacktrace and attempt counts stay unless reset), and goes to the\n"
    "head of wait (its tail with lifo), or to prioritized when it has a priority. A job\n"
    "that is not finished is refused (exit 1) and left as it was. Prints the state it\n"
    "left.\n",
    2,
    2,
    0,
    0};

static retry_opts retry_o;

static int job_retry_check(cli_ctx *x) {
    const retry_opts *ro = x->opts;
    if (ro->state && strcmp(ro->state, "failed") != 0 && strcmp(ro->state, "completed") != 0) {
        char s[128];
        return opts_usage_error(x->spec, "--state: expected failed or completed, got '%s'",
                                ferryx_printable(ro->state, s, sizeof s));
    }
    return 0;
}

static int job_retry(cli_ctx *x) {
    const retry_opts *ro = x->opts;
    unsigned flags = (ro->reset_attempts ? FERRY_RETRY_RESET_ATTEMPTS : 0u) |
                     (ro->reset_started ? FERRY_RETRY_RESET_STARTED : 0u);
    const char *from = NULL;
    ferry_error err = {0};
    if (ferry_queue_retry_job(x->q, x->r.pos[1], ro->state, flags, &from, &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    char sid[256];
    printf("job %s: retried (was %s)\n", ferryx_printable(x->r.pos[1], sid, sizeof sid), from);
    return CLI_EXIT_OK;
}

const cli_setup job_retry_cmd = {.spec = &retry_spec,
                                 .defs = retry_defs,
                                 .ndefs = sizeof retry_defs / sizeof retry_defs[0],
                                 .opts = &retry_o,
                                 .check = job_retry_check,
                                 .body = job_retry};

static const cmd_spec promote_spec = {
    "job promote",
    "QUEUE ID",
    "Promote delayed job ID of QUEUE to run now (BullMQ job.promote).",
    "The job leaves delayed for the head of wait, or prioritized when it has a priority;\n"
    "its delay becomes 0. A job that is not delayed is refused (exit 1) and left as it\n"
    "was. No output.\n",
    2,
    2,
    0,
    0};

static int job_promote(cli_ctx *x) {
    ferry_error err = {0};
    if (ferry_queue_promote_job(x->q, x->r.pos[1], &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    return CLI_EXIT_OK;
}

const cli_setup job_promote_cmd = {.spec = &promote_spec, .body = job_promote};

/* ---- job list ------------------------------------------------------------------------- */

typedef struct list_opts {
    const char *state, *name;
    long long start, end, limit; /* -1 = not given */
    int asc, json;
} list_opts;

#define LIST_DEFAULT_LIMIT 100

static const opt_def list_defs[] = {
    {"state", OPT_STRING, "STATE", offsetof(list_opts, state), 0, 0,
     "Required: wait (or waiting), active, delayed, prioritized, paused (the legacy BullMQ v5 "
     "list), waiting-children, completed or failed."},
    {"start", OPT_INT, "N", offsetof(list_opts, start), 0, FERRY_QUEUE_MOVE_MAX,
     "First position of the page (0-based; default 0)."},
    {"end", OPT_INT, "N", offsetof(list_opts, end), 0, FERRY_QUEUE_MOVE_MAX + FERRY_QUEUE_IDS_MAX,
     "Last position of the page (inclusive; at most 10000 positions from --start)."},
    {"limit", OPT_INT, "N", offsetof(list_opts, limit), 1, FERRY_QUEUE_IDS_MAX,
     "Positions from --start (default 100); not with --end."},
    {"asc", OPT_FLAG, NULL, offsetof(list_opts, asc), 0, 0,
     "Oldest first (BullMQ getJobs asc = true); default newest first."},
    {"name", OPT_STRING, "NAME", offsetof(list_opts, name), 0, 0,
     "Show only the jobs of the page named NAME (the page is taken first: BullMQ has no "
     "index by name)."},
    {"json", OPT_FLAG, NULL, offsetof(list_opts, json), 0, 0,
     "One JSON object per job and line, as `ferry job show --json` prints it."},
};

static const cmd_spec list_spec = {
    "job list",
    "QUEUE --state STATE [--start N --end N | --limit N]",
    "List the jobs of QUEUE in STATE, a page at a time, in the order of BullMQ's "
    "queue.getJobs([STATE], start, end, asc).",
    "Newest first by default: lists (wait, paused, active) from the head, sorted sets\n"
    "by descending score (completed and failed by finish time, delayed by due time,\n"
    "prioritized by priority). Positions whose job is gone are skipped and the page is\n"
    "filled from the positions after it, as in BullMQ. The text form prints one line\n"
    "per job: id, name, attempts made, when it was added, and for failed jobs the\n"
    "reason (escaped).\n",
    1,
    1,
    0,
    0};

static list_opts list_o = {.start = -1, .end = -1, .limit = -1};

static const char *const LIST_STATES[] = {"wait",        "waiting", "active",           "delayed",
                                          "prioritized", "paused",  "waiting-children", "completed",
                                          "failed"};

static int job_list_check(cli_ctx *x) {
    list_opts *lo = x->opts;
    char s[128];
    if (!lo->state) return opts_usage_error(x->spec, "--state is required");
    size_t i = 0;
    while (i < sizeof LIST_STATES / sizeof LIST_STATES[0] && strcmp(LIST_STATES[i], lo->state))
        i++;
    if (i == sizeof LIST_STATES / sizeof LIST_STATES[0])
        return opts_usage_error(x->spec,
                                "--state: expected wait, active, delayed, prioritized, paused, "
                                "waiting-children, completed or failed, got '%s'",
                                ferryx_printable(lo->state, s, sizeof s));
    if (lo->end >= 0 && lo->limit >= 0)
        return opts_usage_error(x->spec, "--limit cannot be combined with --end");
    if (lo->start < 0) lo->start = 0;
    if (lo->end < 0) lo->end = lo->start + (lo->limit > 0 ? lo->limit : LIST_DEFAULT_LIMIT) - 1;
    if (lo->end < lo->start)
        return opts_usage_error(x->spec, "--end %lld is before --start %lld", lo->end, lo->start);
    if (lo->end - lo->start >= FERRY_QUEUE_IDS_MAX)
        return opts_usage_error(x->spec, "at most %d positions per page (asked %lld)",
                                FERRY_QUEUE_IDS_MAX, lo->end - lo->start + 1);
    return 0;
}

/* Outside text on one line, escaped (malloc'd buffer; "" when out of memory). */
static void print_escaped(const char *v) {
    size_t cap = 4 * strlen(v) + 8;
    char *buf = malloc(cap);
    fputs(buf ? ferryx_printable(v, buf, cap) : "", stdout);
    free(buf);
}

static void list_line(const ferry_job_info *j) {
    print_escaped(j->id);
    fputs("  ", stdout);
    print_escaped(j->name ? j->name : "-");
    printf("  attempts %lld  added ", j->attempts_made);
    if (j->timestamp >= 0) {
        time_t secs = (time_t)(j->timestamp / 1000);
        struct tm tm;
        char iso[32] = "?";
        if (gmtime_r(&secs, &tm)) strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
        fputs(iso, stdout);
    } else {
        fputs("-", stdout);
    }
    if (j->failed_reason) {
        fputs("  reason: ", stdout);
        print_escaped(j->failed_reason);
    }
    fputc('\n', stdout);
}

static int job_list(cli_ctx *x) {
    const list_opts *lo = x->opts;
    const char *state = strcmp(lo->state, "waiting") ? lo->state : "wait";
    ferry_error err = {0};
    char **ids = NULL;
    size_t n = 0;
    if (ferry_queue_job_page(x->q, state, lo->start, lo->end, lo->asc, &ids, &n, &err) != 0)
        return cli_report(x->spec, &x->conn, NULL, &err);
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        ferry_job_info *info = NULL;
        if (ferry_queue_get_job(x->q, ids[i], &info, &err) != 0) {
            if (err.code == FERRY_ENOTFOUND) continue; /* gone since the page was read */
            rc = cli_report(x->spec, &x->conn, NULL, &err);
            break;
        }
        if (!lo->name || (info->name && !strcmp(info->name, lo->name))) {
            if (lo->json)
                show_json(info);
            else
                list_line(info);
        }
        ferry_job_info_free(info);
    }
    ferry_queue_job_ids_free(ids, n);
    return rc;
}

const cli_setup job_list_cmd = {.spec = &list_spec,
                                .defs = list_defs,
                                .ndefs = sizeof list_defs / sizeof list_defs[0],
                                .opts = &list_o,
                                .check = job_list_check,
                                .body = job_list};

/* ---- job logs ------------------------------------------------------------------------- */

typedef struct logs_opts {
    long long start, end, limit; /* -1 = not given */
    int desc, json;
    const char *add; /* NULL = read the log */
    long long keep;  /* with --add; -1 = not given (the job's keepLogs) */
} logs_opts;

#define LOGS_DEFAULT_LIMIT 1000

static const opt_def logs_defs[] = {
    {"start", OPT_INT, "N", offsetof(logs_opts, start), 0, FERRY_QUEUE_MOVE_MAX,
     "First line (0-based; default 0)."},
    {"end", OPT_INT, "N", offsetof(logs_opts, end), 0, FERRY_QUEUE_MOVE_MAX + FERRY_QUEUE_IDS_MAX,
     "Last line (inclusive; at most 10000 lines from --start)."},
    {"limit", OPT_INT, "N", offsetof(logs_opts, limit), 1, FERRY_QUEUE_IDS_MAX,
     "Lines from --start (default 1000); not with --end."},
    {"desc", OPT_FLAG, NULL, offsetof(logs_opts, desc), 0, 0,
     "Newest first, positions counted from the newest (BullMQ getJobLogs asc = false)."},
    {"json", OPT_FLAG, NULL, offsetof(logs_opts, json), 0, 0,
     "Print {\"logs\": [...], \"count\": N}, what BullMQ's queue.getJobLogs returns (with "
     "--add: {\"count\": N})."},
    {"add", OPT_STRING, "TEXT", offsetof(logs_opts, add), 0, 0,
     "Add TEXT as the newest line of the log instead of reading it (BullMQ job.log; not "
     "empty, at most 1 MiB, and the kernel passes at most 128 KiB in one argument), then "
     "print how many lines the log holds."},
    {"keep", OPT_INT, "N", offsetof(logs_opts, keep), 0, FERRY_LIMIT_COUNT_MAX,
     "With --add: keep only the newest N lines, 0 = every line (BullMQ queue.addJobLog's "
     "keepLogs). Default: the job's own keepLogs option, as job.log() does."},
};

static const cmd_spec logs_spec = {
    "job logs",
    "QUEUE ID [--add TEXT [--keep N]]",
    "Print the log lines of job ID of QUEUE (BullMQ queue.getJobLogs), oldest first, or add "
    "one (--add).",
    "The lines are what job.log() wrote, Node's or ferry's (ferry_queue_add_log), one\n"
    "per output line, escaped (a line break in a log line shows as \\n). When the page\n"
    "holds fewer lines than the log, a note on standard error says how many there are.\n"
    "A job that does not exist exits 1.\n"
    "With --add TEXT it adds a line instead, as Node's job.log(TEXT) does (with --keep\n"
    "N: queue.addJobLog(id, TEXT, N)), and prints the number of lines the log then holds.\n",
    2,
    2,
    0,
    0};

static logs_opts logs_o = {.start = -1, .end = -1, .limit = -1, .keep = -1};

static int job_logs_check(cli_ctx *x) {
    logs_opts *lo = x->opts;
    if (lo->keep >= 0 && !lo->add) return opts_usage_error(x->spec, "--keep needs --add");
    if (lo->add) {
        if (lo->start >= 0 || lo->end >= 0 || lo->limit >= 0 || lo->desc)
            return opts_usage_error(x->spec,
                                    "--add cannot be combined with --start, --end, --limit "
                                    "or --desc (those read the log)");
        if (strlen(lo->add) > FERRY_JOB_LOG_LINE_MAX)
            return opts_usage_error(x->spec, "--add: at most %d bytes (got %zu)",
                                    FERRY_JOB_LOG_LINE_MAX, strlen(lo->add));
        return 0;
    }
    if (lo->end >= 0 && lo->limit >= 0)
        return opts_usage_error(x->spec, "--limit cannot be combined with --end");
    if (lo->start < 0) lo->start = 0;
    if (lo->end < 0) lo->end = lo->start + (lo->limit > 0 ? lo->limit : LOGS_DEFAULT_LIMIT) - 1;
    if (lo->end < lo->start)
        return opts_usage_error(x->spec, "--end %lld is before --start %lld", lo->end, lo->start);
    if (lo->end - lo->start >= FERRY_QUEUE_IDS_MAX)
        return opts_usage_error(x->spec, "at most %d lines per call (asked %lld)",
                                FERRY_QUEUE_IDS_MAX, lo->end - lo->start + 1);
    return 0;
}

/* `job logs --add`: one line added, the log's length printed. */
static int job_logs_add(cli_ctx *x) {
    const logs_opts *lo = x->opts;
    ferry_error err = {0};
    long long count = 0;
    long long keep = lo->keep >= 0 ? lo->keep : FERRY_LOG_KEEP_JOB;
    if (ferry_queue_add_log(x->q, x->r.pos[1], lo->add, keep, &count, &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    if (lo->json)
        printf("{\"count\":%lld}\n", count);
    else
        printf("%lld\n", count);
    return CLI_EXIT_OK;
}

static int job_logs(cli_ctx *x) {
    const logs_opts *lo = x->opts;
    if (lo->add) return job_logs_add(x);
    ferry_error err = {0};
    char **lines = NULL;
    size_t n = 0;
    long long count = 0;
    if (ferry_queue_job_logs(x->q, x->r.pos[1], lo->start, lo->end, !lo->desc, &lines, &n, &count,
                             &err) != 0)
        return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
    if (count == 0) { /* no log: say so when the job itself is missing */
        ferry_job_info *info = NULL;
        if (ferry_queue_get_job(x->q, x->r.pos[1], &info, &err) != 0)
            return job_report(x->spec, &x->conn, x->r.pos[0], x->r.pos[1], &err);
        ferry_job_info_free(info);
    }
    if (lo->json) {
        fputs("{\"logs\":[", stdout);
        for (size_t i = 0; i < n; i++) {
            if (i) fputc(',', stdout);
            jsonw_write_string(stdout, lines[i]);
        }
        printf("],\"count\":%lld}\n", count);
    } else {
        for (size_t i = 0; i < n; i++) {
            print_escaped(lines[i]);
            fputc('\n', stdout);
        }
        if ((long long)n < count)
            fprintf(stderr, "ferry job logs: %zu of %lld lines shown (see --start, --limit)\n", n,
                    count);
    }
    ferry_queue_job_ids_free(lines, n);
    return CLI_EXIT_OK;
}

const cli_setup job_logs_cmd = {.spec = &logs_spec,
                                .defs = logs_defs,
                                .ndefs = sizeof logs_defs / sizeof logs_defs[0],
                                .opts = &logs_o,
                                .check = job_logs_check,
                                .body = job_logs};

/* ---- job find ------------------------------------------------------------------------- */

typedef struct find_opts {
    const char *state, *name, *data_contains;
    long long limit, scan_max;
    int json;
} find_opts;

static find_opts find_o;

static const opt_def find_defs[] = {
    {"state", OPT_STRING, "STATE", offsetof(find_opts, state), 0, 0,
     "Look only at the jobs in STATE: wait (or waiting), prioritized, delayed, active, "
     "waiting-children, paused, failed or completed. Default: every state, in that order."},
    {"name", OPT_STRING, "NAME", offsetof(find_opts, name), 0, 0, "Jobs named exactly NAME."},
    {"data-contains", OPT_STRING, "TEXT", offsetof(find_opts, data_contains), 0, 0,
     "Jobs whose data (its JSON text, as stored) contains TEXT (bytes, case-sensitive; at "
     "most 4096)."},
    {"limit", OPT_INT, "N", offsetof(find_opts, limit), 1, FERRY_QUEUE_FIND_LIMIT_MAX,
     "Stop after N matches (default 100000)."},
    {"scan-max", OPT_INT, "N", offsetof(find_opts, scan_max), 1, FERRY_QUEUE_FIND_SCAN_MAX,
     "Look at N jobs at most (default 100000), then stop and say so."},
    {"json", OPT_FLAG, NULL, offsetof(find_opts, json), 0, 0,
     "One object per match and line: {\"id\", \"name\", \"state\"}."},
};

static const cmd_spec find_spec = {
    "job find",
    "QUEUE [--state S] [--name N] [--data-contains TEXT]",
    "Find the jobs of QUEUE by name and/or text in their data: a bounded scan, since BullMQ "
    "keeps no index for either.",
    "Reads the ids of a state 1000 at a time (newest first, as job list) and the name\n"
    "and data of each page's jobs in one pipelined round trip, and prints one line per\n"
    "match: id, name, state. A progress line goes to stderr after every page. It stops\n"
    "after --scan-max jobs (default 100000) and says so on stderr; jobs that move while\n"
    "it runs may be missed or shown twice.\n",
    1,
    1,
    0,
    0};

static int job_find_check(cli_ctx *x) {
    const find_opts *fo = x->opts;
    if (fo->data_contains && strlen(fo->data_contains) > FERRY_QUEUE_FIND_DATA_TEXT_MAX)
        return opts_usage_error(x->spec, "--data-contains: at most %d bytes (got %zu)",
                                FERRY_QUEUE_FIND_DATA_TEXT_MAX, strlen(fo->data_contains));
    if (fo->data_contains && !fo->data_contains[0])
        return opts_usage_error(x->spec, "--data-contains: empty text");
    return 0;
}

static void find_progress(void *ctx, const char *state, long long scanned, long long matched) {
    const cli_ctx *x = ctx;
    fprintf(stderr, "ferry %s: scanned %lld job%s (now in %s), %lld match%s\n", x->spec->name,
            scanned, scanned == 1 ? "" : "s", state, matched, matched == 1 ? "" : "es");
}

static int job_find(cli_ctx *x) {
    const find_opts *fo = x->opts;
    ferry_queue_find_options o = {.state = fo->state,
                                  .name = fo->name,
                                  .data_contains = fo->data_contains,
                                  .limit = fo->limit,
                                  .scan_max = fo->scan_max,
                                  .progress = find_progress,
                                  .progress_ctx = x};
    ferry_error err = {0};
    ferry_queue_found_job *jobs = NULL;
    size_t n = 0;
    int complete = 0;
    if (ferry_queue_find_jobs(x->q, &o, &jobs, &n, &complete, &err) != 0)
        return cli_report(x->spec, &x->conn, NULL, &err);
    for (size_t i = 0; i < n; i++) {
        if (fo->json) {
            jsonw w;
            jsonw_begin(&w, stdout);
            jsonw_str(&w, "id", jobs[i].id);
            jsonw_str(&w, "name", jobs[i].name);
            jsonw_str(&w, "state", jobs[i].state);
            jsonw_end(&w);
        } else {
            print_escaped(jobs[i].id);
            fputs("  ", stdout);
            print_escaped(jobs[i].name ? jobs[i].name : "-");
            printf("  %s\n", jobs[i].state);
        }
    }
    long long limit = fo->limit ? fo->limit : FERRY_QUEUE_FIND_LIMIT_MAX;
    if (!complete && (long long)n >= limit)
        fprintf(stderr, "ferry %s: stopped at --limit %lld matches\n", x->spec->name, limit);
    else if (!complete)
        fprintf(stderr,
                "ferry %s: stopped after scanning %lld jobs (--scan-max); the rest were not "
                "looked at\n",
                x->spec->name, fo->scan_max ? fo->scan_max : FERRY_QUEUE_FIND_SCAN_DEFAULT);
    ferry_queue_found_jobs_free(jobs, n);
    return CLI_EXIT_OK;
}

const cli_setup job_find_cmd = {.spec = &find_spec,
                                .defs = find_defs,
                                .ndefs = sizeof find_defs / sizeof find_defs[0],
                                .opts = &find_o,
                                .check = job_find_check,
                                .body = job_find};
