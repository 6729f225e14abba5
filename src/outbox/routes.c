/* routes.c - the relay's routes file: topic -> queue:job-name targets (fan-out). The parser
 * is pure (text in, table out, no I/O) so it is unit-tested and fuzzed alone; only
 * ferry_routes_load reads a file. Every problem is reported as "<file>:<line>: <what>",
 * because the relay refuses to start on a bad file and the operator must find the line. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ferry/outbox.h"
#include "ferry/queue.h"
#include "outbox/routes.h"
#include "util/error.h"
#include "util/json_text.h"

#define SHOW_MAX 64 /* bytes of a name quoted in a message */

typedef struct route_target {
    char *queue;
    char *job;
} route_target;

typedef struct route_topic {
    char *topic;
    int line;
    size_t ntargets;
    route_target *targets;
} route_topic;

struct ferry_routes {
    size_t ntopics, cap;
    route_topic *topics;
    size_t *sorted; /* topic indexes ordered by name, for lookups */
};

void ferry_routes_free(ferry_routes *r) {
    if (!r) return;
    for (size_t i = 0; i < r->ntopics; i++) {
        route_topic *t = &r->topics[i];
        for (size_t j = 0; j < t->ntargets; j++) {
            free(t->targets[j].queue);
            free(t->targets[j].job);
        }
        free(t->targets);
        free(t->topic);
    }
    free(r->topics);
    free(r->sorted);
    free(r);
}

/* Parsing state: where we are, for messages. */
typedef struct parser {
    const char *file;
    int line;
    ferry_error *err;
} parser;

/* Length of s[0..n) cut to at most SHOW_MAX bytes on a UTF-8 boundary. */
static int show_len(const char *s, size_t n) {
    if (n <= SHOW_MAX) return (int)n;
    size_t k = SHOW_MAX;
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--;
    return (int)k;
}

static const char *ellipsis(size_t n) {
    return n > SHOW_MAX ? "..." : "";
}

#define FAIL(p, code, ...) fail_at((p), (code), __VA_ARGS__)

static int fail_at(parser *p, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);
static int fail_at(parser *p, int code, const char *fmt, ...) {
    char what[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ferry__err(p->err, code, "%s:%d: %s", p->file, p->line, what);
}

static int check_name(parser *p, const char *kind, const char *s, size_t n, size_t max) {
    if (n > max)
        return FAIL(p, FERRY_EINVAL, "%s '%.*s%s' is %zu bytes, limit %zu", kind, show_len(s, n), s,
                    ellipsis(n), n, max);
    if (!ferryx_utf8_valid(s, n)) return FAIL(p, FERRY_EINVAL, "%s is not valid UTF-8", kind);
    return 0;
}

static int add_topic(parser *p, ferry_routes *r, const char *s, size_t n) {
    if (r->ntopics == FERRY_ROUTES_TOPICS_MAX)
        return FAIL(p, FERRY_ETOOBIG, "more than %d topics", FERRY_ROUTES_TOPICS_MAX);
    if (r->ntopics == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        route_topic *t = realloc(r->topics, cap * sizeof *t);
        if (!t) return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
        r->topics = t;
        r->cap = cap;
    }
    route_topic *t = &r->topics[r->ntopics];
    memset(t, 0, sizeof *t);
    if (!(t->topic = strndup(s, n))) return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    t->line = p->line;
    r->ntopics++;
    return 0;
}

static int add_target(parser *p, route_topic *t, const char *s, size_t n) {
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return FAIL(p, FERRY_EINVAL, "target '%.*s%s' of topic '%.*s%s' is not queue:job-name",
                    show_len(s, n), s, ellipsis(n), show_len(t->topic, strlen(t->topic)), t->topic,
                    ellipsis(strlen(t->topic)));
    size_t qn = (size_t)(colon - s), jn = n - qn - 1;
    if (qn == 0)
        return FAIL(p, FERRY_EINVAL, "target '%.*s%s': empty queue name", show_len(s, n), s,
                    ellipsis(n));
    if (jn == 0)
        return FAIL(p, FERRY_EINVAL, "target '%.*s%s': empty job name", show_len(s, n), s,
                    ellipsis(n));
    int rc = check_name(p, "queue name", s, qn, FERRY_QUEUE_NAME_MAX);
    if (!rc) rc = check_name(p, "job name", colon + 1, jn, FERRY_JOB_NAME_MAX);
    if (rc) return rc;
    for (size_t j = 0; j < t->ntargets; j++)
        if (strlen(t->targets[j].queue) == qn && !memcmp(t->targets[j].queue, s, qn))
            return FAIL(p, FERRY_EINVAL,
                        "queue '%.*s%s' appears twice for topic '%.*s%s' (its jobs would share the "
                        "event id as jobId, so the second would be dropped as a duplicate)",
                        show_len(s, qn), s, ellipsis(qn), show_len(t->topic, strlen(t->topic)),
                        t->topic, ellipsis(strlen(t->topic)));
    if (t->ntargets == FERRY_ROUTES_TARGETS_MAX)
        return FAIL(p, FERRY_ETOOBIG, "topic '%.*s%s' has more than %d targets",
                    show_len(t->topic, strlen(t->topic)), t->topic, ellipsis(strlen(t->topic)),
                    FERRY_ROUTES_TARGETS_MAX);
    route_target *nt = realloc(t->targets, (t->ntargets + 1) * sizeof *nt);
    if (!nt) return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    t->targets = nt;
    route_target *x = &t->targets[t->ntargets];
    x->queue = strndup(s, qn);
    x->job = strndup(colon + 1, jn);
    if (!x->queue || !x->job) {
        free(x->queue);
        free(x->job);
        return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    }
    t->ntargets++;
    return 0;
}

/* One line (without its newline). */
static int parse_line(parser *p, ferry_routes *r, const char *s, size_t n) {
    if (n > 0 && s[n - 1] == '\r') n--;
    if (n > FERRY_ROUTES_LINE_MAX)
        return FAIL(p, FERRY_ETOOBIG, "line is %zu bytes, limit %d", n, FERRY_ROUTES_LINE_MAX);
    const char *hash = memchr(s, '#', n);
    if (hash) n = (size_t)(hash - s);
    route_topic *t = NULL;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\t') {
            i++;
            continue;
        }
        size_t start = i;
        while (i < n && s[i] != ' ' && s[i] != '\t') {
            unsigned char d = (unsigned char)s[i];
            if (d < 0x20 || d == 0x7f)
                return FAIL(p, FERRY_EINVAL, "control character 0x%02x at column %zu", d, i + 1);
            i++;
        }
        const char *tok = s + start;
        size_t tn = i - start;
        int rc;
        if (!t) {
            rc = check_name(p, "topic", tok, tn, FERRY_OUTBOX_TOPIC_MAX);
            if (!rc) rc = add_topic(p, r, tok, tn);
            if (rc) return rc;
            t = &r->topics[r->ntopics - 1];
        } else if ((rc = add_target(p, t, tok, tn))) {
            return rc;
        }
    }
    if (t && t->ntargets == 0)
        return FAIL(p, FERRY_EINVAL,
                    "topic '%.*s%s' has no targets (expected queue:job-name after it)",
                    show_len(t->topic, strlen(t->topic)), t->topic, ellipsis(strlen(t->topic)));
    return 0;
}

static int by_topic_then_line(const void *a, const void *b) {
    const route_topic *x = *(const route_topic *const *)a, *y = *(const route_topic *const *)b;
    int c = strcmp(x->topic, y->topic);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Build the sorted index; a topic named twice is an error at its later line. */
static int index_topics(parser *p, ferry_routes *r) {
    size_t n = r->ntopics ? r->ntopics : 1;
    const route_topic **by_name = malloc(n * sizeof *by_name);
    r->sorted = malloc(n * sizeof *r->sorted);
    if (!by_name || !r->sorted) {
        free(by_name);
        return ferry__err(p->err, FERRY_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < r->ntopics; i++)
        by_name[i] = &r->topics[i];
    qsort(by_name, r->ntopics, sizeof *by_name, by_topic_then_line);
    for (size_t i = 0; i < r->ntopics; i++)
        r->sorted[i] = (size_t)(by_name[i] - r->topics);
    free(by_name);
    int dup_line = 0, first_line = 0;
    const char *dup = NULL;
    for (size_t i = 1; i < r->ntopics; i++) {
        const route_topic *a = &r->topics[r->sorted[i - 1]], *b = &r->topics[r->sorted[i]];
        if (strcmp(a->topic, b->topic)) continue;
        int later = a->line > b->line ? a->line : b->line;
        if (!dup || later < dup_line) {
            dup = a->topic;
            dup_line = later;
            first_line = a->line < b->line ? a->line : b->line;
        }
    }
    if (dup) {
        p->line = dup_line;
        return FAIL(p, FERRY_EINVAL,
                    "topic '%.*s%s' is already routed at line %d (list all its "
                    "targets on one line)",
                    show_len(dup, strlen(dup)), dup, ellipsis(strlen(dup)), first_line);
    }
    return 0;
}

int ferry_routes_parse(const char *text, size_t len, const char *filename, ferry_routes **out,
                       ferry_error *err) {
    if (out) *out = NULL;
    if (!out || (!text && len))
        return ferry__err(err, FERRY_EINVAL, "ferry_routes_parse: NULL argument");
    parser p = {filename ? filename : "(routes)", 0, err};
    if (len > FERRY_ROUTES_FILE_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "%s: %zu bytes, limit %u", p.file, len,
                          FERRY_ROUTES_FILE_MAX);
    ferry_routes *r = calloc(1, sizeof *r);
    if (!r) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    int rc = 0;
    /* a UTF-8 byte order mark (some editors write one) is not part of the first topic */
    size_t start = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
    for (size_t pos = start; rc == 0 && pos < len;) {
        p.line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        const char *nul = memchr(text + pos, '\0', n);
        if (nul)
            rc = FAIL(&p, FERRY_EINVAL, "NUL byte at column %zu", (size_t)(nul - (text + pos)) + 1);
        else
            rc = parse_line(&p, r, text + pos, n);
        pos += n + 1;
    }
    if (rc == 0 && r->ntopics == 0) {
        p.line = p.line ? p.line : 1;
        rc = ferry__err(err, FERRY_EINVAL,
                        "%s: no routes (expected lines of: topic queue:job-name...)", p.file);
    }
    if (rc == 0) rc = index_topics(&p, r);
    if (rc) {
        ferry_routes_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int ferry_routes_load(const char *path, ferry_routes **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return ferry__err(err, FERRY_EINVAL, "ferry_routes_load: NULL argument");
    /* Opened without blocking: a FIFO no one writes to would otherwise hang the caller (it
     * now reads as empty, and is refused as such), while a pipe with a writer (a shell's
     * <(...)) is read as it comes, once blocking again. A directory is refused by name. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return ferry__err(err, FERRY_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return ferry__err(err, FERRY_EIO, "%s: cannot read: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return ferry__err(err, FERRY_EIO, "%s: is a directory", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    char *buf = malloc(FERRY_ROUTES_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    size_t n = fread(buf, 1, FERRY_ROUTES_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    int rc;
    if (bad)
        rc = ferry__err(err, FERRY_EIO, "%s: read error", path);
    else if (n > FERRY_ROUTES_FILE_MAX)
        rc =
            ferry__err(err, FERRY_ETOOBIG, "%s: larger than %u bytes", path, FERRY_ROUTES_FILE_MAX);
    else
        rc = ferry_routes_parse(buf, n, path, out, err);
    free(buf);
    return rc;
}

size_t ferry_routes_topic_count(const ferry_routes *r) {
    return r ? r->ntopics : 0;
}

const char *ferry_routes_topic(const ferry_routes *r, size_t i) {
    return r && i < r->ntopics ? r->topics[i].topic : NULL;
}

/* Index of topic in r->topics, or -1. Binary search over the sorted index. */
static long find_topic(const ferry_routes *r, const char *topic) {
    size_t lo = 0, hi = r->ntopics;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->topics[r->sorted[mid]].topic, topic);
        if (c == 0) return (long)r->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int ferry_routes_has_topic(const ferry_routes *r, const char *topic) {
    return r && topic && find_topic(r, topic) >= 0;
}

size_t ferry_routes_target_count(const ferry_routes *r, size_t i) {
    return r && i < r->ntopics ? r->topics[i].ntargets : 0;
}

int ferry_routes_target(const ferry_routes *r, size_t i, size_t j, const char **queue,
                        const char **job_name) {
    if (!r || i >= r->ntopics || j >= r->topics[i].ntargets) return FERRY_EINVAL;
    if (queue) *queue = r->topics[i].targets[j].queue;
    if (job_name) *job_name = r->topics[i].targets[j].job;
    return 0;
}

ferry_routes *ferry__routes_clone(const ferry_routes *src) {
    if (!src) return NULL;
    ferry_routes *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    size_t n = src->ntopics ? src->ntopics : 1;
    r->topics = calloc(n, sizeof *r->topics);
    r->sorted = malloc(n * sizeof *r->sorted);
    r->cap = n;
    if (!r->topics || !r->sorted) goto oom;
    memcpy(r->sorted, src->sorted, src->ntopics * sizeof *r->sorted);
    for (size_t i = 0; i < src->ntopics; i++, r->ntopics++) {
        const route_topic *s = &src->topics[i];
        route_topic *t = &r->topics[i];
        t->line = s->line;
        if (!(t->topic = strdup(s->topic))) goto oom;
        if (!(t->targets = calloc(s->ntargets, sizeof *t->targets))) goto oom;
        for (size_t j = 0; j < s->ntargets; j++, t->ntargets++) {
            t->targets[j].queue = strdup(s->targets[j].queue);
            t->targets[j].job = strdup(s->targets[j].job);
            if (!t->targets[j].queue || !t->targets[j].job) {
                free(t->targets[j].queue);
                free(t->targets[j].job);
                goto oom;
            }
        }
    }
    return r;
oom:
    ferry_routes_free(r);
    return NULL;
}

long ferry__routes_find(const ferry_routes *r, const char *topic) {
    return r && topic ? find_topic(r, topic) : -1;
}
