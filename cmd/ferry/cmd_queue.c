/* cmd_queue.c - `ferry queue add | add-bulk | counts | pause | resume | obliterate |
 * rate-limit | concurrency | global-rate-limit`: producer-side commands and the queue's
 * settings. The commands over many jobs (retry, promote, clean, drain, list, workers) are in
 * cmd_queue_admin.c. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bulk_line.h"
#include "cli.h"
#include "commands.h"
#include "jsonw.h"
#include "timetext.h"
#include "util/printable.h"

/* User text (a queue name) as messages show it. */
#define SHOWN(s, buf) ferryx_printable((s), (buf), sizeof(buf))

/* ---- queue add ------------------------------------------------------------------------ */

typedef struct add_opts {
    const char *opts_json;
    const char *job_id;
    long long max_payload;
    int allow_unknown_opts;
    /* add-bulk only */
    const char *file;
    long long batch;
} add_opts;

#define ALLOW_UNKNOWN_HELP                                                                         \
    "Accept job option keys that BullMQ 6.7.0 does not know (stored as given, for options of "     \
    "a later BullMQ); without it they are refused, naming the nearest known key."

static const opt_def add_defs[] = {
    {"opts", OPT_JSON_OBJECT, "JSON", offsetof(add_opts, opts_json), 0, 0,
     "BullMQ JobsOptions as JSON, as you would pass them to queue.add() in Node, e.g. "
     "'{\"attempts\":3,\"backoff\":{\"type\":\"fixed\",\"delay\":1000}}'."},
    {"job-id", OPT_STRING, "ID", offsetof(add_opts, job_id), 0, 0,
     "Custom job id (overrides opts.jobId). Adding an id that already exists adds nothing "
     "and prints the existing id."},
    {"max-payload", OPT_INT, "BYTES", offsetof(add_opts, max_payload), 1, 64LL * 1024 * 1024,
     "Largest accepted DATA in bytes (default 524288)."},
    {"allow-unknown-opts", OPT_FLAG, NULL, offsetof(add_opts, allow_unknown_opts), 0, 0,
     ALLOW_UNKNOWN_HELP},
};

static const cmd_spec add_spec = {
    "queue add",
    "QUEUE NAME [DATA|-]",
    "Add one job named NAME to QUEUE and print its id. DATA is the job data as JSON text "
    "(default {}); - reads it from standard input.",
    "The job is checked completely (name, DATA, options, id) before Redis is touched: a\n"
    "refused job (exit 2) writes nothing, not even the queue's meta. QUEUE must be valid\n"
    "UTF-8 without control characters. Repeating jobs are made with `ferry scheduler\n"
    "upsert`: opts.repeat is refused.\n",
    2,
    3,
    0,
    0};

/* Most trailing whitespace accepted after DATA on stdin beyond the payload limit: it is
 * dropped, not stored, but an endless stream of blanks must still end the read. */
#define STDIN_BLANK_TAIL_MAX (1024 * 1024)

static int is_blank_byte(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Read all of stdin into a malloc'd NUL-terminated buffer with trailing whitespace dropped
 * (`echo '{...}' | ferry queue add` leaves a newline: not part of the data), refusing DATA
 * over `limit` bytes once trimmed. At most `limit` bytes are kept: beyond them only blanks
 * may follow (up to STDIN_BLANK_TAIL_MAX), so a huge input fails at its first byte past the
 * limit that is not a blank, without reading the rest. Returns 0, or prints the problem and
 * returns an exit code. */
static int read_stdin(size_t limit, char **out) {
    struct stat st;
    if (fstat(STDIN_FILENO, &st) == 0 && S_ISDIR(st.st_mode))
        return opts_usage_error(&add_spec, "standard input is a directory (DATA '-' reads it)");
    size_t cap = 4096, len = 0, tail = 0; /* tail: blanks read past the limit */
    char *buf = malloc(cap);
    if (!buf) return opts_usage_error(&add_spec, "out of memory");
    char scratch[4096];
    int rc = 0;
    for (;;) {
        if (len < limit && len + 1 >= cap) {
            size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = opts_usage_error(&add_spec, "out of memory");
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        /* Up to the limit into buf; past it into scratch, only to check for blanks. */
        char *dst = len < limit ? buf + len : scratch;
        size_t room = len < limit ? cap - len - 1 : sizeof scratch;
        if (len < limit && room > limit - len) room = limit - len;
        ssize_t n = read(STDIN_FILENO, dst, room);
        if (n < 0) {
            perror("ferry queue add: reading standard input");
            rc = CLI_EXIT_RUNTIME;
            goto fail;
        }
        if (n == 0) break;
        if (dst == scratch) {
            for (ssize_t i = 0; i < n; i++)
                if (!is_blank_byte(scratch[i])) {
                    rc = opts_usage_error(&add_spec,
                                          "DATA from standard input is over the payload limit "
                                          "of %zu bytes (see --max-payload)",
                                          limit);
                    goto fail;
                }
            if ((tail += (size_t)n) > STDIN_BLANK_TAIL_MAX) {
                rc = opts_usage_error(&add_spec,
                                      "more than %d bytes of whitespace after DATA on standard "
                                      "input, past the payload limit",
                                      STDIN_BLANK_TAIL_MAX);
                goto fail;
            }
            continue;
        }
        len += (size_t)n;
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        rc = opts_usage_error(&add_spec, "DATA from standard input contains a NUL byte");
        goto fail;
    }
    while (len && is_blank_byte(buf[len - 1]))
        buf[--len] = 0;
    *out = buf;
    return 0;
fail:
    free(buf);
    return rc;
}

/* opts JSON with jobId replaced by `job_id`, into *out (malloc'd). Returns 0, or prints
 * the problem and returns the exit code: a job id that is not UTF-8 cannot be a JSON string,
 * and dropping it would add a job under a new id each time (no idempotency). */
static int opts_with_job_id(const char *opts_json, const char *job_id, char **out) {
    *out = NULL;
    json_t *id = json_string(job_id);
    if (!id) return opts_usage_error(&add_spec, "--job-id: not valid UTF-8");
    json_t *o = opts_json ? json_loads(opts_json, 0, NULL) : json_object();
    if (o && json_object_set_new(o, "jobId", id) == 0)
        *out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    else if (!o)
        json_decref(id); /* set_new consumed it otherwise */
    json_decref(o);
    return *out ? 0 : opts_usage_error(&add_spec, "out of memory");
}

/* A backoff type that neither BullMQ nor ferry builds in is legal (Node accepts it too), but
 * only a worker that registers a strategy of that name retries the job: a typo such as
 * "exponentail" would silently remove every retry, so say so (the job is added anyway).
 * "capped" is ferry's own: a Node BullMQ worker fails such a job ("Unknown backoff strategy
 * capped") and leaves it active until it stalls, so that is said too. */
static void warn_backoff_type(const char *cmd, const char *where, const char *opts_json) {
    json_t *o = opts_json ? json_loads(opts_json, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(json_object_get(o, "backoff"), "type"));
    if (type && !strcmp(type, "capped")) {
        fprintf(stderr,
                "ferry %s: warning: %sbackoff type \"capped\" is implemented only by ferry "
                "workers: a Node BullMQ worker fails this job (\"Unknown backoff strategy "
                "capped\") and leaves it active until it stalls\n",
                cmd, where);
    } else if (type && strcmp(type, "fixed") && strcmp(type, "exponential")) {
        char shown[96];
        ferryx_printable(type, shown, sizeof shown);
        fprintf(stderr,
                "ferry %s: warning: %sbackoff type \"%s\" is not built in (fixed, "
                "exponential, capped): only a worker with a custom strategy of that name retries "
                "this job\n",
                cmd, where, shown);
    }
    json_decref(o);
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
        if (!data_json[strspn(data_json, " \t\r\n")]) {
            rc = opts_usage_error(&add_spec, "DATA: standard input is empty (expected JSON)");
            goto out;
        }
    } else if (strlen(data_json) > limit) {
        rc = opts_usage_error(
            &add_spec, "DATA is over the payload limit of %zu bytes (see --max-payload)", limit);
        goto out;
    }
    char msg[256];
    if (opts_check_json(data_json, strlen(data_json), 0, msg, sizeof msg)) {
        rc = opts_usage_error(&add_spec, "DATA: %s", msg);
        goto out;
    }
    const char *opts_json = ao.opts_json;
    if (ao.job_id) {
        if ((rc = opts_with_job_id(ao.opts_json, ao.job_id, &opts_owned))) goto out;
        opts_json = opts_owned;
    }
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &conn.redis;
    qo.prefix = conn.prefix;
    qo.max_payload_bytes = limit;
    qo.allow_unknown_opts = ao.allow_unknown_opts;
    ferry_error err = {0};
    ferry_job_spec spec = {r.pos[1], data_json, opts_json};
    /* all of it checked before the open writes the queue's meta */
    if (ferry_queue_check_jobs(r.pos[0], &qo, &spec, 1, &err) != 0) {
        rc = cli_report(&add_spec, &conn, NULL, &err);
        goto out;
    }
    if (ferry_queue_open(r.pos[0], &qo, &q, &err) != 0) {
        q = NULL;
        rc = cli_report(&add_spec, &conn, NULL, &err);
        goto out;
    }
    if (ferry_queue_add(q, &spec, &id, &err) != 0) {
        rc = cli_report(&add_spec, &conn, NULL, &err);
        goto out;
    }
    printf("%s\n", id);
    warn_backoff_type(add_spec.name, "", opts_json);
out:
    free(id);
    ferry_queue_close(q);
    free(opts_owned);
    free(data);
    free(r.pos);
    return rc;
}

/* ---- queue add-bulk ------------------------------------------------------------------- */

#define BULK_BATCH_DEFAULT 500
#define BULK_BATCH_MAX 10000
/* A line holds a job name (1024 bytes, up to 6 times that when escaped), its data and its
 * options (64 KiB): longer lines are refused before they are read whole. */
#define BULK_LINE_OVERHEAD (FERRY_JOB_OPTS_MAX + 8192)

static const opt_def bulk_defs[] = {
    {"file", OPT_STRING, "FILE", offsetof(add_opts, file), 0, 0,
     "Read the lines from FILE instead of standard input."},
    {"batch", OPT_INT, "N", offsetof(add_opts, batch), 1, BULK_BATCH_MAX,
     "Jobs per ferry_queue_add_bulk call, i.e. per Redis round trip (default 500)."},
    {"max-payload", OPT_INT, "BYTES", offsetof(add_opts, max_payload), 1, 64LL * 1024 * 1024,
     "Largest accepted job data in bytes (default 524288)."},
    {"allow-unknown-opts", OPT_FLAG, NULL, offsetof(add_opts, allow_unknown_opts), 0, 0,
     ALLOW_UNKNOWN_HELP},
};

static const cmd_spec bulk_spec = {
    "queue add-bulk",
    "QUEUE [--file FILE]",
    "Add the jobs of NDJSON lines {\"name\": ..., \"data\": ..., \"opts\": {...}} read from "
    "standard input (or FILE) to QUEUE, in batches, and print their ids, one per line.",
    "Each line is one JSON object: \"name\" (required, the job name), \"data\" (any\n"
    "JSON, default {}) and \"opts\" (BullMQ JobsOptions, as for queue add --opts);\n"
    "no other key. Blank lines are skipped. A line is at most the payload limit plus\n"
    "72 KiB long; its data at most the payload limit (--max-payload).\n"
    "\n"
    "Every line is checked in full when it is read. At the first bad line (not JSON,\n"
    "not an object, an unknown key, a bad name, data or option, too long) the command\n"
    "stops with exit 2 and names the line number and the problem: the jobs of the\n"
    "lines before it are added (their ids printed), none of the lines after it are\n"
    "read. If Redis fails midway, exit 1: the ids printed so far are of jobs added.\n"
    "Nothing is written to Redis before the first good line.\n"
    "Held jobs are added as soon as nothing more is ready to read, so a slow producer's\n"
    "lines are added as they come. SIGTERM/SIGINT/SIGHUP: the complete lines read so far\n"
    "are added, then exit 128 + the signal number. A directory as input is exit 2.\n",
    1,
    1,
    0,
    0};

/* The input, read line by line with a bounded line buffer over read(2), so that the command
 * knows when nothing more is ready (it then adds what it holds: `tail -f log | ferry queue
 * add-bulk` adds each line as it comes, not when a batch is full) and a stop signal
 * interrupts a read. */
#define LINE_READ_AHEAD 65536

typedef struct line_reader {
    int fd;
    char *buf;  /* the current line */
    size_t cap; /* longest accepted line + 1 */
    long long lineno;
    char *chunk; /* read ahead, LINE_READ_AHEAD bytes */
    size_t pos, end;
    size_t n; /* bytes of the current line in buf so far */
    int eof;
} line_reader;

static volatile sig_atomic_t bulk_stop_signal;

static void bulk_on_signal(int sig) {
    bulk_stop_signal = sig;
}

/* 1 when a read would block now: nothing ready on the descriptor. */
static int fd_idle(int fd) {
    struct pollfd pf = {fd, POLLIN, 0};
    return poll(&pf, 1, 0) == 0;
}

/* Next line into r->buf (without '\n', NUL-terminated; NUL bytes inside stay, *len counts
 * them). Returns 1 for a line, 0 at the end, -1 for a line over the limit, -2 on a read
 * error (errno set), -3 when a stop signal came (bulk_stop_signal; a partial line is
 * dropped: it was not complete), and, only when may_block is 0, -4 when the next read would
 * wait (the partial line is kept for the next call). */
static int read_line(line_reader *r, size_t *len, int may_block) {
    for (;;) {
        if (r->pos == r->end) {
            if (r->eof) {
                if (r->n == 0) return 0; /* nothing pending: the end */
                break;                   /* a last line without its '\n' */
            }
            if (bulk_stop_signal) return -3;
            if (!may_block && fd_idle(r->fd)) return -4;
            ssize_t got = read(r->fd, r->chunk, LINE_READ_AHEAD);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) return -2;
            if (got == 0) {
                r->eof = 1;
                continue;
            }
            r->pos = 0;
            r->end = (size_t)got;
        }
        char c = r->chunk[r->pos++];
        if (c == '\n') break;
        if (r->n + 1 >= r->cap) return -1;
        r->buf[r->n++] = c;
    }
    r->buf[r->n] = 0;
    *len = r->n;
    r->n = 0;
    r->lineno++;
    return 1;
}

typedef struct bulk_batch {
    bulk_line *lines;
    ferry_job_spec *specs;
    char **ids;
    size_t n;
} bulk_batch;

static void batch_clear(bulk_batch *b) {
    for (size_t i = 0; i < b->n; i++)
        bulk_line_free(&b->lines[i]);
    b->n = 0;
}

/* Add the batch (opening the queue at the first one) and print its ids. */
static int batch_flush(bulk_batch *b, ferry_queue **q, const char *queue,
                       const ferry_queue_options *qo, cli_conn *conn) {
    if (b->n == 0) return 0;
    ferry_error err = {0};
    if (!*q && ferry_queue_open(queue, qo, q, &err) != 0) {
        *q = NULL;
        return cli_report(&bulk_spec, conn, NULL, &err);
    }
    if (ferry_queue_add_bulk(*q, b->specs, b->n, b->ids, &err) != 0)
        return cli_report(&bulk_spec, conn, NULL, &err);
    for (size_t i = 0; i < b->n; i++) {
        printf("%s\n", b->ids[i]);
        free(b->ids[i]);
        b->ids[i] = NULL;
    }
    fflush(stdout);
    batch_clear(b);
    return 0;
}

static int queue_add_bulk(int argc, char **argv) {
    cli_conn conn = {0};
    add_opts ao = {0};
    opt_group groups[] = {{"Options", bulk_defs, sizeof bulk_defs / sizeof bulk_defs[0], &ao},
                          cli_conn_group(&conn, 0)};
    opt_result r;
    int rc = opts_parse(&bulk_spec, groups, 2, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    ferry_queue *q = NULL;
    size_t limit = ao.max_payload ? (size_t)ao.max_payload : FERRY_DEFAULT_MAX_PAYLOAD;
    size_t batch = ao.batch ? (size_t)ao.batch : BULK_BATCH_DEFAULT;
    line_reader lr = {.fd = STDIN_FILENO, .cap = limit + BULK_LINE_OVERHEAD + 1};
    bulk_batch b = {0};
    char shown[256];
    if ((rc = cli_conn_resolve(&bulk_spec, &conn))) goto out;
    if (ao.file && (lr.fd = open(ao.file, O_RDONLY | O_CLOEXEC)) < 0) {
        rc = opts_usage_error(&bulk_spec, "--file: cannot open %s: %s", SHOWN(ao.file, shown),
                              strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(lr.fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = ao.file ? opts_usage_error(&bulk_spec, "--file: %s is a directory",
                                        SHOWN(ao.file, shown))
                     : opts_usage_error(&bulk_spec, "standard input is a directory");
        goto out;
    }
    /* A stop signal ends the reading: the lines read so far are added (their ids printed),
     * then the command exits 128 + the signal's number. */
    struct sigaction sa = {0};
    sa.sa_handler = bulk_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    lr.buf = malloc(lr.cap);
    lr.chunk = malloc(LINE_READ_AHEAD);
    b.lines = calloc(batch, sizeof *b.lines);
    b.specs = calloc(batch, sizeof *b.specs);
    b.ids = calloc(batch, sizeof *b.ids);
    if (!lr.buf || !lr.chunk || !b.lines || !b.specs || !b.ids) {
        rc = opts_usage_error(&bulk_spec, "out of memory");
        goto out;
    }
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &conn.redis;
    qo.prefix = conn.prefix;
    qo.max_payload_bytes = limit;
    qo.allow_unknown_opts = ao.allow_unknown_opts;
    ferry_error err = {0};
    /* the queue name and options are refused before any line is read */
    if (ferry_queue_check_jobs(r.pos[0], &qo, NULL, 0, &err) != 0) {
        rc = cli_report(&bulk_spec, &conn, NULL, &err);
        goto out;
    }
    for (;;) {
        size_t len = 0;
        /* With jobs held, the read does not wait: when nothing more is ready they are added
         * first, so a slow producer's lines are not held back (a partial line is kept). */
        int got = read_line(&lr, &len, b.n == 0);
        if (got == -4) {
            if ((rc = batch_flush(&b, &q, r.pos[0], &qo, &conn))) break;
            continue;
        }
        if (got == 0) break;
        if (got == -3) break;
        if (got == -2) {
            fprintf(stderr, "ferry %s: line %lld: read error: %s\n", bulk_spec.name, lr.lineno + 1,
                    strerror(errno));
            rc = CLI_EXIT_RUNTIME;
            break;
        }
        char why[FERRY_ERROR_MESSAGE_MAX];
        bulk_line *bl = &b.lines[b.n];
        int kind = BULK_LINE_BAD;
        if (got == -1)
            snprintf(why, sizeof why, "longer than %zu bytes (payload limit + 72 KiB)", lr.cap - 1);
        else
            kind = bulk_line_parse(lr.buf, len, limit, bl, why, sizeof why);
        if (kind == BULK_LINE_BLANK) continue;
        if (kind == BULK_LINE_JOB) {
            ferry_job_spec spec = {bl->name, bl->data, bl->opts};
            ferry_error e = {0};
            if (ferry_queue_check_jobs(r.pos[0], &qo, &spec, 1, &e) == 0) {
                b.specs[b.n++] = spec;
                char where[40];
                snprintf(where, sizeof where, "line %lld: ", lr.lineno);
                warn_backoff_type(bulk_spec.name, where, bl->opts);
                if (b.n == batch && (rc = batch_flush(&b, &q, r.pos[0], &qo, &conn))) break;
                continue;
            }
            bulk_line_free(bl);
            snprintf(why, sizeof why, "%s", e.message);
        }
        /* a bad line: what came before it is added, nothing after it */
        if ((rc = batch_flush(&b, &q, r.pos[0], &qo, &conn))) break;
        for (char *p = why; *p; p++)
            if (*p == '\n' || *p == '\r') *p = ' ';
        fprintf(stderr, "ferry %s: line %lld: %s\n", bulk_spec.name,
                got == -1 ? lr.lineno + 1 : lr.lineno, why);
        rc = CLI_EXIT_USAGE;
        break;
    }
    if (rc == 0) rc = batch_flush(&b, &q, r.pos[0], &qo, &conn);
    if (rc == 0 && bulk_stop_signal) {
        fprintf(stderr, "ferry %s: stopped by signal %d after line %lld (the jobs of the lines "
                        "before it were added)\n",
                bulk_spec.name, (int)bulk_stop_signal, lr.lineno);
        rc = 128 + bulk_stop_signal;
    }
out:
    batch_clear(&b);
    for (size_t i = 0; b.ids && i < batch; i++)
        free(b.ids[i]);
    free(b.lines);
    free(b.specs);
    free(b.ids);
    free(lr.buf);
    free(lr.chunk);
    if (lr.fd > STDIN_FILENO) close(lr.fd);
    ferry_queue_close(q);
    free(r.pos);
    return rc;
}

/* ---- queue counts --------------------------------------------------------------------- */

typedef struct counts_opts {
    int json;
} counts_opts;

static const opt_def counts_defs[] = {
    {"json", OPT_FLAG, NULL, offsetof(counts_opts, json), 0, 0,
     "Print one JSON object with BullMQ getJobCounts() keys (paused: the legacy paused "
     "list), plus \"exists\" (false: the queue has no keys) and \"isPaused\" (the paused "
     "state, BullMQ isPaused())."},
};

static const cmd_spec counts_spec = {
    "queue counts",
    "QUEUE",
    "Show how many jobs QUEUE has in each state (waiting excludes prioritized), whether it "
    "is paused, or that it does not exist.",
    "A queue with no keys at all (a misspelled name, another --prefix) is reported as\n"
    "not existing, exit 0. The legacy-paused row (BullMQ v5's paused list) shows only\n"
    "when that list holds jobs.\n",
    1,
    1,
    0,
    0};

static counts_opts counts_o;

static int queue_counts(cli_ctx *x) {
    const counts_opts *co = x->opts;
    ferry_queue *q = x->q;
    const char *queue = x->r.pos[0];
    ferry_job_counts jc;
    ferry_error err = {0};
    int paused = 0, exists = 0;
    if (ferry_queue_exists(q, &exists, &err) != 0 || ferry_queue_counts(q, &jc, &err) != 0 ||
        ferry_queue_is_paused(q, &paused, &err) != 0)
        return cli_report(&counts_spec, &x->conn, NULL, &err);
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
    char shown[256];
    if (co->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            jsonw_int(&w, rows[i].key, rows[i].v);
        jsonw_bool(&w, "exists", exists);
        jsonw_bool(&w, "isPaused", paused);
        jsonw_end(&w);
    } else if (!exists) {
        printf("queue %s does not exist (no keys under %s:%s:); check the name and --prefix\n",
               SHOWN(queue, shown), x->conn.prefix ? x->conn.prefix : FERRY_DEFAULT_PREFIX,
               SHOWN(queue, shown));
    } else {
        printf("queue %s: %s\n", SHOWN(queue, shown),
               paused ? "PAUSED (workers take no jobs; ferry queue resume)" : "not paused");
        /* the legacy (BullMQ v5) paused list only when it holds jobs: the state is above */
        for (size_t i = 0; i < sizeof rows / sizeof rows[0] - 1; i++)
            printf("  %-17s %lld\n", rows[i].key, rows[i].v);
        if (jc.paused) printf("  %-17s %lld\n", "legacy-paused", jc.paused);
    }
    return CLI_EXIT_OK;
}

const cli_setup queue_counts_cmd = {
    .spec = &counts_spec, .defs = counts_defs, .ndefs = 1, .opts = &counts_o, .body = queue_counts};

/* ---- queue pause / resume ------------------------------------------------------------- */

static const cmd_spec pause_spec = {
    "queue pause",
    "QUEUE",
    "Pause QUEUE for every worker (BullMQ v6: jobs stay waiting; workers stop fetching).",
    NULL,
    1,
    1,
    0,
    0};
static const cmd_spec resume_spec = {
    "queue resume", "QUEUE", "Resume a paused QUEUE.", NULL, 1, 1, 0, 0};

static int queue_pause(cli_ctx *x) {
    ferry_error err = {0};
    return ferry_queue_pause(x->q, &err) != 0 ? cli_report(x->spec, &x->conn, NULL, &err)
                                              : CLI_EXIT_OK;
}
static int queue_resume(cli_ctx *x) {
    ferry_error err = {0};
    return ferry_queue_resume(x->q, &err) != 0 ? cli_report(x->spec, &x->conn, NULL, &err)
                                               : CLI_EXIT_OK;
}

const cli_setup queue_pause_cmd = {.spec = &pause_spec, .body = queue_pause};
const cli_setup queue_resume_cmd = {.spec = &resume_spec, .body = queue_resume};

/* ---- queue obliterate ----------------------------------------------------------------- */

typedef struct obliterate_opts {
    int force, yes;
} obliterate_opts;

static const opt_def obliterate_defs[] = {
    {"yes", OPT_FLAG, NULL, offsetof(obliterate_opts, yes), 0, 0,
     "Required: confirms that QUEUE and all its jobs are to be deleted."},
    {"force", OPT_FLAG, NULL, offsetof(obliterate_opts, force), 0, 0,
     "Delete active jobs too (their workers then fail to finish them); without it a queue "
     "with active jobs is refused and left as it was."},
};

static const cmd_spec obliterate_spec = {
    "queue obliterate",
    "QUEUE --yes [--force]",
    "Delete QUEUE entirely (BullMQ queue.obliterate): all its jobs in every state, its job "
    "schedulers, events, counters and settings. Prints how many keys were deleted.",
    "The queue is paused first, so no worker takes a job meanwhile, then deleted in\n"
    "chunks of 1000 jobs per Redis script call, so a large queue never blocks Redis\n"
    "for long. Other queues under the same prefix are not touched. Stop the queue's\n"
    "workers first: running workers recreate their bookkeeping keys. A queue with\n"
    "active jobs is refused (exit 1) unless --force is given.\n",
    1,
    1,
    0,
    0};

static obliterate_opts obliterate_o;

static int obliterate_check(cli_ctx *x) {
    const obliterate_opts *oo = x->opts;
    char shown[256];
    if (!oo->yes)
        return opts_usage_error(&obliterate_spec,
                                "this deletes queue %s and all its jobs; add --yes to confirm",
                                SHOWN(x->r.pos[0], shown));
    return 0;
}

static int queue_obliterate(cli_ctx *x) {
    const obliterate_opts *oo = x->opts;
    char shown[256];
    ferry_error err = {0};
    long long deleted = 0;
    if (ferry_queue_obliterate(x->q, oo->force, &deleted, &err) != 0)
        return cli_report(&obliterate_spec, &x->conn, NULL, &err);
    printf("queue %s: obliterated, %lld key%s deleted\n", SHOWN(x->r.pos[0], shown), deleted,
           deleted == 1 ? "" : "s");
    return CLI_EXIT_OK;
}

const cli_setup queue_obliterate_cmd = {.spec = &obliterate_spec,
                                        .defs = obliterate_defs,
                                        .ndefs = sizeof obliterate_defs / sizeof obliterate_defs[0],
                                        .opts = &obliterate_o,
                                        .check = obliterate_check,
                                        .body = queue_obliterate};

/* ---- queue rate-limit / concurrency / global-rate-limit -------------------------------- */

/* A positional integer in [min, max]; prints the usage error and returns its code. */
static int parse_pos_int(const cmd_spec *spec, const char *what, const char *text, long long min,
                         long long max, long long *out) {
    long long v = 0;
    if (opts_parse_ll(text, &v) || v < min || v > max)
        return opts_usage_error(spec, "%s: expected an integer from %lld to %lld, got '%s'", what,
                                min, max, text);
    *out = v;
    return 0;
}

typedef struct limit_opts {
    int clear, show, remove, json;
    long long max, duration;
    long long value; /* the positional MS or N, checked (0 = not given) */
} limit_opts;

/* The three commands below share one option struct. */
static limit_opts limit_o;

static const opt_def rate_limit_defs[] = {
    {"clear", OPT_FLAG, NULL, offsetof(limit_opts, clear), 0, 0,
     "Delete the limiter key now (BullMQ removeRateLimitKey)."},
    {"show", OPT_FLAG, NULL, offsetof(limit_opts, show), 0, 0,
     "Print the remaining time (the default when neither MS nor --clear is given)."},
    {"json", OPT_FLAG, NULL, offsetof(limit_opts, json), 0, 0,
     "With --show: print {\"ttl\": MS} (BullMQ getRateLimitTtl(): -2 no key, -1 no expiry)."},
};

static const cmd_spec rate_limit_spec = {
    "queue rate-limit",
    "QUEUE [MS]",
    "Rate-limit QUEUE for MS milliseconds (BullMQ queue.rateLimit), remove the limit "
    "(--clear) or show what is left of it (--show). MS from 1 to 1099511627776.",
    "BullMQ rule: the limit only stops workers that have a limiter, i.e. a worker\n"
    "limiter (Node's `limiter` option, or ferry's worker limiter) or the queue's\n"
    "global rate limit (ferry queue global-rate-limit). Workers without one, Node or\n"
    "ferry, keep taking jobs. To stop every worker, pause the queue, or set a global\n"
    "rate limit before rate-limiting.\n"
    "\n"
    "The limit sets the queue's limiter key to 9007199254740991 with an expiry of\n"
    "MS; a job that a limited worker already runs is not interrupted. No output.\n"
    "\n"
    "--show prints what BullMQ's getRateLimitTtl() returns: with a global rate limit\n"
    "set, the ms until workers may fetch again (0 = not limited now); without one,\n"
    "the limiter key's remaining time (-2 = no key, -1 = no expiry).\n",
    1,
    2,
    0,
    0};

static int rate_limit_check(cli_ctx *x) {
    limit_opts *lo = x->opts;
    int rc;
    if (x->r.npos > 1) {
        if ((rc = parse_pos_int(&rate_limit_spec, "MS", x->r.pos[1], 1, FERRY_LIMIT_MS_MAX,
                                &lo->value)))
            return rc;
        if (lo->clear || lo->show)
            return opts_usage_error(&rate_limit_spec, "MS cannot be combined with --%s",
                                    lo->clear ? "clear" : "show");
    } else if (lo->clear && lo->show) {
        return opts_usage_error(&rate_limit_spec, "--clear cannot be combined with --show");
    }
    if (lo->json && (lo->value || lo->clear))
        return opts_usage_error(&rate_limit_spec, "--json only applies to --show");
    x->queue_use = lo->value || lo->clear ? CLI_QUEUE_WRITES : CLI_QUEUE_READS;
    return 0;
}

static int queue_rate_limit(cli_ctx *x) {
    const limit_opts *lo = x->opts;
    ferry_queue *q = x->q;
    char shown[256];
    ferry_error err = {0};
    long long ttl = 0, ms = lo->value;
    int rc = CLI_EXIT_OK;
    if (ms) {
        if (ferry_queue_rate_limit(q, ms, &err) != 0)
            rc = cli_report(&rate_limit_spec, &x->conn, NULL, &err);
    } else if (lo->clear) {
        if (ferry_queue_clear_rate_limit(q, NULL, &err) != 0)
            rc = cli_report(&rate_limit_spec, &x->conn, NULL, &err);
    } else if (ferry_queue_rate_limit_ttl(q, &ttl, &err) != 0) {
        rc = cli_report(&rate_limit_spec, &x->conn, NULL, &err);
    } else if (lo->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_int(&w, "ttl", ttl);
        jsonw_end(&w);
    } else if (ttl > 0) {
        printf("queue %s: rate limited for %lld ms\n", SHOWN(x->r.pos[0], shown), ttl);
    } else if (ttl == -1) {
        printf("queue %s: limiter key has no expiry\n", SHOWN(x->r.pos[0], shown));
    } else {
        printf("queue %s: not rate limited\n", SHOWN(x->r.pos[0], shown));
    }
    return rc;
}

const cli_setup queue_rate_limit_cmd = {.spec = &rate_limit_spec,
                                        .defs = rate_limit_defs,
                                        .ndefs = sizeof rate_limit_defs / sizeof rate_limit_defs[0],
                                        .opts = &limit_o,
                                        .check = rate_limit_check,
                                        .body = queue_rate_limit};

static const opt_def concurrency_defs[] = {
    {"remove", OPT_FLAG, NULL, offsetof(limit_opts, remove), 0, 0,
     "Remove the global concurrency (BullMQ removeGlobalConcurrency)."},
    {"json", OPT_FLAG, NULL, offsetof(limit_opts, json), 0, 0,
     "When showing: print {\"concurrency\": N}, null when not set."},
};

static const cmd_spec concurrency_spec = {
    "queue concurrency",
    "QUEUE [N]",
    "Set the global concurrency of QUEUE to N (BullMQ setGlobalConcurrency), remove it "
    "(--remove), or show it (no N). N from 1 to 2147483647.",
    "At most N jobs of the queue run at once across all its workers, Node BullMQ and\n"
    "ferry alike: a worker takes no job while the queue's active list holds N jobs.\n"
    "Each worker's own concurrency still applies. Idle workers notice a raised or\n"
    "removed setting at their next fetch (within their drain delay, 5 s by default).\n"
    "No output when setting or removing.\n",
    1,
    2,
    0,
    0};

static int concurrency_check(cli_ctx *x) {
    limit_opts *lo = x->opts;
    int rc;
    if (x->r.npos > 1 && (rc = parse_pos_int(&concurrency_spec, "N", x->r.pos[1], 1,
                                             FERRY_LIMIT_COUNT_MAX, &lo->value)))
        return rc;
    if (lo->value && lo->remove)
        return opts_usage_error(&concurrency_spec, "N cannot be combined with --remove");
    if (lo->json && (lo->value || lo->remove))
        return opts_usage_error(&concurrency_spec, "--json only applies when showing (no N)");
    x->queue_use = lo->value || lo->remove ? CLI_QUEUE_WRITES : CLI_QUEUE_READS;
    return 0;
}

static int queue_concurrency(cli_ctx *x) {
    const limit_opts *lo = x->opts;
    ferry_queue *q = x->q;
    char shown[256];
    ferry_error err = {0};
    long cur = 0;
    long long n = lo->value;
    int rc = CLI_EXIT_OK;
    if (n) {
        if (ferry_queue_set_global_concurrency(q, (long)n, &err) != 0)
            rc = cli_report(&concurrency_spec, &x->conn, NULL, &err);
    } else if (lo->remove) {
        if (ferry_queue_remove_global_concurrency(q, &err) != 0)
            rc = cli_report(&concurrency_spec, &x->conn, NULL, &err);
    } else if (ferry_queue_get_global_concurrency(q, &cur, &err) != 0) {
        rc = cli_report(&concurrency_spec, &x->conn, NULL, &err);
    } else if (lo->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        if (cur)
            jsonw_int(&w, "concurrency", cur);
        else
            jsonw_null(&w, "concurrency");
        jsonw_end(&w);
    } else if (cur) {
        printf("queue %s: global concurrency %ld\n", SHOWN(x->r.pos[0], shown), cur);
    } else {
        printf("queue %s: no global concurrency\n", SHOWN(x->r.pos[0], shown));
    }
    return rc;
}

const cli_setup queue_concurrency_cmd = {
    .spec = &concurrency_spec,
    .defs = concurrency_defs,
    .ndefs = sizeof concurrency_defs / sizeof concurrency_defs[0],
    .opts = &limit_o,
    .check = concurrency_check,
    .body = queue_concurrency};

static const opt_def global_rate_defs[] = {
    {"max", OPT_INT, "N", offsetof(limit_opts, max), 1, FERRY_LIMIT_COUNT_MAX,
     "At most N jobs per window (1 to 2147483647); needs --duration."},
    {"duration", OPT_INT, "MS", offsetof(limit_opts, duration), 1, FERRY_LIMIT_MS_MAX,
     "Window length in ms (1 to 1099511627776); needs --max."},
    {"remove", OPT_FLAG, NULL, offsetof(limit_opts, remove), 0, 0,
     "Remove the global rate limit (BullMQ removeGlobalRateLimit)."},
    {"json", OPT_FLAG, NULL, offsetof(limit_opts, json), 0, 0,
     "When showing: print {\"max\": N, \"duration\": MS}, both null when not set."},
};

static const cmd_spec global_rate_spec = {
    "queue global-rate-limit",
    "QUEUE",
    "Set the global rate limit of QUEUE (BullMQ setGlobalRateLimit) with --max and "
    "--duration, remove it (--remove), or show it (no options).",
    "Workers of the queue, Node BullMQ and ferry, take at most N jobs per window of\n"
    "MS milliseconds between them, whether or not they have a limiter of their own.\n"
    "The window is fixed: it starts with the first job taken after the previous one\n"
    "ended. A worker's own limiter duration replaces MS for that worker (BullMQ\n"
    "rule). With a global rate limit set, every worker also obeys\n"
    "`ferry queue rate-limit`. No output when setting or removing.\n",
    1,
    1,
    0,
    0};

static int global_rate_check(cli_ctx *x) {
    const limit_opts *lo = x->opts;
    int set = lo->max || lo->duration;
    if (set && (!lo->max || !lo->duration))
        return opts_usage_error(&global_rate_spec, "--%s needs --%s",
                                lo->max ? "max" : "duration", lo->max ? "duration" : "max");
    if (set && lo->remove)
        return opts_usage_error(&global_rate_spec,
                                "--remove cannot be combined with --max/--duration");
    if (lo->json && (set || lo->remove))
        return opts_usage_error(&global_rate_spec,
                                "--json only applies when showing (no options)");
    x->queue_use = set || lo->remove ? CLI_QUEUE_WRITES : CLI_QUEUE_READS;
    return 0;
}

static int queue_global_rate_limit(cli_ctx *x) {
    const limit_opts *lo = x->opts;
    ferry_queue *q = x->q;
    char shown[256];
    int set = lo->max || lo->duration;
    ferry_error err = {0};
    long max = 0;
    long long duration = 0;
    int rc = CLI_EXIT_OK;
    if (set) {
        if (ferry_queue_set_global_rate_limit(q, (long)lo->max, lo->duration, &err) != 0)
            rc = cli_report(&global_rate_spec, &x->conn, NULL, &err);
    } else if (lo->remove) {
        if (ferry_queue_remove_global_rate_limit(q, &err) != 0)
            rc = cli_report(&global_rate_spec, &x->conn, NULL, &err);
    } else if (ferry_queue_get_global_rate_limit(q, &max, &duration, &err) != 0) {
        rc = cli_report(&global_rate_spec, &x->conn, NULL, &err);
    } else if (lo->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        if (max) {
            jsonw_int(&w, "max", max);
            jsonw_int(&w, "duration", duration);
        } else {
            jsonw_null(&w, "max");
            jsonw_null(&w, "duration");
        }
        jsonw_end(&w);
    } else if (max) {
        printf("queue %s: global rate limit %ld jobs per %lld ms\n", SHOWN(x->r.pos[0], shown),
               max, duration);
    } else {
        printf("queue %s: no global rate limit\n", SHOWN(x->r.pos[0], shown));
    }
    return rc;
}

const cli_setup queue_global_rate_limit_cmd = {
    .spec = &global_rate_spec,
    .defs = global_rate_defs,
    .ndefs = sizeof global_rate_defs / sizeof global_rate_defs[0],
    .opts = &limit_o,
    .check = global_rate_check,
    .body = queue_global_rate_limit};

const cli_setup queue_add_cmd = {.main = queue_add};
const cli_setup queue_add_bulk_cmd = {.main = queue_add_bulk};
