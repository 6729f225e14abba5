/* api_deadletters.c - the dead-letter endpoints of the admin API (ferry/deadletter.h over
 * the server's PostgreSQL pool): list with filters, one row with its history, redrive and
 * purge (dry runs unless the body says "dryRun": false; the plan or the result per row), and
 * the audit history. Rows are those of the server's key prefix. 503 without a database.
 *
 * A redrive or purge handles at most FERRY__ADMIN_LIST_MAX rows per request (its limit,
 * oldest failure first), so its answer always lists every row: a dry run's plan is the
 * exact list the same request executed then carries out (unless rows change meanwhile).
 * To execute exactly the plan shown, the body's "ids" names the rows (1..1000 ids, as the
 * dry run's items give them): only those are taken, and only while they still match the
 * rest of the filter; an id not taken comes back as an item "skipped" with its reason. A
 * dry run's answer also groups the rows it would handle by queue, job name and reason (the
 * error's first line, at most 120 bytes): "groups": [{"queue", "name", "reason", "count"}]. */
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "ferry/deadletter.h"
#include "util/uuid7.h"

#define LIST_DEFAULT 100

static int no_database(ferry__admin_req *r, ferry__admin_resp *out) {
    (void)r;
    return ferry__admin_fail(out, 503, "no database configured (ferry serve --database)");
}

static int pg_get(ferry__admin_req *r, ferry__admin_resp *out, PGconn **conn) {
    if (!r->cfg->has_database) return no_database(r, out);
    ferry_error err = {0};
    if (ferry__admin_pg(r, conn, &err)) return ferry__admin_fail_err(out, &err);
    return 0;
}

static json_t *entry_json(const ferry_dlq_entry *e, int full) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(e->id));
    json_object_set_new(o, "prefix", ferry__api_str(e->prefix));
    json_object_set_new(o, "queue", ferry__api_str(e->queue));
    json_object_set_new(o, "jobId", ferry__api_str(e->job_id));
    json_object_set_new(o, "name", ferry__api_str(e->job_name));
    json_object_set_new(o, "error", ferry__api_str(e->error));
    json_object_set_new(o, "attemptsMade", json_integer(e->attempts_made));
    ferry__api_set_time(o, "failedAt", e->failed_at_ms, 0);
    ferry__api_set_time(o, "jobTimestamp", e->job_timestamp_ms, 1);
    json_object_set_new(o, "recordedBy", ferry__api_str(e->recorded_by));
    json_object_set_new(o, "redriveCount", json_integer(e->redrive_count));
    ferry__api_set_time(o, "redrivenAt", e->redriven_at_ms, 1);
    json_object_set_new(o, "redrivenBy", ferry__api_str(e->redriven_by));
    json_object_set_new(o, "redriveJobId", ferry__api_str(e->redrive_job_id));
    if (full) {
        /* data kept as text (not JSON) stays a string, and says so */
        json_object_set_new(
            o, "data", e->data_is_json ? ferry__api_stored_json(e->data) : ferry__api_str(e->data));
        json_object_set_new(o, "dataIsJson", json_boolean(e->data_is_json));
        json_object_set_new(o, "opts", ferry__api_stored_opts(e->opts));
        json_object_set_new(o, "stacktrace", ferry__api_stored_json(e->stacktrace));
    }
    return o;
}

static json_t *audit_json(const ferry_dlq_audit_entry *a) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(a->id));
    json_object_set_new(o, "deadLetterId", json_string(a->dead_letter_id));
    json_object_set_new(o, "action", ferry__api_str(a->action));
    json_object_set_new(o, "dryRun", json_boolean(a->dry_run));
    json_object_set_new(o, "actor", ferry__api_str(a->actor));
    ferry__api_set_time(o, "at", a->at_ms, 0);
    json_object_set_new(o, "prefix", ferry__api_str(a->prefix));
    json_object_set_new(o, "queue", ferry__api_str(a->queue));
    json_object_set_new(o, "jobId", ferry__api_str(a->job_id));
    json_object_set_new(o, "newJobId", ferry__api_str(a->new_job_id));
    json_object_set_new(o, "filter", ferry__api_str(a->filter));
    json_object_set_new(o, "note", ferry__api_str(a->note));
    return o;
}

/* GET /api/dead-letters?queue=&name=&errorContains=&since=&until=&limit=&redriven= */
static int dl_list(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_dlq_filter f = {0};
    long long limit;
    const char *redriven = ferry__admin_query(r, "redriven");
    int rd = 0;
    if (ferry__api_query_text(r, out, "queue", &f.queue) ||
        ferry__api_query_text(r, out, "name", &f.name) ||
        ferry__api_query_text(r, out, "errorContains", &f.error_contains) ||
        ferry__api_query_time(r, out, "since", &f.since_ms) ||
        ferry__api_query_time(r, out, "until", &f.until_ms) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, LIST_DEFAULT, &limit) ||
        ferry__api_query_bool(r, out, "redriven", 0, &rd))
        return -1;
    if (f.since_ms && f.until_ms && f.until_ms <= f.since_ms)
        return ferry__admin_fail(out, 400, "parameter until: must be later than since");
    f.limit = limit;
    f.prefix = r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX;
    if (redriven && rd) f.redriven_at_least = 1;
    if (redriven && !rd) f.redriven_fewer_than = 1;
    PGconn *conn;
    if (pg_get(r, out, &conn)) return -1;
    ferry_dlq_options o = {r->cfg->schema};
    ferry_dlq_list *l = NULL;
    ferry_error err = {0};
    int rc = ferry_dlq_list_get(conn, &o, &f, &l, &err);
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    if (rc) return ferry__admin_fail_err(out, &err);
    json_t *rows = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(rows, entry_json(&l->entries[i], 0));
    out->json = json_pack("{s:o, s:I}", "deadLetters", rows, "total", (json_int_t)l->total);
    ferry_dlq_list_free(l);
    return 0;
}

/* GET /api/dead-letters/{id}: the row with data, options, stack trace and its history */
static int dl_get(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_dlq_filter f = {.id = r->params[0], .limit = 1};
    char shown[128];
    PGconn *conn;
    if (pg_get(r, out, &conn)) return -1;
    ferry_dlq_options o = {r->cfg->schema};
    ferry_dlq_list *l = NULL;
    ferry_dlq_audit_rows *h = NULL;
    ferry_error err = {0};
    int rc = ferry_dlq_list_get(conn, &o, &f, &l, &err);
    if (rc == 0 && l->n == 1) {
        ferry_dlq_audit_filter af = {.dead_letter_id = r->params[0]};
        rc = ferry_dlq_audit_list(conn, &o, &af, &h, &err);
    }
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    if (rc) {
        ferry_dlq_list_free(l);
        return ferry__admin_fail_err(out, &err);
    }
    if (l->n == 0) {
        ferry_dlq_list_free(l);
        return ferry__admin_fail(out, 404, "no dead letter %s",
                                 ferry__api_shown(r->params[0], shown, sizeof shown));
    }
    out->json = entry_json(&l->entries[0], 1);
    json_t *hist = json_array();
    for (size_t i = 0; i < h->n; i++)
        json_array_append_new(hist, audit_json(&h->entries[i]));
    json_object_set_new(out->json, "history", hist);
    ferry_dlq_list_free(l);
    ferry_dlq_audit_rows_free(h);
    return 0;
}

/* GET /api/dead-letters/audit?deadLetterId=&since=&limit= */
static int dl_audit(ferry__admin_req *r, ferry__admin_resp *out) {
    ferry_dlq_audit_filter f = {0};
    if (ferry__api_query_text(r, out, "deadLetterId", &f.dead_letter_id) ||
        ferry__api_query_time(r, out, "since", &f.since_ms) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, LIST_DEFAULT, &f.limit))
        return -1;
    PGconn *conn;
    if (pg_get(r, out, &conn)) return -1;
    ferry_dlq_options o = {r->cfg->schema};
    ferry_dlq_audit_rows *h = NULL;
    ferry_error err = {0};
    int rc = ferry_dlq_audit_list(conn, &o, &f, &h, &err);
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    if (rc) return ferry__admin_fail_err(out, &err);
    json_t *rows = json_array();
    for (size_t i = 0; i < h->n; i++)
        json_array_append_new(rows, audit_json(&h->entries[i]));
    out->json = json_pack("{s:o, s:I}", "audit", rows, "total", (json_int_t)h->total);
    ferry_dlq_audit_rows_free(h);
    return 0;
}

/* ---- redrive, purge -------------------------------------------------------------------- */

static const char *const status_names[] = {"would", "done", "skipped", "refused"};

/* What a redrive or purge answers with: every row's result, and for a dry run the plan
 * grouped by (queue, job name, reason). */
typedef struct plan {
    json_t *items;
    json_t *groups; /* of the rows it would handle; NULL when executing */
} plan;

#define REASON_MAX 120 /* bytes of an error's first line a group is named by */

/* The first line of an error, cut at REASON_MAX bytes on a character boundary. */
static void reason_of(const char *error, char out[REASON_MAX + 1]) {
    size_t n = error ? strcspn(error, "\r\n") : 0;
    if (n > REASON_MAX) {
        n = REASON_MAX;
        while (n > 0 && ((unsigned char)error[n] & 0xC0) == 0x80)
            n--;
    }
    if (n) memcpy(out, error, n);
    out[n] = 0;
}

static int same(json_t *g, const char *key, const char *s) {
    const char *v = json_string_value(json_object_get(g, key));
    return v && s && !strcmp(v, s);
}

static void group_add(json_t *groups, const ferry_dlq_entry *e) {
    char reason[REASON_MAX + 1];
    reason_of(e->error, reason);
    /* compare as the JSON holds them (bad UTF-8 replaced), so equal texts meet */
    json_t *q = ferry__api_str(e->queue ? e->queue : ""),
           *n = ferry__api_str(e->job_name ? e->job_name : ""), *rs = ferry__api_str(reason);
    size_t i;
    json_t *g;
    json_array_foreach(groups, i, g) {
        if (same(g, "queue", json_string_value(q)) && same(g, "name", json_string_value(n)) &&
            same(g, "reason", json_string_value(rs))) {
            json_object_set_new(g, "count",
                                json_integer(json_integer_value(json_object_get(g, "count")) + 1));
            json_decref(q);
            json_decref(n);
            json_decref(rs);
            return;
        }
    }
    json_array_append_new(
        groups, json_pack("{s:o, s:o, s:o, s:i}", "queue", q, "name", n, "reason", rs, "count", 1));
}

static void item_cb(const ferry_dlq_item *it, void *ud) {
    plan *pl = ud;
    json_t *items = pl->items;
    const ferry_dlq_entry *e = it->entry;
    if (pl->groups && it->status == FERRY_DLQ_WOULD) group_add(pl->groups, e);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(e->id));
    json_object_set_new(o, "queue", ferry__api_str(e->queue));
    json_object_set_new(o, "jobId", ferry__api_str(e->job_id));
    json_object_set_new(o, "name", ferry__api_str(e->job_name));
    json_object_set_new(o, "newJobId", ferry__api_str(it->new_job_id));
    json_object_set_new(
        o, "status",
        json_string(it->status >= 0 && it->status < 4 ? status_names[it->status] : "refused"));
    json_object_set_new(o, "reason", ferry__api_str(it->reason));
    json_array_append_new(items, o);
}

/* Free the id list of f (returns -1, for the error paths). */
static int ids_drop(ferry_dlq_filter *f) {
    free((void *)f->ids);
    f->ids = NULL;
    f->nids = 0;
    return -1;
}

/* Body member "ids": 1..FERRY_DLQ_IDS_MAX row ids (UUID strings); f->ids points into the
 * body (valid during the request). */
static int ids_body(ferry__admin_req *r, ferry__admin_resp *out, ferry_dlq_filter *f) {
    json_t *v = r->body ? json_object_get(r->body, "ids") : NULL;
    if (!v) return 0;
    if (!json_is_array(v))
        return ferry__admin_fail(out, 400, "body member ids: must be an array of dead letter ids");
    size_t n = json_array_size(v);
    if (n == 0 || n > FERRY_DLQ_IDS_MAX)
        return ferry__admin_fail(out, 400, "body member ids: must hold 1..%d ids (got %zu)",
                                 FERRY_DLQ_IDS_MAX, n);
    const char **ids = calloc(n, sizeof *ids);
    if (!ids) return ferry__admin_fail(out, 500, "out of memory");
    for (size_t i = 0; i < n; i++) {
        ids[i] = json_string_value(json_array_get(v, i));
        if (!ids[i] || strlen(ids[i]) != FERRY_DLQ_ID_STRLEN ||
            !ferry__uuid_text_valid(ids[i], FERRY_DLQ_ID_STRLEN)) {
            free(ids);
            return ferry__admin_fail(
                out, 400, "body member ids: item %zu is not a dead letter id (a UUID)", i);
        }
    }
    f->ids = ids;
    f->nids = n;
    return 0;
}

/* The body of a redrive or purge: the filter, dryRun (default true), again (redrive). On
 * success f->ids (when given) is malloc'd: the caller frees it. */
static int action_body(ferry__admin_req *r, ferry__admin_resp *out, int redrive,
                       ferry_dlq_filter *f, int *dry, int *again) {
    static const char *const redrive_members[] = {"dryRun",
                                                  "id",
                                                  "ids",
                                                  "queue",
                                                  "name",
                                                  "errorContains",
                                                  "since",
                                                  "until",
                                                  "limit",
                                                  "again",
                                                  "redrivenFewerThan",
                                                  NULL};
    static const char *const purge_members[] = {
        "dryRun", "id",    "ids",   "queue",    "name", "errorContains",
        "since",  "until", "limit", "redriven", NULL};
    long long limit, fewer = 0;
    memset(f, 0, sizeof *f);
    *again = 0;
    if (ferry__api_body_check(r, out, redrive ? redrive_members : purge_members) ||
        ferry__api_body_bool(r, out, "dryRun", 1, dry) ||
        ferry__api_body_text(r, out, "id", &f->id) ||
        ferry__api_body_text(r, out, "queue", &f->queue) ||
        ferry__api_body_text(r, out, "name", &f->name) ||
        ferry__api_body_text(r, out, "errorContains", &f->error_contains) ||
        ferry__api_body_time(r, out, "since", &f->since_ms) ||
        ferry__api_body_time(r, out, "until", &f->until_ms) ||
        ferry__api_body_ll(r, out, "limit", 1, FERRY__ADMIN_LIST_MAX, FERRY__ADMIN_LIST_MAX,
                           &limit))
        return -1;
    if (ids_body(r, out, f)) return -1;
    if (redrive && (ferry__api_body_bool(r, out, "again", 0, again) ||
                    ferry__api_body_ll(r, out, "redrivenFewerThan", 1, 1000000000LL, 0, &fewer)))
        return ids_drop(f);
    if (!redrive) {
        int rd = 0;
        json_t *m = r->body ? json_object_get(r->body, "redriven") : NULL;
        if (ferry__api_body_bool(r, out, "redriven", 0, &rd)) return ids_drop(f);
        if (m && !json_is_null(m)) {
            if (rd)
                f->redriven_at_least = 1;
            else
                f->redriven_fewer_than = 1;
        }
    }
    if (f->since_ms && f->until_ms && f->until_ms <= f->since_ms) {
        ids_drop(f);
        return ferry__admin_fail(out, 400, "body member until: must be later than since");
    }
    f->limit = limit;
    f->redriven_fewer_than = f->redriven_fewer_than ? f->redriven_fewer_than : (long)fewer;
    f->prefix = r->cfg->prefix ? r->cfg->prefix : FERRY_DEFAULT_PREFIX;
    return 0;
}

static int dl_action(ferry__admin_req *r, ferry__admin_resp *out, int redrive) {
    ferry_dlq_filter f;
    int dry, again;
    if (action_body(r, out, redrive, &f, &dry, &again)) return -1;
    PGconn *conn;
    if (pg_get(r, out, &conn)) return ids_drop(&f);
    json_t *items = json_array();
    plan pl = {items, dry ? json_array() : NULL};
    ferry_dlq_action_options a;
    ferry_dlq_action_options_init(&a);
    a.execute = !dry;
    a.again = again;
    a.actor = r->actor;
    a.redis = r->cfg->redis;
    a.item = item_cb;
    a.userdata = &pl;
    a.metrics = redrive ? r->cfg->metrics : NULL;
    ferry_dlq_options o = {r->cfg->schema};
    ferry_dlq_action_stats st = {0};
    ferry_error err = {0};
    int rc = (redrive ? ferry_dlq_redrive : ferry_dlq_purge)(conn, &o, &f, &a, &st, &err);
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    size_t nids = f.nids;
    ids_drop(&f);
    const char *what = redrive ? "redrive" : "purge";
    char of_ids[48] = "";
    if (nids) snprintf(of_ids, sizeof of_ids, " of %zu ids given", nids);
    if (dry)
        out->audit_summary =
            ferry__api_summary("dry run %s: %lld rows would be %s (%lld matched%s)", what, st.would,
                               redrive ? "redriven" : "purged", st.matched, of_ids);
    else
        out->audit_summary = ferry__api_summary(
            "%s: %lld done, %lld skipped, %lld refused (%lld matched%s)%s", what, st.done,
            st.skipped, st.refused, st.matched, of_ids, rc ? "; then stopped by an error" : "");
    if (rc) {
        /* what was done before the error stays done: say so */
        ferry__admin_fail_err(out, &err);
        if (out->json) {
            json_object_set_new(out->json, "dryRun", json_boolean(dry));
            json_object_set_new(out->json, "done", json_integer(st.done));
            json_object_set_new(out->json, "items", items);
        } else {
            json_decref(items);
        }
        json_decref(pl.groups);
        return -1;
    }
    out->json = json_object();
    json_object_set_new(out->json, "dryRun", json_boolean(dry));
    json_object_set_new(out->json, "matched", json_integer(st.matched));
    json_object_set_new(out->json, "done", json_integer(st.done));
    json_object_set_new(out->json, "would", json_integer(st.would));
    json_object_set_new(out->json, "skipped", json_integer(st.skipped));
    json_object_set_new(out->json, "refused", json_integer(st.refused));
    json_object_set_new(out->json, "items", items);
    if (pl.groups) json_object_set_new(out->json, "groups", pl.groups);
    return 0;
}

static int dl_redrive(ferry__admin_req *r, ferry__admin_resp *out) {
    return dl_action(r, out, 1);
}

static int dl_purge(ferry__admin_req *r, ferry__admin_resp *out) {
    return dl_action(r, out, 0);
}

/* "audit", "redrive" and "purge" come before {id}: the first match wins */
const ferry__admin_route ferry__admin_routes_deadletters[] = {
    {"GET", "/api/dead-letters", FERRY__ADMIN_SCOPE_READ, dl_list},
    {"GET", "/api/dead-letters/audit", FERRY__ADMIN_SCOPE_READ, dl_audit},
    {"POST", "/api/dead-letters/redrive", FERRY__ADMIN_SCOPE_REDRIVE, dl_redrive},
    {"POST", "/api/dead-letters/purge", FERRY__ADMIN_SCOPE_REDRIVE, dl_purge},
    {"GET", "/api/dead-letters/{}", FERRY__ADMIN_SCOPE_READ, dl_get},
    {NULL, NULL, 0, NULL},
};
