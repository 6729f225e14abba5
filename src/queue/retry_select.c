/* retry_select.c - ferry_queue_retry_selected: retrying the finished jobs of a state that a
 * selector (name, failed reason, data text) matches, a page at a time. Each page is read
 * and matched inside Redis by lua/retrySelectPage.lua (job data stays there), starting
 * after the (score, member) where the previous page stopped, so removals from the set
 * meanwhile never make it skip a job; each match is then retried with
 * ferry_queue_retry_job, so the effects are Job.retry's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/queue_internal.h"
#include "util/clock.h"
#include "util/error.h"

/* One page's reply, checked: the ids and the cursor are borrowed from the reply. */
struct page {
    long long total, scanned, gone;
    int ended, budget;
    const char *last_score, *last_member;
    size_t last_member_len, nmatched;
    redisReply *const *matched;
};

/* Where the next page starts: after the last (score, member) a page looked at. */
struct cursor {
    char score[64]; /* "" = from the start */
    char *member;   /* malloc'd, member_len bytes (a member may hold any byte) */
    size_t member_len;
};

#define PAGE_HEAD 7 /* total, scanned, gone, ended, budget, lastScore, lastMember */

static int read_page(ferry_queue *q, const char *set_key, const struct cursor *cur, long long count,
                     const char *max_ms, const ferry_queue_retry_select *s, redisReply **reply,
                     struct page *p, ferry_error *err) {
    char a_count[32], a_budget[32];
    snprintf(a_count, sizeof a_count, "%lld", count);
    snprintf(a_budget, sizeof a_budget, "%d", FERRY_RETRY_SELECT_PAGE_BYTES);
    const char *keys[] = {set_key};
    const char *args[] = {q->keys.base,
                          cur->score,
                          cur->member ? cur->member : "",
                          a_count,
                          max_ms,
                          s->name ? s->name : "",
                          s->name ? "1" : "0",
                          s->reason_contains ? s->reason_contains : "",
                          s->data_contains ? s->data_contains : "",
                          a_budget};
    size_t lens[10];
    for (int i = 0; i < 10; i++)
        lens[i] = i == 2 ? cur->member_len : strlen(args[i]);
    pthread_mutex_lock(&q->mu);
    int rc = ferry__queue_eval(q, "retrySelectPage", 1, keys, 10, args, lens, 1, reply, err);
    pthread_mutex_unlock(&q->mu);
    if (rc) return rc;
    redisReply *r = *reply;
    if ((rc = ferry__queue_reply_error(q, r, "retrySelectPage", err)) != 0) return rc;
    int ok = r->type == REDIS_REPLY_ARRAY && r->elements >= PAGE_HEAD;
    for (size_t i = 0; ok && i < 5; i++)
        ok = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer >= 0;
    for (size_t i = 5; ok && i < r->elements; i++)
        ok = r->element[i]->type == REDIS_REPLY_STRING;
    if (ok)
        ok = r->element[1]->integer <= count &&
             r->elements - PAGE_HEAD <= (size_t)r->element[1]->integer &&
             r->element[2]->integer <= r->element[1]->integer &&
             r->element[5]->len < sizeof cur->score &&
             (r->element[1]->integer == 0 || r->element[5]->len > 0) &&
             (r->element[1]->integer > 0 || r->element[3]->integer == 1);
    if (!ok)
        return ferry__err(err, FERRY_EPROTO, "queue %s: retrySelectPage: unexpected reply",
                          q->shown);
    p->total = r->element[0]->integer;
    p->scanned = r->element[1]->integer;
    p->gone = r->element[2]->integer;
    p->ended = r->element[3]->integer != 0;
    p->budget = r->element[4]->integer != 0;
    p->last_score = r->element[5]->str;
    p->last_member = r->element[6]->str;
    p->last_member_len = r->element[6]->len;
    p->nmatched = r->elements - PAGE_HEAD;
    p->matched = r->element + PAGE_HEAD;
    return 0;
}

/* Move the cursor to the page's last member (a page that looked at nothing ended). */
static int cursor_move(struct cursor *cur, const struct page *p, ferry_error *err) {
    if (p->scanned == 0) return 0;
    char *m = malloc(p->last_member_len + 1);
    if (!m) return ferry__err(err, FERRY_ENOMEM, "retry selected: out of memory");
    memcpy(m, p->last_member, p->last_member_len + 1);
    free(cur->member);
    cur->member = m;
    cur->member_len = p->last_member_len;
    snprintf(cur->score, sizeof cur->score, "%s", p->last_score);
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
    /* The cursor, not a position: jobs this call retries and jobs others remove from the
     * set meanwhile (removeOnFail trims, Queue.clean) are all before it or elsewhere, and
     * neither moves where the next page starts. */
    struct cursor cur = {"", NULL, 0};
    for (long long page_no = 0;; page_no++) {
        if (out->scanned >= scan_max) {
            how = FERRY_RETRY_SELECT_SCAN_MAX;
            break;
        }
        long long want = scan_max - out->scanned;
        if (want > FERRY_RETRY_SELECT_PAGE) want = FERRY_RETRY_SELECT_PAGE;
        redisReply *r = NULL;
        struct page p = {0};
        rc = read_page(q, set_key, &cur, want, max_ms, &s, &r, &p, err);
        if (rc == 0) rc = cursor_move(&cur, &p, err);
        if (rc) {
            if (r) freeReplyObject(r);
            break;
        }
        if (page_no == 0) out->total = p.total;
        out->scanned += p.scanned;
        out->matched += (long long)p.nmatched;
        for (size_t i = 0; rc == 0 && i < p.nmatched; i++) {
            ferry_error e = {0};
            const redisReply *id = p.matched[i];
            int r1 = strlen(id->str) != id->len /* a NUL byte: no job id */
                         ? FERRY_EINVAL
                         : ferry_queue_retry_job(q, id->str, s.state, s.flags, NULL, &e);
            if (r1 == 0)
                out->retried++;
            else if (r1 == FERRY_ESTATE || r1 == FERRY_ENOTFOUND || r1 == FERRY_EINVAL)
                out->skipped++; /* moved or deleted since the page was read, or an id ferry
                                   cannot address (e.g. named like a queue key) */
            else
                rc = ferry__err(err, r1, "%s", e.message);
        }
        freeReplyObject(r);
        if (rc) break;
        /* A page cut short by its byte budget is not the end: only ended says so. */
        int last = p.ended;
        if (s.progress && s.progress(s.progress_ctx, out) && !last) {
            how = FERRY_RETRY_SELECT_CANCELLED;
            break;
        }
        if (last) break;
    }
    free(cur.member);
    if (ended) *ended = how;
    return rc;
}
