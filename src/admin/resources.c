/* resources.c - what handlers of `ferry serve` borrow: queue handles (a small cache of idle
 * handles per queue name, bounded; a handle idle for a minute is closed rather than reused)
 * and PostgreSQL connections (a pool of at most ADMIN_PG_POOL_MAX, with keepalives and
 * statement_timeout from src/pg's session set-up; a broken connection is dropped); and the
 * error answers handlers give (ferry__admin_fail, ferry__admin_fail_err). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/framework.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/printable.h"

int ferry__admin_fail(ferry__admin_resp *out, int status, const char *fmt, ...) {
    char text[FERRY_ERROR_MESSAGE_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_decref(out->json);
    out->status = status;
    /* printable already by the contract; made so again, as jansson takes only UTF-8 */
    char shown[sizeof text + 64];
    const char *msg =
        ferryx_printable_clean(text) ? text : ferryx_printable(text, shown, sizeof shown);
    out->json = json_pack("{s:s}", "error", msg);
    return -1;
}

int ferry__admin_fail_err(ferry__admin_resp *out, const ferry_error *err) {
    int code = err ? err->code : FERRY_EIO;
    int status;
    switch (code) {
    case FERRY_EINVAL:
        status = 400;
        break;
    case FERRY_ENOTFOUND:
        status = 404;
        break;
    case FERRY_ESTATE:
        status = 409;
        break;
    case FERRY_ETOOBIG:
        status = 413;
        break;
    case FERRY_EIO:
    case FERRY_ETIMEDOUT:
    case FERRY_ETLS:
    case FERRY_EAUTH:
    case FERRY_ECLOSED:
        status = 503;
        break;
    default:
        status = 500;
        break;
    }
    return ferry__admin_fail(out, status, "%s",
                             err && err->message[0] ? err->message : ferry_strerror(code));
}

/* ---- queues ---------------------------------------------------------------------------- */

int ferry__admin_queue(ferry__admin_req *r, const char *name, ferry_queue **q, ferry_error *err) {
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    *q = NULL;
    ferry_queue *stale[ADMIN_QUEUE_CACHE_MAX];
    size_t nstale = 0;
    int64_t now = ferry__mono_ms();
    pthread_mutex_lock(&s->res_mu);
    for (size_t i = 0; i < s->nqueues;) {
        admin_cached_queue *e = &s->queues[i];
        if (now - e->idle_since_ms > ADMIN_QUEUE_IDLE_MS) {
            stale[nstale++] = e->q;
            free(e->name);
            *e = s->queues[--s->nqueues];
            continue;
        }
        if (!*q && strcmp(e->name, name) == 0) {
            *q = e->q;
            free(e->name);
            *e = s->queues[--s->nqueues];
            continue;
        }
        i++;
    }
    pthread_mutex_unlock(&s->res_mu);
    for (size_t i = 0; i < nstale; i++)
        ferry_queue_close(stale[i]);
    if (*q) return 0;
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &s->redis;
    qo.prefix = s->prefix;
    qo.skip_meta_update = 1; /* looking at a queue through the API creates no key */
    return ferry_queue_open(name, &qo, q, err);
}

void ferry__admin_queue_release(ferry__admin_req *r, ferry_queue *q) {
    if (!q) return;
    admin_request *ar = r->server;
    ferry_admin_server *s = ar->srv;
    char *name = strdup(ferry_queue_name(q));
    pthread_mutex_lock(&s->res_mu);
    if (name && s->nqueues < ADMIN_QUEUE_CACHE_MAX) {
        s->queues[s->nqueues++] =
            (admin_cached_queue){.name = name, .q = q, .idle_since_ms = ferry__mono_ms()};
        q = NULL;
        name = NULL;
    }
    pthread_mutex_unlock(&s->res_mu);
    free(name);
    ferry_queue_close(q);
}

/* ---- PostgreSQL -------------------------------------------------------------------------- */

int ferry__admin_pgc_get(ferry_admin_server *s, int connect_ms, ferry__pgc *out, ferry_error *err) {
    if (connect_ms <= 0) connect_ms = s->db_connect_ms;
    memset(out, 0, sizeof *out);
    if (!s->database_url)
        return ferry__err(err, FERRY_ESTATE, "no database is configured (--database)");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += connect_ms / 1000 + 1;
    pthread_mutex_lock(&s->res_mu);
    while (!s->npg_idle && s->pg_open >= ADMIN_PG_POOL_MAX)
        if (pthread_cond_timedwait(&s->res_cv, &s->res_mu, &until) != 0) {
            pthread_mutex_unlock(&s->res_mu);
            return ferry__err(err, FERRY_ETIMEDOUT,
                              "database: all %d connections are in use; try again",
                              ADMIN_PG_POOL_MAX);
        }
    if (s->npg_idle) {
        *out = s->pg_idle[--s->npg_idle];
        pthread_mutex_unlock(&s->res_mu);
        return 0;
    }
    s->pg_open++;
    pthread_mutex_unlock(&s->res_mu);
    ferry__pg_session ss = {.url = s->database_url,
                            .application_name = "ferry serve",
                            .connect_timeout_ms = connect_ms,
                            .statement_timeout_ms = s->db_statement_ms,
                            .idle_in_tx_timeout_ms = s->db_statement_ms * 2};
    int rc = ferry__pgc_connect(out, &ss, err);
    /* handlers call libpq's blocking functions (and the library's, which take a PGconn) */
    if (!rc && PQsetnonblocking(out->conn, 0) != 0) {
        rc = ferry__pg_error(out->conn, NULL, "database", err);
        ferry__pgc_close(out);
    }
    if (rc) {
        pthread_mutex_lock(&s->res_mu);
        s->pg_open--;
        pthread_cond_broadcast(&s->res_cv);
        pthread_mutex_unlock(&s->res_mu);
        memset(out, 0, sizeof *out);
    }
    return rc;
}

void ferry__admin_pgc_put(ferry_admin_server *s, ferry__pgc *c, int broken) {
    if (!c->conn) return;
    if (c->broken || PQstatus(c->conn) != CONNECTION_OK ||
        PQtransactionStatus(c->conn) != PQTRANS_IDLE)
        broken = 1;
    int keep = 0;
    pthread_mutex_lock(&s->res_mu);
    if (!broken && s->npg_idle < ADMIN_PG_IDLE_MAX) {
        s->pg_idle[s->npg_idle++] = *c;
        keep = 1;
    } else {
        s->pg_open--;
    }
    pthread_cond_broadcast(&s->res_cv);
    pthread_mutex_unlock(&s->res_mu);
    if (!keep) ferry__pgc_close(c);
    memset(c, 0, sizeof *c);
}

int ferry__admin_pg(ferry__admin_req *r, PGconn **conn, ferry_error *err) {
    admin_request *ar = r->server;
    ferry__pgc c;
    *conn = NULL;
    int rc = ferry__admin_pgc_get(ar->srv, 0, &c, err);
    if (!rc) *conn = c.conn;
    return rc;
}

void ferry__admin_pg_release(ferry__admin_req *r, PGconn *conn, int broken) {
    if (!conn) return;
    admin_request *ar = r->server;
    ferry__pgc c = {.conn = conn};
    ferry__admin_pgc_put(ar->srv, &c, broken);
}

void ferry__admin_resources_close(ferry_admin_server *s) {
    for (size_t i = 0; i < s->nqueues; i++) {
        ferry_queue_close(s->queues[i].q);
        free(s->queues[i].name);
    }
    s->nqueues = 0;
    for (size_t i = 0; i < s->npg_idle; i++)
        ferry__pgc_close(&s->pg_idle[i]);
    s->npg_idle = 0;
}
