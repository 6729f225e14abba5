/* cmd_bench.c - `ferry bench`: in-process producer and no-op worker on a throwaway queue,
 * reporting jobs/s, add->start latency, and CPU per job of the client and of Redis.
 *
 * Redis CPU comes from `INFO cpu` (used_cpu_sys + used_cpu_user) sampled before and after
 * the measured phase, on a connection of its own (ferry_redis_connect / ferry_redis_info,
 * the public INFO-only connection), or by a shell command given with --redis-info-cmd. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "jsonw.h"
#include "util/numtext.h"

#define BULK_BATCH 1000

typedef struct bench_opts {
    const char *mode, *queue;
    long long jobs, concurrency, lanes, payload, rate, wait_ms, warmup;
    int json, keep, no_fill;
    const char *redis_info_cmd;
} bench_opts;

static const opt_def bench_defs[] = {
    {"mode", OPT_STRING, "M", offsetof(bench_opts, mode), 0, 0,
     "addbulk (add in batches of 1000), add (one at a time), process (pre-add, then time a "
     "no-op worker) or latency (add at --rate with an idle worker; add->start latency). "
     "Default process."},
    {"jobs", OPT_INT, "N", offsetof(bench_opts, jobs), 1, 100000000, "Jobs (default 10000)."},
    {"warmup", OPT_INT, "W", offsetof(bench_opts, warmup), 0, 100000000,
     "Untimed jobs first, in the same process (default 0): add modes add W jobs before the "
     "timer starts; process mode fills N+W jobs (with --no-fill, the queue must hold N+W) "
     "and times from the W-th completion to the last; latency mode adds N+W jobs and drops "
     "the first W samples. So start-up and warm-up costs stay out of the figures."},
    {"concurrency", OPT_INT, "K", offsetof(bench_opts, concurrency), 1, FERRY_CONCURRENCY_MAX,
     "Worker concurrency (default 100)."},
    {"lanes", OPT_INT, "N", offsetof(bench_opts, lanes), 1, 4,
     "Worker lanes (default: the worker's automatic choice, 2 from concurrency 8 up)."},
    {"payload", OPT_INT, "BYTES", offsetof(bench_opts, payload), 0, FERRY_DEFAULT_MAX_PAYLOAD,
     "Approximate size of each job's data JSON (default 64)."},
    {"rate", OPT_INT, "R", offsetof(bench_opts, rate), 1, 1000000,
     "latency mode: jobs added per second (default 500)."},
    {"wait", OPT_INT, "MS", offsetof(bench_opts, wait_ms), 1, 3600000,
     "Give up (exit 1) when no job has completed for this long (default 120000). A failed "
     "job voids the run at once (exit 1, no figures)."},
    {"queue", OPT_STRING, "Q", offsetof(bench_opts, queue), 0, 0,
     "Use queue Q under the usual prefix (--prefix / $FERRY_PREFIX / bull) instead of a fresh "
     "prefix; with --no-fill, process jobs someone else added (e.g. the Node baseline)."},
    {"no-fill", OPT_FLAG, NULL, offsetof(bench_opts, no_fill), 0, 0,
     "process mode with --queue: do not pre-add; time the worker on the N jobs (N+W with "
     "--warmup) already there."},
    {"json", OPT_FLAG, NULL, offsetof(bench_opts, json), 0, 0,
     "Print one JSON object for the run (for bench/run.sh)."},
    {"keep", OPT_FLAG, NULL, offsetof(bench_opts, keep), 0, 0,
     "Leave the queue in Redis: the jobs addbulk/add added and the queue's keys. By default "
     "the fresh queue is obliterated at the end, and a --queue queue is drained of the jobs "
     "addbulk/add added."},
    {"redis-info-cmd", OPT_STRING, "CMD", offsetof(bench_opts, redis_info_cmd), 0, 0,
     "Shell command printing Redis `INFO cpu` (run before and after the measured phase; "
     "$FERRY_BENCH_REDIS_URL holds the URL). Default: INFO cpu on a connection of the "
     "bench's own. \"none\" disables it."},
};

static const cmd_spec bench_spec = {
    "bench",
    "",
    "Benchmark ferry against a Redis server on a fresh queue (its own prefix, deleted "
    "afterwards). Reports jobs/s, client CPU per job (getrusage) and Redis CPU per job "
    "(INFO cpu).",
    NULL,
    0,
    0,
    0,
    0};

/* ---- measurements ------------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long realtime_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double client_cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* used_cpu_sys + used_cpu_user in an `INFO cpu` text, or -1. */
static double parse_info_cpu(const char *text) {
    double sys = -1, user = -1;
    for (const char *line = text; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (!strncmp(line, "used_cpu_sys:", 13)) sys = ferryx_strtod_c(line + 13, NULL);
        if (!strncmp(line, "used_cpu_user:", 14)) user = ferryx_strtod_c(line + 14, NULL);
    }
    return sys < 0 || user < 0 ? -1 : sys + user;
}

/* Where Redis CPU samples come from: a shell command (--redis-info-cmd), or INFO on a
 * connection of our own (fast: a sample is one round trip, so the warm-up's end is marked
 * within a fraction of a millisecond). */
typedef struct info_source {
    const char *cmd; /* shell command, or NULL */
    ferry_redis_conn *conn;
} info_source;

/* Redis' CPU seconds so far, or -1 when not available. */
static double redis_cpu_s(info_source *src) {
    if (src->conn) {
        char *text = NULL;
        ferry_error e = {0};
        double v = -1;
        if (ferry_redis_info(src->conn, "cpu", &text, &e) == 0) v = parse_info_cpu(text);
        free(text);
        return v;
    }
    if (!src->cmd) return -1;
    FILE *p = popen(src->cmd, "r");
    if (!p) return -1;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    int st = pclose(p);
    return st != 0 ? -1 : parse_info_cpu(buf);
}

/* Set up the Redis CPU source: --redis-info-cmd ("none": no Redis figures), else a
 * connection with the bench's own Redis options. */
static void info_open(const bench_opts *o, const cli_conn *c, info_source *src) {
    *src = (info_source){0};
    if (o->redis_info_cmd) {
        if (strcmp(o->redis_info_cmd, "none")) {
            setenv("FERRY_BENCH_REDIS_URL", c->redis_url, 1);
            src->cmd = o->redis_info_cmd;
        }
        return;
    }
    ferry_error e = {0};
    if (ferry_redis_connect(&c->redis, &src->conn, &e) != 0) {
        src->conn = NULL;
        fprintf(stderr, "ferry bench: no Redis CPU figures: %s\n", e.message);
    }
}

/* ---- shared run state --------------------------------------------------------------------- */

typedef struct bench_run {
    const bench_opts *o;
    const cli_conn *conn;
    const char *queue, *prefix;
    char *data; /* payload JSON (add/addbulk/process) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    long long done; /* completed jobs seen by the callback */
    long long skip; /* latency mode: samples to drop first (the warm-up) */
    long long seen; /* latency mode: samples seen */
    long long target;
    double *lat_ms; /* latency mode: one sample per job */
    long long nlat;
    unsigned long long errors; /* failed jobs */
    char first_failure[256];   /* the first failed job's reason */
} bench_run;

static char *make_payload(long long bytes) {
    /* {"p":"aaa..."}: 8 bytes of framing */
    size_t fill = bytes > 8 ? (size_t)bytes - 8 : 0;
    char *s = malloc(fill + 16);
    if (!s) return NULL;
    memcpy(s, "{\"p\":\"", 6);
    memset(s + 6, 'a', fill);
    memcpy(s + 6 + fill, "\"}", 3);
    return s;
}

static ferry_outcome noop_handler(ferry_job *job, void *ud) {
    (void)job;
    (void)ud;
    return FERRY_COMPLETED;
}

/* latency mode: the payload starts with {"t":<realtime us>, */
static ferry_outcome latency_handler(ferry_job *job, void *ud) {
    bench_run *b = ud;
    long long t_now = realtime_us();
    const char *d = ferry_job_data(job);
    const char *t = d ? strstr(d, "\"t\":") : NULL;
    if (t) {
        long long t0 = strtoll(t + 4, NULL, 10);
        pthread_mutex_lock(&b->lock);
        if (b->seen++ >= b->skip && b->nlat < b->o->jobs)
            b->lat_ms[b->nlat++] = (double)(t_now - t0) / 1000.0;
        pthread_mutex_unlock(&b->lock);
    }
    return FERRY_COMPLETED;
}

static void on_completed(const ferry_job *job, const char *rv, void *ud) {
    (void)job;
    (void)rv;
    bench_run *b = ud;
    pthread_mutex_lock(&b->lock);
    if (++b->done >= b->target) pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static void on_failed(const ferry_job *job, const char *reason, int final, void *ud) {
    (void)job;
    (void) final;
    bench_run *b = ud;
    pthread_mutex_lock(&b->lock);
    /* a failed job voids the run: the waiter stops at once instead of waiting out --wait
     * for a completion that will never come (the first reason is kept for its message) */
    if (b->errors++ == 0)
        snprintf(b->first_failure, sizeof b->first_failure, "%s",
                 reason ? reason : "no reason given");
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static void on_error(const ferry_error *err, void *ud) {
    bench_run *b = ud;
    cli_report(&bench_spec, b->conn, "worker", err);
}

static int start_worker(bench_run *b, ferry_handler_fn fn, ferry_worker **out) {
    ferry_worker_options wo;
    ferry_worker_options_init(&wo);
    wo.redis = &b->conn->redis;
    wo.prefix = b->prefix;
    wo.concurrency = (int)b->o->concurrency;
    wo.lanes = (int)b->o->lanes;
    wo.remove_on_complete = "true";
    wo.callbacks.completed = on_completed;
    wo.callbacks.failed = on_failed;
    wo.callbacks.error = on_error;
    wo.userdata = b;
    ferry_error err = {0};
    *out = NULL;
    if (ferry_worker_create(b->queue, &wo, fn, b, out, &err) != 0) {
        *out = NULL;
        return cli_report(&bench_spec, b->conn, "worker", &err);
    }
    if (ferry_worker_start(*out, &err) != 0) {
        ferry_worker_free(*out);
        *out = NULL;
        return cli_report(&bench_spec, b->conn, "worker", &err);
    }
    return 0;
}

/* Wait until `target` completions, a failed job (the run is void: no-op handlers do not
 * fail, so something is wrong) or the --wait deadline after the last progress. */
static int wait_done(bench_run *b, long long target) {
    pthread_mutex_lock(&b->lock);
    b->target = target;
    long long last = b->done;
    double last_progress = now_s();
    while (b->done < target && !b->errors) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->cond, &b->lock, &ts);
        if (b->done != last) {
            last = b->done;
            last_progress = now_s();
        } else if ((now_s() - last_progress) * 1000 > (double)b->o->wait_ms) {
            break;
        }
    }
    long long done = b->done;
    unsigned long long failed = b->errors;
    char reason[sizeof b->first_failure];
    memcpy(reason, b->first_failure, sizeof reason);
    pthread_mutex_unlock(&b->lock);
    if (failed) {
        fprintf(stderr, "ferry bench: %llu job%s failed (first: %s); the run is void\n", failed,
                failed == 1 ? "" : "s", reason);
        return CLI_EXIT_RUNTIME;
    }
    if (done < target) {
        fprintf(stderr, "ferry bench: only %lld of %lld jobs completed (no progress for %lld ms)\n",
                done, target, b->o->wait_ms);
        return CLI_EXIT_RUNTIME;
    }
    return 0;
}

static int stop_worker(ferry_worker *w) {
    if (!w) return 0;
    ferry_worker_stop(w);
    int rc = ferry_worker_close(w, 30000);
    if (rc == 0) ferry_worker_free(w);
    return rc;
}

/* Add `n` jobs in batches of BULK_BATCH (or one by one). */
static int add_jobs(bench_run *b, ferry_queue *q, long long n, int bulk, const char *opts_json) {
    ferry_job_spec specs[BULK_BATCH];
    for (int i = 0; i < BULK_BATCH; i++)
        specs[i] = (ferry_job_spec){"bench", b->data, opts_json};
    ferry_error err = {0};
    for (long long added = 0; added < n;) {
        long long k = bulk ? (n - added < BULK_BATCH ? n - added : BULK_BATCH) : 1;
        int rc = bulk ? ferry_queue_add_bulk(q, specs, (size_t)k, NULL, &err)
                      : ferry_queue_add(q, &specs[0], NULL, &err);
        if (rc) return cli_report(&bench_spec, b->conn, "add", &err);
        added += k;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *v, long long n, double p) {
    if (n == 0) return NAN;
    long long i = (long long)ceil(p / 100.0 * (double)n) - 1;
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    return v[i];
}

/* latency mode: add at a fixed rate with a running idle worker. *producer_s receives how
 * long the adds took (the achieved rate is jobs / that). */
static int run_latency(bench_run *b, ferry_queue *q, double *producer_s) {
    const bench_opts *o = b->o;
    size_t fill = o->payload > 32 ? (size_t)o->payload - 32 : 0;
    char *buf = malloc(fill + 64);
    if (!buf) return CLI_EXIT_RUNTIME;
    ferry_error err = {0};
    double interval = 1.0 / (double)o->rate;
    double t0 = now_s();
    int rc = 0;
    long long total = o->jobs + o->warmup;
    for (long long i = 0; i < total; i++) {
        double due = t0 + (double)i * interval;
        double wait = due - now_s();
        if (wait > 0) {
            struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
            nanosleep(&ts, NULL);
        }
        int len = snprintf(buf, 64, "{\"t\":%lld,\"p\":\"", realtime_us());
        memset(buf + len, 'a', fill);
        memcpy(buf + len + fill, "\"}", 3);
        ferry_job_spec spec = {"bench", buf, "{\"removeOnComplete\":true}"};
        if (ferry_queue_add(q, &spec, NULL, &err) != 0) {
            rc = cli_report(&bench_spec, b->conn, "add", &err);
            break;
        }
    }
    free(buf);
    *producer_s = now_s() - t0;
    return rc ? rc : wait_done(b, total);
}

/* ---- main --------------------------------------------------------------------------------- */

/* `counted`: the jobs the timed phase covered (N, or in process mode with a warm-up the jobs
 * completed after the timer started; in latency mode all jobs added, for the rate). */
static void report(const bench_run *b, long long counted, double elapsed, double ccpu,
                   double rcpu) {
    const bench_opts *o = b->o;
    double n = (double)counted;
    double *lat = b->lat_ms;
    if (lat) qsort(lat, (size_t)b->nlat, sizeof *lat, cmp_double);
    if (o->json) {
        jsonw w;
        jsonw_begin(&w, stdout);
        jsonw_str(&w, "impl", "ferry");
        jsonw_str(&w, "mode", o->mode);
        jsonw_int(&w, "jobs", o->jobs);
        jsonw_int(&w, "warmup", o->warmup);
        jsonw_int(&w, "timed_jobs", counted);
        jsonw_int(&w, "concurrency", o->concurrency);
        jsonw_int(&w, "payload", o->payload);
        if (lat) jsonw_int(&w, "rate", o->rate);
        jsonw_double(&w, "seconds", elapsed);
        jsonw_double(&w, "jobs_per_s", n / elapsed);
        jsonw_double(&w, "client_cpu_us_per_job", ccpu * 1e6 / n);
        if (rcpu >= 0)
            jsonw_double(&w, "redis_cpu_us_per_job", rcpu * 1e6 / n);
        else
            jsonw_null(&w, "redis_cpu_us_per_job");
        if (lat && b->nlat) {
            jsonw_double(&w, "p50_ms", percentile(lat, b->nlat, 50));
            jsonw_double(&w, "p99_ms", percentile(lat, b->nlat, 99));
            jsonw_double(&w, "max_ms", lat[b->nlat - 1]);
        } else if (lat) {
            jsonw_null(&w, "p50_ms");
            jsonw_null(&w, "p99_ms");
            jsonw_null(&w, "max_ms");
        }
        jsonw_int(&w, "failed", (long long)b->errors);
        jsonw_end(&w);
        return;
    }
    printf("mode %s: %lld jobs (+%lld warm-up), concurrency %lld, payload %lld bytes\n", o->mode,
           o->jobs, o->warmup, o->concurrency, o->payload);
    printf("  elapsed        %.3f s (%.0f jobs/s)\n", elapsed, n / elapsed);
    printf("  client CPU     %.1f us/job\n", ccpu * 1e6 / n);
    if (rcpu >= 0)
        printf("  Redis CPU      %.1f us/job\n", rcpu * 1e6 / n);
    else
        printf("  Redis CPU      n/a (see --redis-info-cmd)\n");
    if (lat)
        printf("  latency        p50 %.2f ms, p99 %.2f ms, max %.2f ms (add -> handler start, "
               "%lld/s)\n",
               percentile(lat, b->nlat, 50), percentile(lat, b->nlat, 99),
               b->nlat ? lat[b->nlat - 1] : NAN, o->rate);
    if (b->errors) printf("  failed jobs    %llu\n", b->errors);
}

static int bench_main(int argc, char **argv) {
    cli_conn conn = {0};
    bench_opts o = {.mode = "process",
                    .jobs = 10000,
                    .concurrency = 100,
                    .payload = 64,
                    .rate = 500,
                    .wait_ms = 120000};
    opt_group groups[] = {{"Options", bench_defs, sizeof bench_defs / sizeof bench_defs[0], &o},
                          cli_conn_group(&conn, 0)};
    opt_result r;
    int rc = opts_parse(&bench_spec, groups, 2, argc, argv, &r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    free(r.pos);
    int is_bulk = !strcmp(o.mode, "addbulk"), is_add = !strcmp(o.mode, "add");
    int is_proc = !strcmp(o.mode, "process"), is_lat = !strcmp(o.mode, "latency");
    if (!is_bulk && !is_add && !is_proc && !is_lat)
        return opts_usage_error(&bench_spec,
                                "--mode: expected addbulk, add, process or latency, "
                                "got '%s'",
                                o.mode);
    if (o.no_fill && (!is_proc || !o.queue))
        return opts_usage_error(&bench_spec, "--no-fill needs --mode process and --queue");
    int prefix_given = conn.prefix != NULL;
    if ((rc = cli_conn_resolve(&bench_spec, &conn))) return rc;
    /* A fresh prefix per run so nothing else is disturbed and nothing is reused, unless the
     * caller named the queue (to share it with another benchmark). */
    char prefix[200], queue[200];
    if (o.queue) {
        snprintf(prefix, sizeof prefix, "%s", conn.prefix);
        snprintf(queue, sizeof queue, "%s", o.queue);
    } else {
        snprintf(prefix, sizeof prefix, "%s%sferrybench%d_%lld", prefix_given ? conn.prefix : "",
                 prefix_given ? ":" : "", (int)getpid(), realtime_us() / 1000);
        snprintf(queue, sizeof queue, "bench");
    }
    bench_run b = {.o = &o, .conn = &conn, .queue = queue, .prefix = prefix};
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    ferry_queue *q = NULL;
    ferry_worker *w = NULL;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &conn.redis;
    qo.prefix = prefix;
    ferry_error err = {0};
    if (!(b.data = make_payload(o.payload))) return CLI_EXIT_RUNTIME;
    if (is_lat && !(b.lat_ms = calloc((size_t)o.jobs, sizeof *b.lat_ms))) {
        free(b.data);
        return CLI_EXIT_RUNTIME;
    }
    info_source info = {0};
    if (ferry_queue_open(queue, &qo, &q, &err) != 0) {
        q = NULL;
        rc = cli_report(&bench_spec, &conn, NULL, &err);
        goto out;
    }
    info_open(&o, &conn, &info); /* after the queue: an unreachable server is reported once */
    const char *remove_opts = "{\"removeOnComplete\":true}";
    const long long total = o.jobs + o.warmup;
    if (is_proc && !o.no_fill && (rc = add_jobs(&b, q, total, 1, remove_opts))) goto out;
    if (is_lat) {
        b.skip = o.warmup;
        if ((rc = start_worker(&b, latency_handler, &w))) goto out;
    }
    /* the warm-up: untimed work of the same kind in this process */
    if ((is_bulk || is_add) && o.warmup && (rc = add_jobs(&b, q, o.warmup, is_bulk, remove_opts)))
        goto out;
    if (is_proc && o.warmup) {
        if ((rc = start_worker(&b, noop_handler, &w)) || (rc = wait_done(&b, o.warmup))) goto out;
    }

    /* Redis first (a redis-cli run takes a few ms), then the clock and the completions so far:
     * the jobs completed while INFO ran are outside the count, their Redis CPU inside (a
     * fraction of a percent of a timed phase; the Node baseline reads in the same order). */
    double producer_s = 0;
    double rcpu0 = redis_cpu_s(&info), ccpu0 = client_cpu_s(), t0 = now_s();
    pthread_mutex_lock(&b.lock);
    long long done0 = b.done;
    pthread_mutex_unlock(&b.lock);
    long long counted = o.jobs;
    if (is_bulk || is_add) {
        rc = add_jobs(&b, q, o.jobs, is_bulk, remove_opts);
    } else if (is_proc) {
        if (!w) rc = start_worker(&b, noop_handler, &w);
        if (!rc) rc = wait_done(&b, total);
        counted = total - done0;
    } else {
        rc = run_latency(&b, q, &producer_s);
        counted = total; /* the producer's rate covers every add */
    }
    double elapsed = is_lat ? producer_s : now_s() - t0;
    double ccpu = client_cpu_s() - ccpu0, rcpu1 = redis_cpu_s(&info);
    if (!rc && counted < 1) {
        fprintf(stderr, "ferry bench: every job completed before the timer started (raise "
                        "--jobs or lower --warmup)\n");
        rc = CLI_EXIT_RUNTIME;
    }
    if (!rc) report(&b, counted, elapsed, ccpu, rcpu0 >= 0 && rcpu1 >= 0 ? rcpu1 - rcpu0 : -1);

    /* addbulk/add leave N jobs behind. The fresh queue is obliterated below with them; a
     * named queue, shared with others, is drained instead (the jobs carry removeOnComplete). */
    if (!rc && (is_bulk || is_add) && !o.keep && o.queue) {
        pthread_mutex_lock(&b.lock);
        b.done = 0;
        pthread_mutex_unlock(&b.lock);
        if (!(rc = start_worker(&b, noop_handler, &w))) rc = wait_done(&b, total);
    }
out:
    if (stop_worker(w) != 0 && !rc) rc = CLI_EXIT_RUNTIME;
    /* The fresh queue is ours alone: delete every key of it (force: a worker that did not
     * close in time may still hold jobs), so runs leave nothing behind. */
    if (q && !o.queue && !o.keep && ferry_queue_obliterate(q, 1, NULL, &err) != 0) {
        cli_report(&bench_spec, &conn, "deleting the bench queue", &err);
        if (!rc) rc = CLI_EXIT_RUNTIME;
    }
    ferry_queue_close(q);
    ferry_redis_disconnect(info.conn);
    free(b.data);
    free(b.lat_ms);
    return rc;
}

const cli_setup bench_cmd = {.main = bench_main};
