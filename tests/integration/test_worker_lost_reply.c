/* test_worker_lost_reply.c - a finish whose answer is lost. The worker talks to Redis through
 * a proxy that forwards one finish call (the first client write naming the target
 * "completed") to Redis and then cuts that connection without passing the answer back, and
 * holds new connections until the test has seen the finish written. The worker reconnects
 * and sends the result again; Redis refuses it (the first send released the lock and, with
 * removeOnComplete, deleted the job). The worker must settle it as written: completed
 * callback, stats and job log say "completed", no lost lock is reported. When instead the
 * call never reached Redis and the lock vanished meanwhile, the refusal stands. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "support/wt.h"

#define MAX_PUMPS 32

/* ---- a forwarding proxy that can lose one answer ------------------------------------- */

typedef struct pump {
    int a, b; /* client side, Redis side */
    pthread_t th;
} pump;

static struct {
    int lfd, upstream_port;
    atomic_int stop, armed, hold, cuts;
    atomic_int drop; /* cut before the finish reaches Redis instead of after */
    int running;
    pthread_t th;
    pump pumps[MAX_PUMPS];
    int npumps;
} P;

static const char NEEDLE[] = "$9\r\ncompleted\r\n";

/* Whether the needle is in tail + buf, where tail holds the last bytes of the previous
 * read (so a needle split between two reads is found); tail is updated. */
static int has_needle(char *tail, size_t *ntail, const char *buf, size_t n) {
    const size_t k = sizeof NEEDLE - 1;
    /* around the boundary: the old tail, then the start of buf */
    char win[2 * sizeof NEEDLE];
    size_t head = n < k - 1 ? n : k - 1, wn = *ntail + head;
    memcpy(win, tail, *ntail);
    memcpy(win + *ntail, buf, head);
    int found = 0;
    for (size_t i = 0; i + k <= wn && !found; i++)
        found = !memcmp(win + i, NEEDLE, k);
    for (size_t i = 0; i + k <= n && !found; i++)
        found = !memcmp(buf + i, NEEDLE, k);
    /* the new tail: the last k - 1 bytes of tail + buf */
    if (n >= k - 1) {
        memcpy(tail, buf + n - (k - 1), k - 1);
        *ntail = k - 1;
    } else {
        size_t from = wn > k - 1 ? wn - (k - 1) : 0;
        memmove(tail, win + from, wn - from);
        *ntail = wn - from;
    }
    return found;
}

static int connect_upstream(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)P.upstream_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
    if (fd >= 0) close(fd);
    return -1;
}

/* Copy both ways; once the needle went to Redis, keep passing the client's bytes for 200 ms
 * (the rest of the call) but none of Redis' answer, then close both sides. With P.drop the
 * read holding the needle is not passed on at all: the call never reaches Redis. */
static void *pump_main(void *arg) {
    pump *p = arg;
    char buf[65536], tail[sizeof NEEDLE];
    size_t ntail = 0;
    long cut_left_ms = -1;
    while (!atomic_load(&P.stop) && cut_left_ms != 0) {
        struct pollfd fds[2] = {{.fd = p->a, .events = POLLIN}, {.fd = p->b, .events = POLLIN}};
        int to = cut_left_ms > 0 ? 10 : 50;
        if (poll(fds, cut_left_ms > 0 ? 1 : 2, to) < 0) break;
        if (cut_left_ms > 0) cut_left_ms = cut_left_ms > 10 ? cut_left_ms - 10 : 0;
        int done = 0;
        for (int i = 0; i < 2 && !done; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (i == 1 && cut_left_ms >= 0) continue; /* the answer is lost */
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n <= 0) {
                done = 1;
                break;
            }
            int hit = i == 0 && has_needle(tail, &ntail, buf, (size_t)n) && cut_left_ms < 0 &&
                      atomic_load(&P.armed);
            if (hit) {
                atomic_store(&P.armed, 0);
                atomic_store(&P.hold, 1);
                cut_left_ms = atomic_load(&P.drop) ? 0 : 200;
                if (cut_left_ms == 0) break;
            }
            if (write(i == 0 ? p->b : p->a, buf, (size_t)n) != n) {
                done = 1;
                break;
            }
        }
        if (done) break;
    }
    if (cut_left_ms == 0) atomic_fetch_add(&P.cuts, 1);
    close(p->a);
    close(p->b);
    return NULL;
}

static void *accept_main(void *arg) {
    (void)arg;
    while (!atomic_load(&P.stop)) {
        struct pollfd f = {.fd = P.lfd, .events = POLLIN};
        if (atomic_load(&P.hold) || poll(&f, 1, 20) <= 0) {
            if (atomic_load(&P.hold)) usleep(20000);
            continue;
        }
        /* a cut may have set hold during the poll: the reconnect it provoked waits */
        if (atomic_load(&P.hold)) continue;
        int a = accept(P.lfd, NULL, NULL);
        if (a < 0) continue;
        int b = connect_upstream();
        if (b < 0 || P.npumps == MAX_PUMPS) {
            close(a);
            if (b >= 0) close(b);
            continue;
        }
        pump *p = &P.pumps[P.npumps];
        p->a = a;
        p->b = b;
        if (pthread_create(&p->th, NULL, pump_main, p) != 0) {
            close(a);
            close(b);
            continue;
        }
        P.npumps++;
    }
    return NULL;
}

static int proxy_start(void) {
    memset(&P, 0, sizeof P);
    P.upstream_port = atoi(th_env_require("REDIS_PORT"));
    P.lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    assert_true(P.lfd >= 0);
    assert_int_equal(bind(P.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(P.lfd, 16), 0);
    assert_int_equal(getsockname(P.lfd, (struct sockaddr *)&sa, &len), 0);
    assert_int_equal(pthread_create(&P.th, NULL, accept_main, NULL), 0);
    P.running = 1;
    return ntohs(sa.sin_port);
}

static void proxy_stop(void) {
    if (!P.running) return;
    P.running = 0;
    atomic_store(&P.stop, 1);
    pthread_join(P.th, NULL);
    for (int i = 0; i < P.npumps; i++)
        pthread_join(P.pumps[i].th, NULL);
    close(P.lfd);
}

/* ---- the test ---------------------------------------------------------------------------- */

static ferry_outcome handler(ferry_job *job, void *ud) {
    (void)ud;
    ferry_job_set_return(job, "\"done\"");
    return FERRY_COMPLETED;
}

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_outcomes[256];

static void on_job_log(const ferry_job_log *rec, void *ud) {
    (void)ud;
    pthread_mutex_lock(&log_mu);
    size_t n = strlen(log_outcomes);
    snprintf(log_outcomes + n, sizeof log_outcomes - n, "%s%s", n ? " " : "", rec->outcome);
    pthread_mutex_unlock(&log_mu);
}

/* The test's state lives here, not on its stack: after a failed assertion the teardown
 * still stops the worker (whose callbacks use T) before the proxy. */
static wt T;
static ferry_worker *W;

static int stats_completed(void *arg) {
    (void)arg;
    ferry_worker_stats s;
    ferry_worker_get_stats(W, &s);
    return s.completed >= 1;
}

static int stats_lock_lost(void *arg) {
    (void)arg;
    ferry_worker_stats s;
    ferry_worker_get_stats(W, &s);
    return s.lock_lost >= 1;
}

static int cut_done(void *arg) {
    (void)arg;
    return atomic_load(&P.cuts) >= 1;
}

/* Start the proxy (drop: lose the request rather than the answer) and a worker through it,
 * arm the cut, add one job (opts may be NULL) and wait until the cut happened. Returns the
 * job id (malloc'd); *lock receives "<id>:lock". */
static char *add_and_cut(int drop, const char *opts, char *lock, size_t lock_size) {
    wt *t = &T;
    wt_init(t);
    log_outcomes[0] = 0;
    int port = proxy_start();
    atomic_store(&P.drop, drop);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    ferry_worker_options o;
    ferry_redis_options ro;
    wt_options(t, &o, &ro);
    ro.url = url;
    o.callbacks.job_log = on_job_log;
    W = wt_start(&o, handler, NULL);
    atomic_store(&P.armed, 1);
    char *id = wt_add(t, "x", NULL, opts);
    assert_true(th_wait_until(cut_done, NULL, 15000));
    snprintf(lock, lock_size, "%s:lock", id);
    return id;
}

static void run_lost_answer(const char *opts, int job_kept) {
    wt *t = &T;
    char lock[160];
    char *id = add_and_cut(0, opts, lock, sizeof lock);
    /* the first send was written (the answer never came back) */
    assert_int_equal(WT_EXISTS(t, lock), 0);
    assert_int_equal(WT_EXISTS(t, id), job_kept);
    assert_int_equal(WT_ZCARD(t, "completed"), job_kept);
    assert_int_equal(WT_LLEN(t, "active"), 0);
    atomic_store(&P.hold, 0); /* let the worker reconnect and send the result again */

    WT_WAIT_COUNT(t, completed, 1);
    /* the stats are published after the whole batch is settled */
    assert_true(th_wait_until(stats_completed, NULL, 5000));
    ferry_worker_stats s;
    ferry_worker_get_stats(W, &s);
    assert_int_equal(s.completed, 1);
    assert_int_equal(s.lock_lost, 0);
    wt_stop(W);
    W = NULL;
    proxy_stop();
    pthread_mutex_lock(&log_mu);
    assert_string_equal(log_outcomes, "completed");
    pthread_mutex_unlock(&log_mu);
    pthread_mutex_lock(&t->mu);
    assert_null(strstr(t->last_error, "refused"));
    pthread_mutex_unlock(&t->mu);
    assert_int_equal(wt_count(t, &t->completed), 1);
    free(id);
    wt_fini(t);
}

/* the job stays in completed: the resend finds its lock gone (-2) */
static void test_lost_answer_job_kept(void **state) {
    (void)state;
    run_lost_answer(NULL, 1);
}

/* removeOnComplete: the resend finds the job gone (-1) */
static void test_lost_answer_job_removed(void **state) {
    (void)state;
    run_lost_answer("{\"removeOnComplete\":true}", 0);
}

/* a failed test leaves its worker and proxy running: stop them before the next one */
static int teardown(void **state) {
    (void)state;
    if (W) {
        atomic_store(&P.hold, 0);
        ferry_worker_close(W, 10000);
        ferry_worker_free(W);
        W = NULL;
    }
    proxy_stop();
    return 0;
}

/* The finish never reached Redis, and meanwhile the lock vanished (evicted, deleted): the
 * resend is refused (-2) and the job is still in active, so the refusal stands (lost lock),
 * not "completed". */
static void test_lost_request_lock_gone(void **state) {
    (void)state;
    wt *t = &T;
    char lock[160];
    char *id = add_and_cut(1, NULL, lock, sizeof lock);
    assert_int_equal(WT_EXISTS(t, lock), 1); /* nothing was written */
    assert_int_equal(WT_LLEN(t, "active"), 1);
    freeReplyObject(wt_cmd(t, "DEL %s%s", t->base, lock));
    atomic_store(&P.hold, 0);

    ferry_worker_stats s;
    assert_true(th_wait_until(stats_lock_lost, NULL, 15000));
    ferry_worker_get_stats(W, &s);
    assert_int_equal(s.completed, 0);
    wt_stop(W);
    W = NULL;
    proxy_stop();
    assert_int_equal(wt_count(t, &t->completed), 0);
    assert_int_equal(WT_LLEN(t, "active"), 1); /* left for the stalled check */
    pthread_mutex_lock(&log_mu);
    assert_string_equal(log_outcomes, "lock-lost");
    pthread_mutex_unlock(&log_mu);
    free(id);
    wt_fini(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_lost_answer_job_kept, teardown),
        cmocka_unit_test_teardown(test_lost_answer_job_removed, teardown),
        cmocka_unit_test_teardown(test_lost_request_lock_gone, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
