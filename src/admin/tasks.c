/* tasks.c - `ferry serve`'s server-side tasks: a retry-all of a queue's finished jobs by
 * selector (ferry_queue_retry_selected), each on a thread of its own with its own queue
 * handle, so a long run never holds a request or a borrowed handle. The registry keeps the
 * running tasks (at most FERRY__ADMIN_TASKS_RUNNING_MAX) and the last
 * FERRY__ADMIN_TASKS_FINISHED_KEPT finished ones, newest first; a cancel is seen after the
 * current chunk; the server's stop cancels every task and joins its thread. A task's finish
 * writes its own audit row (audit.c) and log record. A task looks at most at the server's
 * scan limit of jobs (FERRY_SERVE_TASK_SCAN_MAX in the environment, else
 * FERRY_QUEUE_FIND_SCAN_MAX) and says so when it stops there (state "stopped"). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/framework.h"
#include "admin/tasks.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

#define TASK_SCAN_MAX_ENV "FERRY_SERVE_TASK_SCAN_MAX"

typedef struct admin_task {
    struct admin_task *next; /* [tasks mu] newer first */
    ferry_admin_server *srv;
    char id[48];
    char *queue, *name, *reason, *data, *created_by;
    char sel_state[16];
    char request_id[ADMIN_REQUEST_ID_MAX + 1];
    long long created_at; /* ms since the epoch */
    long long scan_max;   /* jobs it looks at, at most */
    /* [tasks mu] */
    const char *state; /* "running", "done", "stopped", "cancelled", "failed" */
    long long finished_at;
    ferry_queue_retry_counts counts;
    char *error;
    char *message; /* why it stopped and how to go on ("stopped" only) */
    int joined;
    atomic_int cancel;
    atomic_int exited; /* the thread is past its last use of the task: join does not wait */
    pthread_t thread;
} admin_task;

struct admin_tasks {
    pthread_mutex_t mu;
    admin_task *head;
    int running;
    int stopping;
    unsigned long seq;
    long long scan_max; /* a task's scan limit (TASK_SCAN_MAX_ENV or FERRY_QUEUE_FIND_SCAN_MAX) */
};

static void task_free(admin_task *t) {
    if (!t) return;
    free(t->queue);
    free(t->name);
    free(t->reason);
    free(t->data);
    free(t->created_by);
    free(t->error);
    free(t->message);
    free(t);
}

/* The scan limit from the environment: unset = FERRY_QUEUE_FIND_SCAN_MAX; anything but a
 * whole number in 1..FERRY_QUEUE_FIND_SCAN_MAX is refused. */
static int scan_max_from_env(long long *v, ferry_error *err) {
    const char *env = getenv(TASK_SCAN_MAX_ENV);
    *v = FERRY_QUEUE_FIND_SCAN_MAX;
    if (!env) return 0;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(env, &end, 10);
    if (errno || end == env || *end || !(env[0] >= '0' && env[0] <= '9') || n < 1 ||
        n > FERRY_QUEUE_FIND_SCAN_MAX)
        return ferry__err(err, FERRY_EINVAL, "%s: expected a whole number of jobs in 1..%lld",
                          TASK_SCAN_MAX_ENV, (long long)FERRY_QUEUE_FIND_SCAN_MAX);
    *v = n;
    return 0;
}

int ferry__admin_tasks_create(ferry_admin_server *s, ferry_error *err) {
    long long scan_max;
    int rc = scan_max_from_env(&scan_max, err);
    if (rc) return rc;
    struct admin_tasks *ts = calloc(1, sizeof *ts);
    if (!ts) return ferry__err(err, FERRY_ENOMEM, "tasks: out of memory");
    ts->scan_max = scan_max;
    pthread_mutex_init(&ts->mu, NULL);
    s->tasks = ts;
    return 0;
}

/* Called twice at a normal stop: before libmicrohttpd's daemon stops (cancel, join, drop
 * the tasks, keep the empty registry so a late request still finds it, refusing new tasks)
 * and from the server's free after it (free the registry). A start that failed has no
 * daemon: one call does both. */
void ferry__admin_tasks_stop(ferry_admin_server *s) {
    struct admin_tasks *ts = s->tasks;
    if (!ts) return;
    pthread_mutex_lock(&ts->mu);
    int second = ts->stopping;
    ts->stopping = 1;
    for (admin_task *t = ts->head; t; t = t->next)
        atomic_store(&t->cancel, 1);
    pthread_mutex_unlock(&ts->mu);
    /* Join outside the lock (a finishing thread takes it); the list does not grow while
     * stopping, and only this thread removes from it now. */
    for (admin_task *t = ts->head; t; t = t->next)
        if (!t->joined) {
            pthread_join(t->thread, NULL);
            t->joined = 1;
        }
    pthread_mutex_lock(&ts->mu);
    admin_task *t = ts->head;
    ts->head = NULL;
    pthread_mutex_unlock(&ts->mu);
    while (t) {
        admin_task *next = t->next;
        task_free(t);
        t = next;
    }
    if (!second && s->daemon) return; /* requests may still come: keep the registry */
    pthread_mutex_destroy(&ts->mu);
    free(ts);
    s->tasks = NULL;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static json_t *str_or_null(const char *s) {
    if (!s) return json_null();
    json_t *v = json_string(s);
    return v ? v : json_null();
}

/* The TASK object (caller holds ts->mu). */
static json_t *task_json(const admin_task *t) {
    json_t *sel = json_object(), *o = json_object();
    if (!sel || !o) {
        json_decref(sel);
        json_decref(o);
        return NULL;
    }
    json_object_set_new(sel, "state", json_string(t->sel_state));
    json_object_set_new(sel, "name", str_or_null(t->name));
    json_object_set_new(sel, "reasonContains", str_or_null(t->reason));
    json_object_set_new(sel, "dataContains", str_or_null(t->data));
    json_object_set_new(o, "id", json_string(t->id));
    json_object_set_new(o, "kind", json_string("retry-all"));
    json_object_set_new(o, "queue", str_or_null(t->queue));
    json_object_set_new(o, "selector", sel);
    json_object_set_new(o, "state", json_string(t->state));
    json_object_set_new(o, "total", json_integer(t->counts.total));
    json_object_set_new(o, "scanned", json_integer(t->counts.scanned));
    json_object_set_new(o, "matched", json_integer(t->counts.matched));
    json_object_set_new(o, "retried", json_integer(t->counts.retried));
    json_object_set_new(o, "skipped", json_integer(t->counts.skipped));
    json_object_set_new(o, "scanMax", json_integer(t->scan_max));
    json_object_set_new(o, "error", str_or_null(t->error));
    json_object_set_new(o, "message", str_or_null(t->message));
    json_object_set_new(o, "createdBy", str_or_null(t->created_by));
    json_object_set_new(o, "createdAt", json_integer(t->created_at));
    json_object_set_new(o, "finishedAt",
                        t->finished_at ? json_integer(t->finished_at) : json_null());
    return o;
}

static struct admin_tasks *tasks_of(ferry__admin_req *r) {
    return ((admin_request *)r)->srv->tasks;
}

json_t *ferry__admin_tasks_json(ferry__admin_req *r) {
    struct admin_tasks *ts = tasks_of(r);
    json_t *arr = json_array();
    if (!arr) return NULL;
    pthread_mutex_lock(&ts->mu);
    int finished = 0; /* one more may be held until the next start prunes it */
    for (admin_task *t = ts->head; t; t = t->next)
        if (!strcmp(t->state, "running") || ++finished <= FERRY__ADMIN_TASKS_FINISHED_KEPT)
            json_array_append_new(arr, task_json(t));
    pthread_mutex_unlock(&ts->mu);
    return json_pack("{s:o}", "tasks", arr);
}

static admin_task *find_task(struct admin_tasks *ts, const char *id) {
    for (admin_task *t = ts->head; t; t = t->next)
        if (!strcmp(t->id, id)) return t;
    return NULL;
}

json_t *ferry__admin_task_json(ferry__admin_req *r, const char *id) {
    struct admin_tasks *ts = tasks_of(r);
    pthread_mutex_lock(&ts->mu);
    admin_task *t = find_task(ts, id);
    json_t *o = t ? task_json(t) : NULL;
    pthread_mutex_unlock(&ts->mu);
    return o;
}

int ferry__admin_task_cancel(ferry__admin_req *r, const char *id, json_t **task) {
    struct admin_tasks *ts = tasks_of(r);
    *task = NULL;
    pthread_mutex_lock(&ts->mu);
    admin_task *t = find_task(ts, id);
    int rc = FERRY_ENOTFOUND;
    if (t) {
        rc = strcmp(t->state, "running") ? FERRY_ESTATE : 0;
        if (rc == 0) atomic_store(&t->cancel, 1);
        *task = task_json(t);
    }
    pthread_mutex_unlock(&ts->mu);
    return rc;
}

/* ---- the task's thread ------------------------------------------------------------------ */

static int task_progress(void *ctx, const ferry_queue_retry_counts *so_far) {
    admin_task *t = ctx;
    struct admin_tasks *ts = t->srv->tasks;
    pthread_mutex_lock(&ts->mu);
    t->counts = *so_far;
    pthread_mutex_unlock(&ts->mu);
    return atomic_load(&t->cancel);
}

static void *task_main(void *arg) {
    admin_task *t = arg;
    ferry_admin_server *s = t->srv;
    struct admin_tasks *ts = s->tasks;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = s->cfg.redis;
    qo.prefix = s->cfg.prefix;
    qo.skip_meta_update = 1;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    ferry_queue_retry_counts c = {0};
    int ended = FERRY_RETRY_SELECT_DONE;
    int rc = ferry_queue_open(t->queue, &qo, &q, &e);
    if (rc == 0) {
        ferry_queue_retry_select sel = {.state = t->sel_state,
                                        .name = t->name,
                                        .reason_contains = t->reason,
                                        .data_contains = t->data,
                                        .scan_max = t->scan_max,
                                        .progress = task_progress,
                                        .progress_ctx = t};
        rc = ferry_queue_retry_selected(q, &sel, &c, &ended, &e);
    }
    ferry_queue_close(q);
    const char *state = rc                                      ? "failed"
                        : ended == FERRY_RETRY_SELECT_CANCELLED ? "cancelled"
                        : ended == FERRY_RETRY_SELECT_SCAN_MAX  ? "stopped"
                                                                : "done";
    char message[400] = "";
    if (!rc && ended == FERRY_RETRY_SELECT_SCAN_MAX)
        snprintf(message, sizeof message,
                 "stopped at the scan limit of %lld jobs (%s): %lld of the %lld jobs were looked "
                 "at, the rest were not; start the retry-all again to go on (the jobs retried "
                 "have left the set, the ones that did not match are looked at again), narrow "
                 "the selector%s",
                 t->scan_max, TASK_SCAN_MAX_ENV, c.scanned, c.total,
                 t->scan_max < FERRY_QUEUE_FIND_SCAN_MAX ? ", or raise the limit" : "");
    char summary[1200], shown[128], path[128];
    snprintf(summary, sizeof summary,
             "task %s retry-all %s: retried %lld of %lld matched, %lld scanned; %s%s%s", t->id,
             ferryx_printable(t->queue, shown, sizeof shown), c.retried, c.matched, c.scanned,
             state, rc || message[0] ? ": " : "", rc ? e.message : message);
    snprintf(path, sizeof path, "/api/tasks/%s", t->id);
    pthread_mutex_lock(&ts->mu);
    t->counts = c;
    if (rc) t->error = strdup(e.message);
    if (message[0]) t->message = strdup(message);
    t->finished_at = (long long)ferry__now_ms();
    t->state = state;
    ts->running--;
    pthread_mutex_unlock(&ts->mu);
    /* After the state: a client that sees "done" may look for the row a moment later. */
    ferry__admin_audit_internal(s, t->created_by, "TASK", path, rc ? 500 : 200, summary,
                                t->request_id);
    atomic_store(&t->exited, 1); /* the last use of t on this thread */
    return NULL;
}

/* Unlink finished tasks past the kept number whose thread has exited (caller holds ts->mu)
 * and return them, for prune_free after the lock. A task still writing its audit row stays
 * until a later prune (or the stop), so that neither the lock nor the request waits for
 * it: GET /api/tasks shows only the kept number anyway. */
static admin_task *prune_unlink(struct admin_tasks *ts) {
    admin_task *dropped = NULL;
    int kept = 0;
    for (admin_task **pp = &ts->head; *pp;) {
        admin_task *t = *pp;
        if (strcmp(t->state, "running") != 0 && ++kept > FERRY__ADMIN_TASKS_FINISHED_KEPT &&
            atomic_load(&t->exited)) {
            *pp = t->next;
            t->next = dropped;
            dropped = t;
            continue;
        }
        pp = &t->next;
    }
    return dropped;
}

/* Join (their threads have exited: no wait) and free what prune_unlink returned. */
static void prune_free(admin_task *t) {
    while (t) {
        admin_task *next = t->next;
        if (!t->joined) pthread_join(t->thread, NULL);
        task_free(t);
        t = next;
    }
}

static char *dup_opt(const char *s, int *fail) {
    if (!s) return NULL;
    char *d = strdup(s);
    if (!d) *fail = 1;
    return d;
}

int ferry__admin_task_start_retry(ferry__admin_req *r, const char *queue,
                                  const ferry_queue_retry_select *sel, json_t **task,
                                  ferry_error *err) {
    admin_request *ar = (admin_request *)r;
    struct admin_tasks *ts = ar->srv->tasks;
    *task = NULL;
    admin_task *t = calloc(1, sizeof *t);
    if (!t) return ferry__err(err, FERRY_ENOMEM, "tasks: out of memory");
    int fail = 0;
    t->srv = ar->srv;
    t->queue = dup_opt(queue, &fail);
    t->name = dup_opt(sel->name, &fail);
    t->reason = dup_opt(sel->reason_contains, &fail);
    t->data = dup_opt(sel->data_contains, &fail);
    t->created_by = dup_opt(r->actor, &fail);
    snprintf(t->sel_state, sizeof t->sel_state, "%s", sel->state ? sel->state : "failed");
    snprintf(t->request_id, sizeof t->request_id, "%s", r->request_id);
    t->created_at = (long long)ferry__now_ms();
    t->state = "running";
    t->scan_max = ts->scan_max;
    atomic_init(&t->cancel, 0);
    atomic_init(&t->exited, 0);
    if (fail) {
        task_free(t);
        return ferry__err(err, FERRY_ENOMEM, "tasks: out of memory");
    }
    admin_task *dropped = NULL;
    pthread_mutex_lock(&ts->mu);
    int rc = 0;
    if (ts->stopping) {
        rc = ferry__err(err, FERRY_ECLOSED, "the server is stopping");
    } else if (ts->running >= FERRY__ADMIN_TASKS_RUNNING_MAX) {
        rc = ferry__err(err, FERRY_ETOOBIG,
                        "%d tasks are running already (at most %d at once); wait for one to "
                        "finish or cancel one",
                        ts->running, FERRY__ADMIN_TASKS_RUNNING_MAX);
    } else {
        snprintf(t->id, sizeof t->id, "t-%llx-%lu", (unsigned long long)t->created_at, ++ts->seq);
        int prc = pthread_create(&t->thread, NULL, task_main, t);
        if (prc) {
            rc = ferry__err(err, FERRY_EIO, "tasks: cannot start a thread: %s", strerror(prc));
        } else {
            ts->running++;
            t->next = ts->head;
            ts->head = t;
            *task = task_json(t);
            dropped = prune_unlink(ts);
        }
    }
    pthread_mutex_unlock(&ts->mu);
    prune_free(dropped);
    if (rc) task_free(t);
    return rc;
}
