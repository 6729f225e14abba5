/* cmd_queue.c - `ferry queue add | counts | pause | resume`: producer-side commands. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "jsonw.h"

/* ---- queue add ------------------------------------------------------------------------ */

typedef struct add_opts {
    const char *opts_json;
    const char *job_id;
    long long max_payload;
} add_opts;

static const opt_def add_defs[] = {
    {"opts", OPT_JSON_OBJECT, "JSON", offsetof(add_opts, opts_json), 0, 0,
     "BullMQ JobsOptions as JSON, as you would pass them to queue.add() in Node, e.g. "
     "'{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":1000}}'."},
    {"job-id", OPT_STRING, "ID", offsetof(add_opts, job_id), 0, 0,
     "Custom job id (overrides opts.jobId). Adding an id that already exists adds nothing "
     "and prints the existing id."},
    {"max-payload", OPT_INT, "BYTES", offsetof(add_opts, max_payload), 1, 64LL * 1024 * 1024,
     "Largest accepted DATA in bytes (default 524288)."},
};

static const cmd_spec add_spec = {
    "queue add",
    "QUEUE NAME [DATA|-]",
    "Add one job named NAME to QUEUE and print its id. DATA is the job data as JSON text "
    "(default {}); - reads it from standard input.",
    NULL,
    2,
    3,
    0};

/* Read all of stdin into a malloc'd NUL-terminated buffer, refusing more than `limit`
 * bytes. Returns 0, or prints the problem and returns an exit code. */
static int read_stdin(size_t limit, char **out) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) return opts_usage_error(&add_spec, "out of memory");
    for (;;) {
        if (len + 1 >= cap) {
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return opts_usage_error(&add_spec, "out of memory");
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t n = read(STDIN_FILENO, buf + len, cap - len - 1);
        if (n < 0) {
            free(buf);
            perror("ferry queue add: reading standard input");
            return CLI_EXIT_RUNTIME;
        }
        if (n == 0) break;
        len += (size_t)n;
        if (len > limit) {
            free(buf);
            return opts_usage_error(&add_spec,
                                    "DATA from standard input is over the payload limit of %zu "
                                    "bytes (see --max-payload)",
                                    limit);
        }
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        free(buf);
        return opts_usage_error(&add_spec, "DATA from standard input contains a NUL byte");
    }
    /* `echo '{...}' | ferry queue add` leaves a newline: not part of the data. */
    while (len && strchr(" \t\r\n", buf[len - 1]))
        buf[--len] = 0;
    *out = buf;
    return 0;
}

/* opts JSON with jobId replaced by `job_id`; malloc'd. */
static char *opts_with_job_id(const char *opts_json, const char *job_id) {
    json_t *o = opts_json ? json_loads(opts_json, 0, NULL) : json_object();
    if (!o) return NULL;
    json_object_set_new(o, "jobId", json_string(job_id));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

static int queue_add(int argc, char **argv) {
    cli_conn conn = {0};
    add_opts ao = {0};
    opt_group groups[] = {{"Options", add_defs, sizeof add_defs / sizeof add_defs[0], &ao},
                          cli_conn_group(&conn, 0)};
    opt_result r;
    int rc = opts_parse(&add_spec, groups, 2, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    char *data = NULL, *opts_owned = NULL, *id = NULL;
    ferry_queue *q = NULL;
    size_t limit = ao.max_payload ? (size_t)ao.max_payload : FERRY_DEFAULT_MAX_PAYLOAD;
    if ((rc = cli_conn_resolve(&add_spec, &conn))) goto out;
    const char *data_json = r.npos > 2 ? r.pos[2] : "{}";
    if (!strcmp(data_json, "-")) {
        if ((rc = read_stdin(limit, &data))) goto out;
        data_json = data;
    } else if (strlen(data_json) > limit) {
        rc = opts_usage_error(&add_spec, "DATA is over the payload limit of %zu bytes", limit);
        goto out;
    }
    char msg[256];
    if (opts_check_json(data_json, strlen(data_json), 0, msg, sizeof msg)) {
        rc = opts_usage_error(&add_spec, "DATA: %s", msg);
        goto out;
    }
    const char *opts_json = ao.opts_json;
    if (ao.job_id) {
        if (!(opts_owned = opts_with_job_id(ao.opts_json, ao.job_id))) {
            rc = opts_usage_error(&add_spec, "--job-id: cannot encode (not valid UTF-8?)");
            goto out;
        }
        opts_json = opts_owned;
    }
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &conn.redis;
    qo.prefix = conn.prefix;
    qo.max_payload_bytes = limit;
    ferry_error err = {0};
    if (ferry_queue_open(r.pos[0], &qo, &q, &err) != 0) {
        q = NULL;
        rc = cli_report(&add_spec, &conn, NULL, &err);
        goto out;
    }
    ferry_job_spec spec = {r.pos[1], data_json, opts_json};
    if (ferry_queue_add(q, &spec, &id, &err) != 0) {
        rc = cli_report(&add_spec, &conn, NULL, &err);
        goto out;
    }
    printf("%s\n", id);
out:
    free(id);
    ferry_queue_close(q);
    free(opts_owned);
    free(data);
    free(r.pos);
    return rc;
}

/* ---- queue counts --------------------------------------------------------------------- */

typedef struct counts_opts {
    int json;
} counts_opts;

static const opt_def counts_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(counts_opts, json), 0, 0,
     "Print one JSON object with BullMQ getJobCounts() keys."},
};

static const cmd_spec counts_spec = {
    "queue counts",
    "QUEUE",
    "Show how many jobs QUEUE has in each state (waiting excludes prioritized; paused is "
    "BullMQ's legacy paused list).",
    NULL,
    1,
    1,
    0};

static int queue_counts(int argc, char **argv) {
    cli_conn conn = {0};
    counts_opts co = {0};
    opt_group groups[] = {{"Options", counts_defs, 1, &co}, cli_conn_group(&conn, 0)};
    opt_result r;
    int rc = opts_parse(&counts_spec, groups, 2, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    ferry_queue *q = NULL;
    if ((rc = cli_conn_resolve(&counts_spec, &conn))) goto out;
    if ((rc = cli_open_queue(&counts_spec, &conn, r.pos[0], &q))) goto out;
    ferry_job_counts jc;
    ferry_error err = {0};
    int paused = 0;
    if (ferry_queue_counts(q, &jc, &err) != 0 ||
        (!co.json && ferry_queue_is_paused(q, &paused, &err) != 0)) {
        rc = cli_report(&counts_spec, &conn, NULL, &err);
        goto out;
    }
    const struct {
        const char *key;
        long long v;
    } rows[] = {{"waiting", jc.waiting},
                {"active", jc.active},
                {"completed", jc.completed},
                {"failed", jc.failed},
                {"delayed", jc.delayed},
                {"prioritized", jc.prioritized},
                {"waiting-children", jc.waiting_children},
                {"paused", jc.paused}};
    if (co.json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            jsonw_int(&w, rows[i].key, rows[i].v);
        jsonw_end(&w);
    } else {
        printf("queue %s%s\n", r.pos[0], paused ? " (paused)" : "");
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            printf("  %-17s %lld\n", rows[i].key, rows[i].v);
    }
out:
    ferry_queue_close(q);
    free(r.pos);
    return rc;
}

/* ---- queue pause / resume ------------------------------------------------------------- */

static const cmd_spec pause_spec = {
    "queue pause",
    "QUEUE",
    "Pause QUEUE for every worker (BullMQ v6: jobs stay waiting; workers stop fetching).",
    NULL,
    1,
    1,
    0};
static const cmd_spec resume_spec = {
    "queue resume", "QUEUE", "Resume a paused QUEUE.", NULL, 1, 1, 0};

static int pause_or_resume(const cmd_spec *spec, int pause, int argc, char **argv) {
    cli_conn conn = {0};
    opt_group groups[] = {cli_conn_group(&conn, 0)};
    opt_result r;
    int rc = opts_parse(spec, groups, 1, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    ferry_queue *q = NULL;
    if ((rc = cli_conn_resolve(spec, &conn))) goto out;
    if ((rc = cli_open_queue(spec, &conn, r.pos[0], &q))) goto out;
    ferry_error err = {0};
    if ((pause ? ferry_queue_pause(q, &err) : ferry_queue_resume(q, &err)) != 0)
        rc = cli_report(spec, &conn, NULL, &err);
out:
    ferry_queue_close(q);
    free(r.pos);
    return rc;
}

static int queue_pause(int argc, char **argv) {
    return pause_or_resume(&pause_spec, 1, argc, argv);
}
static int queue_resume(int argc, char **argv) {
    return pause_or_resume(&resume_spec, 0, argc, argv);
}

const cli_command cmd_queue_table[] = {
    {"queue add", "Add a job and print its id.", queue_add},
    {"queue counts", "Show job counts by state.", queue_counts},
    {"queue pause", "Pause a queue for all workers.", queue_pause},
    {"queue resume", "Resume a paused queue.", queue_resume},
    {NULL, NULL, NULL},
};
