/* filter.c - which dead letters a list, redrive or purge takes: the filter checked and
 * turned into a parameterised WHERE clause, and its one-line form for the audit. Pure. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"
#include "util/json_text.h"
#include "util/uuid7.h"

static int text_ok(const char *what, const char *s, ferry_error *err) {
    size_t n = strlen(s);
    if (n == 0) return ferry__err(err, FERRY_EINVAL, "dead letters: filter %s is empty", what);
    if (n > FERRY_DLQ_FILTER_TEXT_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters: filter %s is over %d bytes", what,
                          FERRY_DLQ_FILTER_TEXT_MAX);
    if (!ferryx_utf8_valid(s, n))
        return ferry__err(err, FERRY_EINVAL, "dead letters: filter %s is not valid UTF-8", what);
    return 0;
}

static int ids_check(const ferry_dlq_filter *f, ferry_error *err) {
    if (!f->ids || f->nids == 0)
        return ferry__err(err, FERRY_EINVAL, "dead letters: ids is empty (give 1..%d row ids)",
                          FERRY_DLQ_IDS_MAX);
    if (f->nids > FERRY_DLQ_IDS_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters: ids holds %zu ids, at most %d", f->nids,
                          FERRY_DLQ_IDS_MAX);
    for (size_t i = 0; i < f->nids; i++)
        if (!f->ids[i] || !ferry__uuid_text_valid(f->ids[i], strlen(f->ids[i])))
            return ferry__err(err, FERRY_EINVAL,
                              "dead letters: ids[%zu] is not a dead letter id (a UUID, as `ferry "
                              "dlq list` shows)",
                              i);
    return 0;
}

void ferry__dlq_where_free(ferry__dlq_where *w) {
    if (!w) return;
    free(w->ids);
    w->ids = NULL;
}

/* Append "<before>$<n><after>" (AND-ed to what is there) with value as parameter n. */
static void add(ferry__dlq_where *w, const char *before, const char *after, const char *value) {
    size_t used = strlen(w->sql);
    w->v[w->n] = value;
    w->n++;
    snprintf(w->sql + used, sizeof w->sql - used, "%s%s$%d%s", used ? " AND " : "", before, w->n,
             after);
}

int ferry__dlq_where_build(const ferry_dlq_filter *f, int not_redriven, ferry__dlq_where *w,
                           ferry_error *err) {
    memset(w, 0, sizeof *w);
    ferry_dlq_filter none = {0};
    if (!f) f = &none;
    if (f->id && !ferry__uuid_text_valid(f->id, strlen(f->id)))
        return ferry__err(err, FERRY_EINVAL,
                          "dead letters: id is not a dead letter id (a UUID, as `ferry dlq list` "
                          "shows)");
    const char *texts[][2] = {{"prefix", f->prefix},
                              {"queue", f->queue},
                              {"name", f->name},
                              {"error", f->error_contains}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (!texts[i][1]) continue;
        int rc = text_ok(texts[i][0], texts[i][1], err);
        if (rc) return rc;
    }
    if (f->since_ms < 0 || f->until_ms < 0)
        return ferry__err(err, FERRY_EINVAL, "dead letters: since and until must be >= 0");
    if (f->since_ms && f->until_ms && f->until_ms <= f->since_ms)
        return ferry__err(err, FERRY_EINVAL, "dead letters: until must be later than since");
    if (f->redriven_fewer_than < 0 || f->redriven_fewer_than > 1000000000L)
        return ferry__err(err, FERRY_EINVAL,
                          "dead letters: redriven-fewer-than must be 1..1000000000 (got %ld)",
                          f->redriven_fewer_than);
    if (f->redriven_at_least < 0 || f->redriven_at_least > 1000000000L)
        return ferry__err(err, FERRY_EINVAL,
                          "dead letters: redriven-at-least must be 1..1000000000 (got %ld)",
                          f->redriven_at_least);
    if (f->limit < 0 || f->limit > FERRY_DLQ_LIMIT_MAX)
        return ferry__err(err, FERRY_EINVAL, "dead letters: limit must be 1..%d (got %lld)",
                          FERRY_DLQ_LIMIT_MAX, f->limit);
    if (f->ids || f->nids) {
        int rc = ids_check(f, err);
        if (rc) return rc;
        w->ids = ferry__pg_text_array(f->ids, f->nids);
        if (!w->ids) return ferry__err(err, FERRY_ENOMEM, "dead letters: out of memory");
    }
    if (f->id) add(w, "id = ", "::uuid", f->id);
    if (w->ids) add(w, "id = ANY(", "::uuid[])", w->ids);
    if (f->prefix) add(w, "prefix = ", "", f->prefix);
    if (f->queue) add(w, "queue = ", "", f->queue);
    if (f->name) add(w, "job_name = ", "", f->name);
    if (f->error_contains) add(w, "strpos(lower(error), lower(", ")) > 0", f->error_contains);
    if (f->since_ms) {
        snprintf(w->num[0], sizeof w->num[0], "%lld", f->since_ms);
        add(w, "failed_at >= to_timestamp(", "::float8 / 1000)", w->num[0]);
    }
    if (f->until_ms) {
        snprintf(w->num[1], sizeof w->num[1], "%lld", f->until_ms);
        add(w, "failed_at < to_timestamp(", "::float8 / 1000)", w->num[1]);
    }
    if (f->redriven_fewer_than) {
        snprintf(w->num[2], sizeof w->num[2], "%ld", f->redriven_fewer_than);
        add(w, "redrive_count < ", "::int", w->num[2]);
    }
    if (f->redriven_at_least) {
        snprintf(w->num[3], sizeof w->num[3], "%ld", f->redriven_at_least);
        add(w, "redrive_count >= ", "::int", w->num[3]);
    }
    if (not_redriven) {
        size_t used = strlen(w->sql);
        snprintf(w->sql + used, sizeof w->sql - used, "%sredrive_count = 0", used ? " AND " : "");
    }
    if (!w->sql[0]) snprintf(w->sql, sizeof w->sql, "true");
    w->limit = f->limit;
    w->fewer_than = f->redriven_fewer_than;
    return 0;
}

/* Append " key=value" with the value's quotes and backslashes escaped. */
static int put(char **buf, size_t *len, const char *key, const char *value) {
    size_t vn = strlen(value), need = *len + strlen(key) + 2 * vn + 8;
    char *b = realloc(*buf, need);
    if (!b) return -1;
    *buf = b;
    size_t o = *len;
    o += (size_t)sprintf(b + o, "%s%s=", o ? " " : "", key);
    int quote = vn == 0 || strpbrk(value, " \"\\") != NULL;
    if (quote) b[o++] = '"';
    for (size_t i = 0; i < vn; i++) {
        if (value[i] == '"' || value[i] == '\\') b[o++] = '\\';
        b[o++] = value[i];
    }
    if (quote) b[o++] = '"';
    b[o] = 0;
    *len = o;
    return 0;
}

char *ferry__dlq_filter_text(const ferry_dlq_filter *f, int again) {
    char *buf = calloc(1, 1);
    size_t len = 0;
    if (!buf) return NULL;
    char num[32];
    int bad = 0;
    if (f) {
        if (f->id) bad |= put(&buf, &len, "id", f->id);
        if (f->ids && f->nids) {
            /* the count and the first id: the audit rows name each row anyway */
            snprintf(num, sizeof num, "%zu", f->nids);
            bad |= put(&buf, &len, "ids", num);
            if (f->ids[0]) bad |= put(&buf, &len, "ids_first", f->ids[0]);
        }
        if (f->prefix) bad |= put(&buf, &len, "prefix", f->prefix);
        if (f->queue) bad |= put(&buf, &len, "queue", f->queue);
        if (f->name) bad |= put(&buf, &len, "name", f->name);
        if (f->error_contains) bad |= put(&buf, &len, "error", f->error_contains);
        if (f->since_ms) {
            snprintf(num, sizeof num, "%lld", f->since_ms);
            bad |= put(&buf, &len, "since_ms", num);
        }
        if (f->until_ms) {
            snprintf(num, sizeof num, "%lld", f->until_ms);
            bad |= put(&buf, &len, "until_ms", num);
        }
        if (f->redriven_fewer_than) {
            snprintf(num, sizeof num, "%ld", f->redriven_fewer_than);
            bad |= put(&buf, &len, "redriven_fewer_than", num);
        }
        if (f->redriven_at_least) {
            snprintf(num, sizeof num, "%ld", f->redriven_at_least);
            bad |= put(&buf, &len, "redriven_at_least", num);
        }
        if (f->limit) {
            snprintf(num, sizeof num, "%lld", f->limit);
            bad |= put(&buf, &len, "limit", num);
        }
    }
    if (again) bad |= put(&buf, &len, "again", "1");
    if (!bad && len == 0) bad |= put(&buf, &len, "all", "1");
    if (bad) {
        free(buf);
        return NULL;
    }
    return buf;
}
