/* test_queue_add_ids.c - the internal add path with job ids given apart from the options
 * (ferry__queue_add_bulk_ids, used by the outbox relay) and the one-parse-per-options-text
 * reuse inside add_bulk: against a real Redis, every job must be stored exactly as the public
 * path stores the same job with {"jobId": id, ...opts} (hash fields byte for byte, the list or
 * set it lands in, wait order), ids are checked with the same rules and messages, duplicates
 * are dropped, and an id given both ways is refused. */
#include <jansson.h>

#include "queue/job_opts_ext.h"
#include "queue/queue_internal.h"
#include "support/qt.h"

/* ---- fixtures ------------------------------------------------------------------------- */

/* OPTS holds a key BullMQ does not know (custom, with a nested jobId that the id slot must
 * not be taken for), so these queues allow unknown job options. */
#define qt_open(p, n, d) qt_open_lax((p), (n), (d), 1)

static const char *const DEFAULTS[] = {
    NULL,
    "{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":500},"
    "\"removeOnComplete\":{\"count\":10}}",
    /* keys the jobs override keep the defaults' place, before jobId */
    "{\"removeOnComplete\":true,\"priority\":1,\"delay\":0,\"attempts\":2}",
};
#define NDEFAULTS (sizeof DEFAULTS / sizeof DEFAULTS[0])

static const char *const OPTS[] = {
    NULL,
    "{\"delay\":5000,\"priority\":7}",
    "{\"priority\":3,\"attempts\":5,\"timestamp\":1700000000000,\"lifo\":false}",
    /* a nested jobId equal to the placeholder the slot search uses, a null, telemetry */
    "{\"removeOnFail\":true,\"custom\":{\"jobId\":\"a\",\"b\":[\"a\"]},\"attempts\":null,"
    "\"telemetry\":{\"metadata\":\"m\"}}",
    "{\"lifo\":true,\"backoff\":2000,\"keepLogs\":3}",
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

static const char *const IDS[] = {
    "evt-1",
    "quote\"back\\slash",
    "\xc3\xbcnic\xc3\xb8\x64\x65-\xe2\x9c\x93", /* ünicøde-✓ */
    "tab\tnl\nctl\001end",
    "x:y:z",
    "7up",
};
#define NIDS (sizeof IDS / sizeof IDS[0])
#define NJOBS (NOPTS * NIDS)

/* Job (o, i)'s id: IDS[i] with "~o" appended, so every job of a queue has its own id. */
static char JOB_IDS[NOPTS][NIDS][64];
static const char *job_id(size_t o, size_t i) {
    snprintf(JOB_IDS[o][i], sizeof JOB_IDS[o][i], "%s~%zu", IDS[i], o);
    return JOB_IDS[o][i];
}

/* {"jobId": id, ...opts} as the public path would be given it. Caller frees. */
static char *opts_with_id(const char *opts, const char *id) {
    json_t *o = json_object();
    json_object_set_new(o, "jobId", json_string(id));
    if (opts) {
        json_error_t je;
        json_t *rest = json_loads(opts, 0, &je);
        assert_non_null(rest);
        assert_int_equal(json_object_update(o, rest), 0);
        json_decref(rest);
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    assert_non_null(s);
    return s;
}

/* One job's stored state: hash fields and where it is. */
typedef struct job_state {
    char fields[2048]; /* "k=v;..." sorted, timestamp left out */
    long long timestamp;
    char where[16]; /* wait, delayed, prioritized, or none */
} job_state;

static void read_job(ferry_queue *q, const char *id, job_state *st) {
    redisReply *r = qt_cmd("HGETALL %s", qt_key(q, id));
    size_t n = r->elements / 2, len = 0;
    assert_true(n > 0);
    char **items = calloc(n, sizeof *items);
    st->timestamp = -1;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = r->element[2 * i], *v = r->element[2 * i + 1];
        if (!strcmp(k->str, "timestamp")) st->timestamp = atoll(v->str);
        size_t l = k->len + v->len + 2;
        items[i] = malloc(l);
        snprintf(items[i], l, "%s=%s", k->str, v->str);
    }
    qsort(items, n, sizeof *items, th_cmp_str);
    st->fields[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(items[i], "timestamp=", 10))
            len += (size_t)snprintf(st->fields + len, sizeof st->fields - len, "%s%s",
                                    len ? ";" : "", items[i]);
        free(items[i]);
    }
    assert_true(len < sizeof st->fields - 1);
    free(items);
    freeReplyObject(r);
    assert_true(st->timestamp > 0);
    r = qt_cmd("LPOS %s %s", qt_key(q, "wait"), id);
    int in_wait = r->type == REDIS_REPLY_INTEGER;
    freeReplyObject(r);
    r = qt_cmd("ZSCORE %s %s", qt_key(q, "delayed"), id);
    int in_delayed = r->type != REDIS_REPLY_NIL;
    freeReplyObject(r);
    r = qt_cmd("ZSCORE %s %s", qt_key(q, "prioritized"), id);
    int in_prio = r->type != REDIS_REPLY_NIL;
    freeReplyObject(r);
    assert_true(in_wait + in_delayed + in_prio <= 1);
    snprintf(st->where, sizeof st->where, "%s",
             in_wait      ? "wait"
             : in_delayed ? "delayed"
             : in_prio    ? "prioritized"
                          : "none");
}

/* The fast job equals the reference job; timestamps: the explicit one, else each inside the
 * window of its own call. */
static void assert_same_job(ferry_queue *ref, ferry_queue *fast, const char *id, const char *opts,
                            const int64_t ref_win[2], const int64_t fast_win[2]) {
    job_state a, b;
    read_job(ref, id, &a);
    read_job(fast, id, &b);
    if (strcmp(a.fields, b.fields) || strcmp(a.where, b.where))
        fail_msg("job %s opts %s:\n ref  %s [%s]\n fast %s [%s]", id, opts ? opts : "NULL",
                 a.fields, a.where, b.fields, b.where);
    if (opts && strstr(opts, "\"timestamp\"")) {
        assert_int_equal(a.timestamp, b.timestamp);
    } else {
        assert_in_range(a.timestamp, ref_win[0], ref_win[1]);
        assert_in_range(b.timestamp, fast_win[0], fast_win[1]);
    }
}

static void add_ids_ok(ferry_queue *q, const ferry_job_spec *s, const char *const *ids, size_t n,
                       int data_checked, char **out) {
    ferry_error e = {0};
    if (ferry__queue_add_bulk_ids(q, s, ids, n, data_checked, out, &e))
        fail_msg("add_bulk_ids: %s", e.message);
}

/* ---- same stored jobs as the public path ------------------------------------------------ */

static void test_ids_store_what_opts_store(void **state) {
    (void)state;
    for (size_t d = 0; d < NDEFAULTS; d++) {
        const char *prefix = th_prefix();
        char pa[96], pb[96], pc[96];
        snprintf(pa, sizeof pa, "%s-ref", prefix);
        snprintf(pb, sizeof pb, "%s-runs", prefix);
        snprintf(pc, sizeof pc, "%s-mixed", prefix);
        ferry_queue *ref = qt_open(pa, "q", DEFAULTS[d]), *runs = qt_open(pb, "q", DEFAULTS[d]),
                    *mixed = qt_open(pc, "q", DEFAULTS[d]);

        /* reference: the public call, one job at a time, jobId inside the opts */
        int64_t ref_win[2] = {ferry__now_ms(), 0};
        for (size_t o = 0; o < NOPTS; o++)
            for (size_t i = 0; i < NIDS; i++) {
                char *text = opts_with_id(OPTS[o], job_id(o, i)), data[64];
                snprintf(data, sizeof data, "{\"o\":%zu,\"i\":%zu}", o, i);
                qt_add_expect(ref, "job", data, text, job_id(o, i));
                free(text);
            }
        ref_win[1] = ferry__now_ms();

        /* fast path, options in runs (one parse per run) and alternating (a parse per job) */
        ferry_job_spec s_runs[NJOBS], s_mixed[NJOBS];
        const char *id_runs[NJOBS], *id_mixed[NJOBS];
        char data[NJOBS][64];
        for (size_t o = 0; o < NOPTS; o++)
            for (size_t i = 0; i < NIDS; i++) {
                size_t k = o * NIDS + i, m = i * NOPTS + o;
                snprintf(data[k], sizeof data[k], "{\"o\":%zu,\"i\":%zu}", o, i);
                s_runs[k] = (ferry_job_spec){"job", data[k], OPTS[o]};
                id_runs[k] = job_id(o, i);
                s_mixed[m] = s_runs[k];
                id_mixed[m] = job_id(o, i);
            }
        char *got[NJOBS];
        int64_t runs_win[2] = {ferry__now_ms(), 0};
        add_ids_ok(runs, s_runs, id_runs, NJOBS, 1, got);
        runs_win[1] = ferry__now_ms();
        for (size_t k = 0; k < NJOBS; k++) {
            assert_string_equal(got[k], id_runs[k]);
            free(got[k]);
        }
        int64_t mixed_win[2] = {ferry__now_ms(), 0};
        add_ids_ok(mixed, s_mixed, id_mixed, NJOBS, 0, NULL);
        mixed_win[1] = ferry__now_ms();

        for (size_t o = 0; o < NOPTS; o++)
            for (size_t i = 0; i < NIDS; i++) {
                assert_same_job(ref, runs, job_id(o, i), OPTS[o], ref_win, runs_win);
                assert_same_job(ref, mixed, job_id(o, i), OPTS[o], ref_win, mixed_win);
            }
        /* same adds in the same order: same wait list and prioritized scores */
        char want[4096];
        snprintf(want, sizeof want, "%s", qt_lrange(qt_key(ref, "wait")));
        assert_string_equal(qt_lrange(qt_key(runs, "wait")), want);
        snprintf(want, sizeof want, "%s", qt_zrange(qt_key(ref, "prioritized")));
        assert_string_equal(qt_zrange(qt_key(runs, "prioritized")), want);
        assert_string_equal(qt_get(qt_key(runs, "id")), qt_get(qt_key(ref, "id")));
        /* every job was added, none as a duplicate of another */
        redisReply *r = qt_cmd("ZCARD %s", qt_key(ref, "delayed"));
        long long total = qt_ival(r) + qt_ival(qt_cmd("LLEN %s", qt_key(ref, "wait"))) +
                          qt_ival(qt_cmd("ZCARD %s", qt_key(ref, "prioritized")));
        assert_int_equal(total, NJOBS);
        assert_null(strstr(qt_events(runs), "duplicated"));
        ferry_queue_close(ref);
        ferry_queue_close(runs);
        ferry_queue_close(mixed);
    }
}

/* ""  is no custom id (as opts.jobId "" is) and a NULL entry keeps the opts' own jobId. */
static void test_empty_and_absent_ids(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    char pa[96], pb[96];
    snprintf(pa, sizeof pa, "%s-ref", prefix);
    snprintf(pb, sizeof pb, "%s-fast", prefix);
    ferry_queue *ref = qt_open(pa, "q", DEFAULTS[1]), *fast = qt_open(pb, "q", DEFAULTS[1]);
    ferry_job_spec ref_s[3] = {{"n", NULL, "{\"jobId\":\"\",\"delay\":10}"},
                               {"n", NULL, "{\"jobId\":\"own\"}"},
                               {"n", NULL, "{\"jobId\":\"given\",\"delay\":10}"}};
    ferry_job_spec fast_s[3] = {{"n", NULL, "{\"delay\":10}"},
                                {"n", NULL, "{\"jobId\":\"own\"}"},
                                {"n", NULL, "{\"delay\":10}"}};
    const char *ids[3] = {"", NULL, "given"};
    char *got[3];
    ferry_error e = {0};
    int64_t rw[2] = {ferry__now_ms(), 0};
    assert_int_equal(ferry_queue_add_bulk(ref, ref_s, 3, got, &e), 0);
    rw[1] = ferry__now_ms();
    assert_string_equal(got[0], "1");
    for (int i = 0; i < 3; i++)
        free(got[i]);
    int64_t fw[2] = {ferry__now_ms(), 0};
    add_ids_ok(fast, fast_s, ids, 3, 1, got);
    fw[1] = ferry__now_ms();
    const char *want[3] = {"1", "own", "given"};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(got[i], want[i]);
        assert_same_job(ref, fast, want[i], NULL, rw, fw);
        free(got[i]);
    }
    assert_string_equal(qt_hget(qt_key(fast, "1"), "opts"),
                        "{\"attempts\":3,\"backoff\":{\"type\":\"exponential\",\"delay\":500},"
                        "\"removeOnComplete\":{\"count\":10},\"delay\":10}");
    /* job_ids NULL altogether: the ordinary add */
    add_ids_ok(fast, fast_s, NULL, 1, 0, got);
    assert_string_equal(got[0], "4");
    free(got[0]);
    ferry_queue_close(ref);
    ferry_queue_close(fast);
}

/* ---- ids refused as opts.jobId refuses them ---------------------------------------------- */

static void test_bad_ids_same_errors(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "bad", DEFAULTS[1]);
    char longid[FERRY_JOB_ID_MAX + 2];
    memset(longid, 'k', sizeof longid - 1);
    longid[sizeof longid - 1] = 0;
    const char *bad[] = {"0",   "0:x",     "123", "-5", "100000000000000000000",
                         "a:b", "a:b:c:d", longid};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        for (size_t n = 1; n <= 3; n += 2) { /* alone, and as job 1 of 3 ("job 1: ...") */
            char *text = opts_with_id("{\"delay\":5}", bad[b]);
            ferry_job_spec ref_s[3] = {
                {"n", NULL, "{\"jobId\":\"fine\"}"}, {"n", NULL, text}, {"n", NULL, NULL}};
            ferry_job_spec fast_s[3] = {
                {"n", NULL, NULL}, {"n", NULL, "{\"delay\":5}"}, {"n", NULL, NULL}};
            const char *ids_one[1] = {bad[b]}, *ids_three[3] = {"fine", bad[b], NULL};
            ferry_error e1 = {0}, e2 = {0};
            int rc1 = ferry_queue_add_bulk(q, n == 1 ? ref_s + 1 : ref_s, n, NULL, &e1);
            int rc2 = ferry__queue_add_bulk_ids(q, n == 1 ? fast_s + 1 : fast_s,
                                                n == 1 ? ids_one : ids_three, n, 1, NULL, &e2);
            assert_int_equal(rc1, FERRY_EINVAL);
            assert_int_equal(rc2, rc1);
            assert_string_equal(e2.message, e1.message);
            assert_non_null(strstr(e2.message, "opts.jobId: "));
            free(text);
        }
    }
    /* not UTF-8: cannot be stored as JSON */
    const char *ids[1] = {"bad\xff"};
    ferry_job_spec s = {"n", NULL, NULL};
    ferry_error e = {0};
    assert_int_equal(ferry__queue_add_bulk_ids(q, &s, ids, 1, 1, NULL, &e), FERRY_EINVAL);
    assert_string_equal(e.message, "opts.jobId: not valid UTF-8");
    /* bad options and a bad id: the options' error */
    ferry_job_spec s2 = {"n", NULL, "{\"delay\":-1}"};
    const char *ids2[1] = {"0"};
    assert_int_equal(ferry__queue_add_bulk_ids(q, &s2, ids2, 1, 1, NULL, &e), FERRY_EINVAL);
    assert_non_null(strstr(e.message, "opts.delay"));
    /* nothing was added by any of these */
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s", qt_key(q, "wait"), qt_key(q, "delayed"))), 0);
    ferry_queue_close(q);
}

/* ---- duplicates, and an id given both ways ------------------------------------------------ */

static void test_duplicates_and_double_ids(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "dup", NULL);
    qt_add_expect(q, "n", "{\"v\":0}", "{\"jobId\":\"old\"}", "old"); /* added the public way */
    ferry_job_spec s[4] = {{"n", "{\"v\":1}", NULL},
                           {"n", "{\"v\":2}", NULL},
                           {"n", "{\"v\":3}", "{\"delay\":100}"},
                           {"n", "{\"v\":4}", NULL}};
    const char *ids[4] = {"k1", "k1", "old", "k2"};
    char *got[4];
    add_ids_ok(q, s, ids, 4, 1, got);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(got[i], ids[i]);
        free(got[i]);
    }
    assert_string_equal(qt_hget(qt_key(q, "k1"), "data"), "{\"v\":1}");
    assert_string_equal(qt_hget(qt_key(q, "old"), "data"), "{\"v\":0}");
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "k2,k1,old");
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "delayed"))), 0);
    /* again in a later call: nothing new */
    add_ids_ok(q, s, ids, 1, 1, NULL);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "k2,k1,old");
    assert_true(strstr(qt_events(q), "duplicated:jobId=k1") != NULL);

    /* an id given as argument and inside the opts too: refused, nothing added */
    const char *opts_ids[] = {"{\"jobId\":\"x1\"}", "{\"jobId\":\"k9\"}", "{\"jobId\":null}",
                              "{\"jobId\":\"\",\"delay\":1}"};
    for (size_t i = 0; i < sizeof opts_ids / sizeof opts_ids[0]; i++) {
        ferry_job_spec d[2] = {{"n", NULL, NULL}, {"n", NULL, opts_ids[i]}};
        const char *did[2] = {"k3", "k9"};
        ferry_error e = {0};
        assert_int_equal(ferry__queue_add_bulk_ids(q, d, did, 2, 1, got, &e), FERRY_EINVAL);
        assert_string_equal(e.message,
                            "job 1: opts.jobId: the job id is given separately, opts cannot "
                            "set it too");
        assert_null(got[0]);
        assert_null(got[1]);
    }
    /* the opts' jobId is fine where no id is given for that job */
    ferry_job_spec d[2] = {{"n", NULL, NULL}, {"n", NULL, "{\"jobId\":\"x1\"}"}};
    const char *did[2] = {"k3", NULL};
    add_ids_ok(q, d, did, 2, 1, got);
    assert_string_equal(got[0], "k3");
    assert_string_equal(got[1], "x1");
    free(got[0]);
    free(got[1]);
    assert_string_equal(qt_lrange(qt_key(q, "wait")), "x1,k3,k2,k1,old");
    ferry_queue_close(q);
}

/* ---- a key of the wrong type ---------------------------------------------------------- */

/* A key the add writes has the wrong type (another program's doing): the call fails and
 * writes nothing, so the retry once the key is fixed adds the jobs. Redis does not undo a
 * script that fails part-way: a job hash left without its wait/delayed/prioritized entry
 * would be taken for a duplicate by the retry, and the job lost (the outbox relay retries
 * with the same ids). */
static void test_wrong_key_type_writes_nothing(void **state) {
    (void)state;
    static const struct {
        const char *key, *bad_cmd, *field, *value, *opts, *lands_in, *want;
    } cases[] = {
        {"wait", "SET", NULL, "oops", NULL, "wait", "WRONGTYPE"},
        {"events", "SET", NULL, "oops", NULL, "wait", "WRONGTYPE"},
        {"marker", "SET", NULL, "oops", NULL, "wait", "WRONGTYPE"},
        {"delayed", "SET", NULL, "oops", "{\"delay\":60000}", "delayed", "WRONGTYPE"},
        {"prioritized", "SET", NULL, "oops", "{\"priority\":2}", "prioritized", "WRONGTYPE"},
        /* the priority counter: a string, INCRed */
        {"pc", "RPUSH", NULL, "oops", "{\"priority\":2}", "prioritized", "WRONGTYPE"},
        {"pc", "SET", NULL, "oops", "{\"priority\":2}", "prioritized", "does not hold an integer"},
        /* meta is read before the id counter is INCRed; its events length goes to XADD */
        {"meta", "RPUSH", NULL, "oops", NULL, "wait", "WRONGTYPE"},
        {"meta", "HSET", "opts.maxLenEvents", "many", NULL, "wait",
         "opts.maxLenEvents is not a whole number"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char qname[32];
        snprintf(qname, sizeof qname, "wt%zu", c);
        ferry_queue *q = qt_open(th_prefix(), qname, NULL);
        ferry_job_spec s[2] = {{"n", "{\"v\":1}", cases[c].opts},
                               {"n", "{\"v\":2}", cases[c].opts}};
        const char *ids[2] = {"evt-a", "evt-b"};
        char *got[2];
        freeReplyObject(qt_cmd("DEL %s", qt_key(q, "meta"))); /* (open wrote it) */
        if (cases[c].field)
            freeReplyObject(qt_cmd("%s %s %s %s", cases[c].bad_cmd, qt_key(q, cases[c].key),
                                   cases[c].field, cases[c].value));
        else
            freeReplyObject(
                qt_cmd("%s %s %s", cases[c].bad_cmd, qt_key(q, cases[c].key), cases[c].value));
        ferry_error e = {0};
        int rc = ferry__queue_add_bulk_ids(q, s, ids, 2, 1, got, &e);
        if (rc != FERRY_EREDIS || !strstr(e.message, cases[c].want))
            fail_msg("%s %s: rc %d (%s), want FERRY_EREDIS with %s", cases[c].bad_cmd, cases[c].key,
                     rc, e.message, cases[c].want);
        /* nothing written: no job hash, no event, the id counter untouched */
        assert_int_equal(qt_ival(qt_cmd("EXISTS %s %s %s", qt_key(q, "evt-a"), qt_key(q, "evt-b"),
                                        qt_key(q, "id"))),
                         0);
        if (strcmp(cases[c].key, "events"))
            assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "events"))), 0);
        /* fixed: the retry adds both, where they belong */
        freeReplyObject(qt_cmd("DEL %s", qt_key(q, cases[c].key)));
        add_ids_ok(q, s, ids, 2, 1, got);
        assert_string_equal(got[0], "evt-a");
        assert_string_equal(got[1], "evt-b");
        free(got[0]);
        free(got[1]);
        const char *in = !strcmp(cases[c].lands_in, "wait")
                             ? qt_lrange(qt_key(q, "wait"))
                             : qt_joined(qt_cmd("ZRANGE %s 0 -1", qt_key(q, cases[c].lands_in)));
        if (!strstr(in, "evt-a") || !strstr(in, "evt-b"))
            fail_msg("%s: %s holds '%s' after the retry", cases[c].key, cases[c].lands_in, in);
        assert_null(strstr(qt_events(q), "duplicated"));
        ferry_queue_close(q);
    }
}

/* ---- data checks and limits ----------------------------------------------------------- */

static void test_data_checks(void **state) {
    (void)state;
    ferry_queue *q = qt_open(th_prefix(), "data", NULL);
    const char *ids[2] = {"d1", "d2"};
    ferry_job_spec s[2] = {{"n", "{}", NULL}, {"n", "{\"a\":", NULL}};
    ferry_error e1 = {0}, e2 = {0};
    /* unchecked data is checked here, with the public call's message */
    assert_int_equal(ferry_queue_add_bulk(q, s, 2, NULL, &e1), FERRY_EINVAL);
    assert_int_equal(ferry__queue_add_bulk_ids(q, s, ids, 2, 0, NULL, &e2), FERRY_EINVAL);
    assert_string_equal(e2.message, e1.message);
    /* checked data still obeys the size limits */
    char *big = malloc(FERRY_DEFAULT_MAX_PAYLOAD + 16);
    memset(big, ' ', FERRY_DEFAULT_MAX_PAYLOAD + 15);
    memcpy(big, "{}", 2);
    big[FERRY_DEFAULT_MAX_PAYLOAD + 15] = 0;
    ferry_job_spec s2[2] = {{"n", "{}", NULL}, {"n", big, NULL}};
    assert_int_equal(ferry__queue_add_bulk_ids(q, s2, ids, 2, 1, NULL, &e2), FERRY_ETOOBIG);
    assert_non_null(strstr(e2.message, "job 1: job data is"));
    ferry_job_spec s3 = {"n", "{\"abc\":1}", "{\"sizeLimit\":5}"};
    assert_int_equal(ferry__queue_add_bulk_ids(q, &s3, ids, 1, 1, NULL, &e2), FERRY_ETOOBIG);
    assert_non_null(strstr(e2.message, "opts.sizeLimit 5"));
    free(big);
    assert_int_equal(qt_ival(qt_cmd("EXISTS %s", qt_key(q, "wait"))), 0);
    ferry_queue_close(q);
}

/* ---- the public add_bulk with repeated options -------------------------------------------- */

static void test_repeated_opts_bulk_same_as_single(void **state) {
    (void)state;
    const char *prefix = th_prefix();
    char pa[96], pb[96];
    snprintf(pa, sizeof pa, "%s-one", prefix);
    snprintf(pb, sizeof pb, "%s-bulk", prefix);
    ferry_queue *one = qt_open(pa, "q", DEFAULTS[2]), *bulk = qt_open(pb, "q", DEFAULTS[2]);
    /* the same pointer in runs, equal text at other addresses, NULL next to "" */
    char copy1[64], copy2[64];
    snprintf(copy1, sizeof copy1, "%s", OPTS[1]);
    snprintf(copy2, sizeof copy2, "%s", OPTS[1]);
    const char *texts[] = {OPTS[1],
                           OPTS[1],
                           copy1,
                           copy2,
                           NULL,
                           "",
                           NULL,
                           OPTS[4],
                           OPTS[4],
                           OPTS[3],
                           OPTS[1],
                           "{\"priority\":2}",
                           "{\"priority\":2}"};
    enum { N = sizeof texts / sizeof texts[0] };
    ferry_job_spec s[N];
    char data[N][32];
    int64_t ow[2] = {ferry__now_ms(), 0};
    for (size_t i = 0; i < N; i++) {
        snprintf(data[i], sizeof data[i], "{\"i\":%zu}", i);
        s[i] = (ferry_job_spec){"job", data[i], texts[i]};
        char want[24];
        snprintf(want, sizeof want, "%zu", i + 1);
        qt_add_expect(one, "job", data[i], texts[i], want);
    }
    ow[1] = ferry__now_ms();
    char *got[N];
    ferry_error e = {0};
    int64_t bw[2] = {ferry__now_ms(), 0};
    assert_int_equal(ferry_queue_add_bulk(bulk, s, N, got, &e), 0);
    bw[1] = ferry__now_ms();
    for (size_t i = 0; i < N; i++) {
        char want[24];
        snprintf(want, sizeof want, "%zu", i + 1);
        assert_string_equal(got[i], want);
        assert_same_job(one, bulk, want, texts[i], ow, bw);
        free(got[i]);
    }
    char want[4096];
    snprintf(want, sizeof want, "%s", qt_zrange(qt_key(one, "prioritized")));
    assert_string_equal(qt_zrange(qt_key(bulk, "prioritized")), want);
    /* a bad text repeated: the first job that has it is named, as before */
    ferry_job_spec b[3] = {{"n", NULL, "{}"}, {"n", NULL, "{\"delay\":-1}"}, {"n", NULL, NULL}};
    b[2].opts_json = b[1].opts_json;
    assert_int_equal(ferry_queue_add_bulk(bulk, b, 3, NULL, &e), FERRY_EINVAL);
    assert_string_equal(e.message,
                        "job 1: opts.delay: expected a non-negative integer up to 2^53-1, got -1");
    ferry_queue_close(one);
    ferry_queue_close(bulk);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids_store_what_opts_store),
        cmocka_unit_test(test_empty_and_absent_ids),
        cmocka_unit_test(test_bad_ids_same_errors),
        cmocka_unit_test(test_duplicates_and_double_ids),
        cmocka_unit_test(test_wrong_key_type_writes_nothing),
        cmocka_unit_test(test_data_checks),
        cmocka_unit_test(test_repeated_opts_bulk_same_as_single),
    };
    return cmocka_run_group_tests(tests, qt_setup, qt_teardown);
}
