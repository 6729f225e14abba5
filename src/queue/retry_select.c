/* retry_select.c - ferry_queue_retry_selected: retrying the finished jobs of a state that a
 * selector (name, failed reason, data text) matches, a page at a time. Each page is read
 * and matched inside Redis by lua/retrySelectPage.lua (job data stays there); each match
 * is then retried with ferry_queue_retry_job, so the effects are Job.retry's. */
#include <stdio.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"

/* One page's reply, checked: the ids are borrowed from the reply. */
struct page {
    long long total, scanned, gone;
    int past;
    size_t nmatched;
    redisReply *const *matched;
};

static int read_page(ferry_queue *q, const char *set_key, long long start, long long count,
                     const char *max_ms, const ferry_queue_retry_select *s, redisReply **reply,
                     struct page *p, ferry_error *err) {
    char a_start[32], a_count[32];
    snprintf(a_start, sizeof a_start, "%lld", start);
    snprintf(a_count, sizeof a_count, "%lld", count);
    const char *keys[] = {set_key};
    const char *args[] = {q->keys.base,
                          a_start,
                          a_count,
                          max_ms,
                          s->name ? s->name : "",
                          s->name ? "1" : "0",
                          s->reason_contains ? s->reason_contains : "",
                          s->data_contains ? s->data_contains : ""};
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "retrySelectPage", 1, keys, 8, args, NULL, 1, reply, err);
    pthread_mutex_unlock(&q->mu);
    if (rc) return rc;
    redisReply *r = *reply;
    if ((rc = ferry__queue_reply_error(q, r, "retrySelectPage", err)) != 0) return rc;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements >= 4;
    for (size_t i = 0; ok && i < 4; i++)
        ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer >= 0;
    for (size_t i = 4; ok && i < r->elements; i++)
        ok = r->element[i]->type == REDIS_REPLY_STRING;
    if (ok) ok = r->element[1]->integer <= count && r->elements - 4 <= (size_t)count;
    if (!ok)
        return ferry__err(err, FERRY_EPROTO, "queue %s: retrySelectPage: unexpected reply",
                          q->shown);
    p->total = r->element[0]->integer;
    p->scanned = r->element[1]->integer;
    p->past = r->element[2]->integer != 0;
    p->gone = r->element[3]->integer;
    p->nmatched = r->elements - 4;
    p->matched = r->element + 4;
    return 0;
}

static int check_selector(const ferry_queue_retry_select *s, long long *scan_max,
                          ferry_error *err) {
    if (strcmp(s->state, "failed") != 0 && strcmp(s->state, "completed") != 0)
        return ferry__err(err, FERRY_EINVAL, "retry selected: state must be failed or completed");
    *scan_max = s->scan_max ? s->scan_max : FERRY_QUEUE_FIND_SCAN_DEFAULT;
    if (*scan_max < 1 || *scan_max > FERRY_QUEUE_FIND_SCAN_MAX)
        return ferry__err(err, FERRY_EINVAL, "retry selected: scan max %lld out of range (1..%lld)",
                          s->scan_max, (long long)FERRY_QUEUE_FIND_SCAN_MAX);
    if (s->flags & ~(unsigned)(FERRY_RETRY_RESET_ATTEMPTS | FERRY_RETRY_RESET_STARTED))
        return ferry__err(err, FERRY_EINVAL, "retry selected: unknown flags 0x%x", s->flags);
    if (s->name && strlen(s->name) > FERRY_JOB_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL,
                          "retry selected: name of %zu bytes is over the limit of %d",
                          strlen(s->name), FERRY_JOB_NAME_MAX);
    const char *texts[] = {s->reason_contains, s->data_contains};
    const char *what[] = {"reason text", "data text"};
    for (int i = 0; i < 2; i++)
        if (texts[i] && strlen(texts[i]) > FERRY_RETRY_SELECT_TEXT_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "retry selected: %s of %zu bytes is over the limit of %d", what[i],
                              strlen(texts[i]), FERRY_RETRY_SELECT_TEXT_MAX);
    if (s->reason_contains && s->reason_contains[0] && strcmp(s->state, "completed") == 0)
        return ferry__err(err, FERRY_EINVAL,
                          "retry selected: a failed-reason text needs state failed (completed "
                          "jobs have no failedReason)");
    return 0;
}

int ferry_queue_retry_selected(ferry_queue *q, const ferry_queue_retry_select *sel,
                               ferry_queue_retry_counts *out, int *ended, ferry_error *err) {
    ferry_queue_retry_counts local;
    if (!out) out = &local;
    memset(out, 0, sizeof *out);
    if (ended) *ended = FERRY_RETRY_SELECT_DONE;
    if (!q) return ferry__err(err, FERRY_EINVAL, "ferry_queue_retry_selected: queue is NULL");
    ferry_queue_retry_select s = {0};
    if (sel) s = *sel;
    if (!s.state) s.state = "failed";
    long long scan_max = 0;
    int rc = check_selector(&s, &scan_max, err);
    if (rc) return rc;
    const char *set_key = q->key[strcmp(s.state, "failed") == 0 ? QK_FAILED : QK_COMPLETED];
    char max_ms[32];
    snprintf(max_ms, sizeof max_ms, "%lld", (long long)ferry__now_ms());
    int how = FERRY_RETRY_SELECT_DONE;
    /* pos: the position in the set of the first job not looked at yet. The jobs this call
     * moves out of the set were all before it, so it goes back by their number. */
    for (long long pos = 0, page_no = 0;; page_no++) {
        if (out->scanned >= scan_max) {
            how = FERRY_RETRY_SELECT_SCAN_MAX;
            break;
        }
        long long want = scan_max - out->scanned;
        if (want > FERRY_RETRY_SELECT_PAGE) want = FERRY_RETRY_SELECT_PAGE;
        redisReply *r = NULL;
        struct page p = {0};
        rc = read_page(q, set_key, pos, want, max_ms, &s, &r, &p, err);
        if (rc) {
            if (r) freeReplyObject(r);
            break;
        }
        if (page_no == 0) out->total = p.total;
        out->scanned += p.scanned;
        out->matched += (long long)p.nmatched;
        long long left_set = 0;
        for (size_t i = 0; rc == 0 && i < p.nmatched; i++) {
            ferry_error e = {0};
            int r1 = ferry_queue_retry_job(q, p.matched[i]->str, s.state, s.flags, NULL, &e);
            if (r1 == 0) {
                out->retried++;
                left_set++;
            } else if (r1 == FERRY_ESTATE || r1 == FERRY_ENOTFOUND) {
                out->skipped++; /* moved (or deleted) since the page was read */
                left_set++;
            } else if (r1 == FERRY_EINVAL) {
                out->skipped++; /* an id ferry cannot address (e.g. named like a queue key) */
            } else {
                rc = ferry__err(err, r1, "%s", e.message);
            }
        }
        freeReplyObject(r);
        if (rc) break;
        pos += p.scanned - left_set;
        int last = p.past || p.scanned < want;
        if (s.progress && s.progress(s.progress_ctx, out) && !last) {
            how = FERRY_RETRY_SELECT_CANCELLED;
            break;
        }
        if (last) break;
    }
    if (ended) *ended = how;
    return rc;
}
