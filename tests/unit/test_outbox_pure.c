/* test_outbox_pure.c - the outbox's pure parts: UUIDv7 layout and ordering, traceparent and
 * trace id checks, the job envelope encoder, the embedded migration list with schema
 * quoting, PostgreSQL text[] literals, database URLs shown, checked and masked, the claim limit,
 * and what jsonb refuses that JSON allows. No servers. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ferry/outbox.h"
#include "envelope/envelope.h"
#include "pg/migrations.h"
#include "pg/pg.h"
#include "outbox/relay/relay_internal.h"
#include "envelope/trace.h"
#include "util/uuid7.h"
#include "util/json_text.h"
#include "worker/worker_internal.h"

/* ---- UUIDv7 ---------------------------------------------------------------------------- */

static void test_uuid7_rfc_vector(void **state) {
    (void)state;
    /* RFC 9562 appendix A.6: 017f22e2-79b0-7cc3-98c4-dc0c0c07398f */
    const uint8_t rnd[8] = {0x18, 0xc4, 0xdc, 0x0c, 0x0c, 0x07, 0x39, 0x8f};
    char out[37];
    ferry__uuid7_format(0x017F22E279B0ULL, 0xCC3, rnd, out);
    assert_string_equal(out, "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    /* variant bits are forced whatever the random byte */
    const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    ferry__uuid7_format(0, 0xfff, ones, out);
    assert_string_equal(out, "00000000-0000-7fff-bfff-ffffffffffff");
}

static void test_uuid7_counter(void **state) {
    (void)state;
    uint64_t ms = 0;
    uint16_t c = 0;
    ferry__uuid7_next(1000, 0xffff, &ms, &c);
    assert_int_equal(ms, 1000);
    assert_int_equal(c, 0x7ff); /* fresh millisecond: seed & 0x7ff */
    ferry__uuid7_next(1000, 5, &ms, &c);
    assert_int_equal(ms, 1000);
    assert_int_equal(c, 0x800);
    ferry__uuid7_next(999, 5, &ms, &c); /* clock went back: keep counting */
    assert_int_equal(ms, 1000);
    assert_int_equal(c, 0x801);
    c = 0xfff;
    ferry__uuid7_next(1000, 3, &ms, &c); /* counter full: borrow the next millisecond */
    assert_int_equal(ms, 1001);
    assert_int_equal(c, 3);
    ferry__uuid7_next(1001, 9, &ms, &c);
    assert_int_equal(c, 4);
    ferry__uuid7_next(5000, 9, &ms, &c);
    assert_int_equal(ms, 5000);
    assert_int_equal(c, 9);
}

static void test_uuid7_generated_sort_by_time(void **state) {
    (void)state;
    char prev[37] = "", cur[37];
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(ferry_uuid7(cur), 0);
        assert_true(ferry__uuid_text_valid(cur, strlen(cur)));
        assert_int_equal(cur[14], '7');
        assert_non_null(strchr("89ab", cur[19]));
        if (i) assert_true(strcmp(prev, cur) < 0);
        memcpy(prev, cur, sizeof cur);
    }
}

static void test_uuid_text_valid(void **state) {
    (void)state;
    assert_true(ferry__uuid_text_valid("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", 36));
    assert_false(ferry__uuid_text_valid("017f22e2-79b0-7cc3-98c4-dc0c0c07398", 35));
    assert_false(ferry__uuid_text_valid("017f22e2x79b0-7cc3-98c4-dc0c0c07398f", 36));
    assert_false(ferry__uuid_text_valid("017f22e2-79b0-7cc3-98c4-dc0c0c07398g", 36));
    assert_false(ferry__uuid_text_valid(NULL, 36));
}

/* ---- trace ids ------------------------------------------------------------------------- */

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static void test_traceparent(void **state) {
    (void)state;
    ferry__traceparent tp;
    ferry_error e = {0};
    assert_int_equal(ferry__traceparent_parse(TP, strlen(TP), &tp, &e), 0);
    assert_string_equal(tp.version, "00");
    assert_string_equal(tp.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_string_equal(tp.parent_id, "00f067aa0ba902b7");
    assert_string_equal(tp.flags, "01");
    static const char *const bad[] = {
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   /* upper case */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   /* zero parent id */
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   /* version ff */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", /* v00 is exactly 55 */
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",    /* short trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",   /* separator */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",   /* flags */
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  /* future: needs '-' */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(ferry__traceparent_parse(bad[i], strlen(bad[i]), NULL, &e), FERRY_EINVAL);
        assert_non_null(strstr(e.message, "traceparent"));
    }
    const char *future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
    assert_int_equal(ferry__traceparent_parse(future, strlen(future), NULL, &e), 0);
}

static void test_trace_id_check(void **state) {
    (void)state;
    ferry_error e = {0};
    assert_int_equal(ferry__trace_id_check(NULL, &e), 0);
    assert_int_equal(ferry__trace_id_check(TP, &e), 0);
    assert_int_equal(ferry__trace_id_check("req-7f3a/api:42", &e), 0);
    assert_int_equal(ferry__trace_id_check("4bf92f3577b34da6a3ce929d0e0e4736", &e), 0);
    assert_int_equal(ferry__trace_id_check("", &e), FERRY_EINVAL);
    assert_int_equal(ferry__trace_id_check("has space", &e), FERRY_EINVAL);
    assert_string_equal(e.message, "trace_id: byte 3 is not printable ASCII");
    assert_int_equal(ferry__trace_id_check("caf\xc3\xa9", &e), FERRY_EINVAL);
    assert_int_equal(ferry__trace_id_check("ab-cd", &e),
                     FERRY_EINVAL); /* looks like a traceparent */
    assert_non_null(strstr(e.message, "traceparent"));
    char big[200];
    memset(big, 'x', 129);
    big[129] = 0;
    assert_int_equal(ferry__trace_id_check(big, &e), FERRY_EINVAL);
    big[128] = 0;
    assert_int_equal(ferry__trace_id_check(big, &e), 0);
}

/* One trace id rule: an id the outbox accepts (here 128 bytes holding '=', '"' and '\\')
 * goes into the envelope, is taken from the job's data by the worker and shows, escaped, in
 * the job's log line (text and JSON). */
static void test_trace_id_reaches_job_log(void **state) {
    (void)state;
    char id[FERRY_OUTBOX_TRACE_ID_MAX + 1];
    memset(id, 'x', FERRY_OUTBOX_TRACE_ID_MAX);
    memcpy(id, "req=7\"a\\b", 9);
    id[FERRY_OUTBOX_TRACE_ID_MAX] = 0;
    ferry_error e = {0};
    assert_int_equal(ferry__trace_id_check(id, &e), 0); /* what ferry_outbox_append checks */
    assert_true(ferry__trace_id_valid(id, strlen(id)));

    const char *ev = "0190b6a2-7c00-7000-8000-000000000001", *payload = "{\"n\":1}";
    size_t cap = ferry__envelope_size(ev, strlen(ev), id, strlen(id), strlen(payload)) + 1;
    char *data = malloc(cap);
    assert_non_null(data);
    assert_true(ferry__envelope_write(data, cap, ev, strlen(ev), id, strlen(id), payload,
                                      strlen(payload)) > 0);
    ferry__envelope_view view;
    assert_true(ferry__envelope_parse(data, strlen(data), 512, &view));
    const char *got = view.trace_id;
    assert_string_equal(got, id);
    assert_string_equal(view.event_id, ev);

    ferry_job_log rec = {.queue = "q", .name = "j", .id = "1", .attempt = 1, .trace_id = got,
                         .outcome = "completed"};
    char line[1024], want[512];
    ferry_job_log_format(&rec, 0, line, sizeof line);
    snprintf(want, sizeof want, " trace=\"req=7\\\"a\\\\b%s\" outcome=", id + 9);
    assert_non_null(strstr(line, want));
    ferry_job_log_format(&rec, 1, line, sizeof line);
    snprintf(want, sizeof want, "\"trace\":\"req=7\\\"a\\\\b%s\"", id + 9);
    assert_non_null(strstr(line, want));
    free(data);

    /* longer than the outbox takes: the log falls back to job-<queue>-<id> like before */
    char big[FERRY_OUTBOX_TRACE_ID_MAX + 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    assert_false(ferry__trace_id_valid(big, strlen(big)));
    assert_false(ferry__trace_id_valid("a b", 3));
    assert_false(ferry__trace_id_valid("", 0));
}

/* ---- envelope -------------------------------------------------------------------------- */

static char *envelope(const char *id, const char *trace, const char *payload) {
    size_t n =
        ferry__envelope_size(id, strlen(id), trace, trace ? strlen(trace) : 0, strlen(payload));
    char *out = malloc(n + 1);
    size_t len = ferry__envelope_write(out, n + 1, id, strlen(id), trace, trace ? strlen(trace) : 0,
                                       payload, strlen(payload));
    assert_true(len > 0 && len <= n);
    assert_int_equal(strlen(out), len);
    return out;
}

static void test_envelope_shape(void **state) {
    (void)state;
    char *s = envelope("e1", "t1", "{\"orderId\": 7, \"total\": 250000}");
    assert_string_equal(
        s, "{\"eventId\":\"e1\",\"traceId\":\"t1\",\"payload\":{\"orderId\":7,\"total\":250000}}");
    free(s);
    s = envelope("e1", NULL, "{}");
    assert_string_equal(s, "{\"eventId\":\"e1\",\"payload\":{}}");
    free(s);
    /* blanks inside strings stay, escapes are kept intact */
    s = envelope("e", NULL,
                 "{\"a\": \"x y\", \"b\": [1, \"say \\\"hi, there\\\"\", {\"c\": null}]}");
    assert_string_equal(s, "{\"eventId\":\"e\",\"payload\":{\"a\":\"x y\",\"b\":[1,\"say \\\"hi, "
                           "there\\\"\",{\"c\":null}]}}");
    json_error_t je;
    json_t *v = json_loads(s, 0, &je);
    assert_non_null(v);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(json_object_get(v, "payload"), "b"), 1)),
        "say \"hi, there\"");
    json_decref(v);
    free(s);
}

static void test_envelope_escapes_trace(void **state) {
    (void)state;
    char *s = envelope("id", "a\"b\\c\n\x01", "1");
    assert_string_equal(s,
                        "{\"eventId\":\"id\",\"traceId\":\"a\\\"b\\\\c\\n\\u0001\",\"payload\":1}");
    json_t *v = json_loads(s, 0, NULL);
    assert_non_null(v);
    assert_string_equal(json_string_value(json_object_get(v, "traceId")), "a\"b\\c\n\x01");
    json_decref(v);
    free(s);
    char small[8];
    assert_int_equal(ferry__envelope_write(small, sizeof small, "id", 2, NULL, 0, "1", 1), 0);
}

/* ---- migrations and quoting ------------------------------------------------------------ */

typedef struct seen {
    int n, last_version;
    int has_token, has_quoted;
} seen;

static void on_migration(int version, const char *name, const char *sql, void *ud) {
    seen *s = ud;
    assert_true(version > s->last_version);
    assert_non_null(name);
    s->last_version = version;
    s->n++;
    if (strstr(sql, "@SCHEMA@")) s->has_token = 1;
    if (strstr(sql, "\"we\"\"ird\".outbox_events")) s->has_quoted = 1;
}

static void test_migration_list(void **state) {
    (void)state;
    seen s = {0};
    ferry_error e = {0};
    ferry_migrate_options mo = {.schema = "we\"ird", .fn = on_migration, .userdata = &s};
    assert_int_equal(ferry_outbox_migrations_sql(&mo, &e), 0);
    assert_int_equal(s.n, (int)ferry__migrations_count);
    assert_int_equal(s.last_version, ferry_outbox_schema_version());
    assert_true(ferry_outbox_schema_version() >= 5);
    assert_false(s.has_token);
    assert_true(s.has_quoted);
    mo.schema = "";
    assert_int_equal(ferry_outbox_migrations_sql(&mo, &e), FERRY_EINVAL);
    char big[80];
    memset(big, 's', 64);
    big[64] = 0;
    mo.schema = big;
    assert_int_equal(ferry_outbox_migrations_sql(&mo, &e), FERRY_EINVAL);
    /* an application-made table, column for column */
    const char *sql1 = NULL;
    for (size_t i = 0; i < ferry__migrations_count; i++)
        if (ferry__migrations[i].version == 1) sql1 = ferry__migrations[i].sql;
    assert_non_null(sql1);
    static const char *const cols[] = {"id            uuid        PRIMARY KEY",
                                       "topic         text",
                                       "aggregate_id  uuid",
                                       "payload       jsonb",
                                       "trace_id      text",
                                       "created_at    timestamptz NOT NULL DEFAULT now()",
                                       "published_at  timestamptz",
                                       "attempts int NOT NULL DEFAULT 0",
                                       "last_error text",
                                       "WHERE published_at IS NULL"};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        assert_non_null(strstr(sql1, cols[i]));
}

static void test_quote_schema(void **state) {
    (void)state;
    char q[FERRY__QSCHEMA_MAX];
    ferry_error e = {0};
    assert_int_equal(ferry__pg_quote_schema(NULL, q, &e), 0);
    assert_string_equal(q, "\"public\"");
    assert_int_equal(ferry__pg_quote_schema("a\"\"b", q, &e), 0);
    assert_string_equal(q, "\"a\"\"\"\"b\"");
    char worst[64];
    memset(worst, '"', 63);
    worst[63] = 0;
    assert_int_equal(ferry__pg_quote_schema(worst, q, &e), 0);
    assert_int_equal(strlen(q), 128);
    assert_int_equal(ferry__pg_quote_schema("\xff", q, &e), FERRY_EINVAL);

    ferry__migration m = {9, "x", "A @SCHEMA@.t @SCHEMA@@SCHEMA@ B"};
    char *sql = ferry__migration_sql(&m, "\"s\"");
    assert_string_equal(sql, "A \"s\".t \"s\"\"s\" B");
    free(sql);
}

static void test_text_array(void **state) {
    (void)state;
    const char *items[] = {"a", "b\"c", "d\\e", "x,y {z}"};
    char *a = ferry__pg_text_array(items, 4);
    assert_string_equal(a, "{\"a\",\"b\\\"c\",\"d\\\\e\",\"x,y {z}\"}");
    free(a);
    a = ferry__pg_text_array(NULL, 0);
    assert_string_equal(a, "{}");
    free(a);
}

/* Database URLs: the shown form comes from libpq's parse (never the password, whatever its
 * characters); the check refuses what libpq would misread, in words that quote nothing; the
 * mask takes the password out of texts libpq or the server wrote. */
static void test_database_url_display_check_mask(void **state) {
    (void)state;
    char out[256];
    const struct {
        const char *url, *shown;
    } shown[] = {
        {"postgresql://app:Hq8Lp?Vn3Wd@db.example:5433/orders", "app@db.example:5433/orders"},
        {"postgresql://app:Mz5Rt#Yb2Kc@db/app?sslmode=require", "app@db/app"},
        {"postgres://db", "db"},
        {"postgresql:///app", "(default host)/app"},
        {"host=10.0.0.1 port=5432 dbname=x user=u password='quoted secret'", "u@10.0.0.1:5432/x"},
        {"hostaddr=10.0.0.2 password=S3CRET", "10.0.0.2"},
        {"dbname='postgresql://u:Zq9Wx@h/d'", "(default host)/(conninfo)"},
        {"host='a\nb'", "a\\nb"},
        {"", "(libpq defaults)"},
        {"password=S3CR ETXpart", "(not parsable)"},
    };
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        ferry__pg_url_display(shown[i].url, out, sizeof out);
        if (strcmp(out, shown[i].shown))
            fail_msg("display %zu: '%s', want '%s'", i, out, shown[i].shown);
    }
    ferry__pg_url_display(NULL, out, sizeof out);
    assert_string_equal(out, "(libpq defaults)");

    const struct {
        const char *url, *want; /* want NULL: accepted */
    } check[] = {
        {"postgresql://app:Pr0dPassw0rd%@db/app", "'%' not followed by two hex digits"},
        {"postgresql://app:Ab+c/De9Fg=@127.0.0.1:5432/x", "an '@' after a '/'"},
        {"postgresql://app:Gf4Ds@Jk8Lq@db/app", "a second '@'"},
        {"postgresql://app:Vb7Nm4Qw/app", "the port is not a number"},
        {"postgresql://db/app?Qz8Xc=1", "an unknown query parameter"},
        {"postgresql://db/app?Qz8Xc", "not key=value"},
        {"postgresql://[::1/app", "IPv6"},
        {"host=db password=S3CR ETXpart", "a word without '='"},
        {"host=db password='S3CRETpart", "without its closing quote"},
        {"host=db port=Kx7Qw9", "the port is not a number"},
        {"postgresql://app:Ab%2Fc%40d%25@db:5432,db2:5433/app", NULL},
        {"postgresql://app:Hq8Lp?Vn3Wd@db/app", NULL},
        {"host=db password='quoted secret'", NULL},
    };
    for (size_t i = 0; i < sizeof check / sizeof check[0]; i++) {
        ferry_error e = {0};
        int rc = ferry_outbox_database_url_check(check[i].url, &e);
        if (!check[i].want) {
            if (rc) fail_msg("check %zu: refused: %s", i, e.message);
            continue;
        }
        if (rc != FERRY_EINVAL || !strstr(e.message, check[i].want))
            fail_msg("check %zu: rc %d '%s', want '%s'", i, rc, e.message, check[i].want);
        /* no piece of the input is quoted */
        const char *pieces[] = {"Pr0dPassw0rd", "De9Fg",   "Jk8Lq",      "Vb7Nm4Qw",
                                "Qz8Xc",        "ETXpart", "S3CRETpart", "Kx7Qw9"};
        for (size_t j = 0; j < sizeof pieces / sizeof pieces[0]; j++)
            if (strstr(e.message, pieces[j])) fail_msg("check %zu quotes: %s", i, e.message);
    }

    char msg[256];
    snprintf(msg, sizeof msg, "x Ab/c@Qr7Ts9 y Ab%%2Fc%%40Qr7Ts9 z");
    ferry__pg_url_mask("postgresql://u:Ab%2Fc%40Qr7Ts9@h/d", msg);
    assert_string_equal(msg, "x *** y *** z");
    snprintf(msg, sizeof msg, "'quoted secret''quoted secret'");
    ferry__pg_url_mask("host=h password='quoted secret'", msg);
    assert_string_equal(msg, "'***''***'");
    snprintf(msg, sizeof msg, "ab is short");
    ferry__pg_url_mask("host=h password=ab", msg);
    assert_string_equal(msg, "ab is short");
    ferry__pg_url_mask(NULL, msg);
    ferry__pg_url_mask("", msg);
    assert_string_equal(msg, "ab is short");
    /* a password that is the mask itself, or that the mask completes again: it returns */
    snprintf(msg, sizeof msg, "auth failed for password *** and ***");
    ferry__pg_url_mask("postgresql://u:***@h/db", msg);
    assert_string_equal(msg, "auth failed for password *** and ***");
    snprintf(msg, sizeof msg, "pw **x**x");
    ferry__pg_url_mask("host=h password=**x", msg);
    assert_string_equal(msg, "pw ******");
}

/* The relay's claim limit: big payloads that the byte budget cuts shrink it to what fitted
 * plus a quarter (fewer rows locked and converted in vain); full batches grow it back,
 * doubling, up to --batch; a batch that ran the queue dry leaves it alone. */
static void test_claim_limit_adapts(void **state) {
    (void)state;
    /* 1000 locked, 32 fitted the budget: next claim locks 32 + 8 + 1 */
    assert_int_equal(ferry__relay_next_claim_limit(1000, 1000, 32, 1000, 1, 0), 41);
    /* one row over the budget moves alone: lock 2 next time */
    assert_int_equal(ferry__relay_next_claim_limit(1000, 1000, 1, 1000, 1, 0), 2);
    /* full batches double it back, capped at --batch */
    int limit = 41, steps = 0;
    int want[] = {82, 164, 328, 656, 1000, 1000};
    for (; steps < 6; steps++) {
        limit = ferry__relay_next_claim_limit(limit, 1000, limit, limit, 0, 0);
        assert_int_equal(limit, want[steps]);
    }
    /* a partial batch (the queue ran dry) changes nothing; nor does an empty one */
    assert_int_equal(ferry__relay_next_claim_limit(164, 1000, 50, 164, 0, 0), 164);
    assert_int_equal(ferry__relay_next_claim_limit(164, 1000, 0, 164, 0, 0), 164);
    /* what fitted plus a quarter never goes past --batch */
    assert_int_equal(ferry__relay_next_claim_limit(1000, 1000, 999, 1000, 1, 0), 1000);
    /* a claim that ran into statement_timeout: half as many rows, down to one */
    int narrowing[] = {50, 25, 12, 6, 3, 1, 1};
    limit = 100;
    for (size_t i = 0; i < sizeof narrowing / sizeof narrowing[0]; i++) {
        limit = ferry__relay_next_claim_limit(limit, 100, 0, limit, 0, 1);
        assert_int_equal(limit, narrowing[i]);
    }
    /* halving the claim that timed out never raises a limit already lowered meanwhile
     * (the other lane's claim), and n / left_behind do not matter then */
    assert_int_equal(ferry__relay_next_claim_limit(10, 100, 0, 100, 0, 1), 10);
    assert_int_equal(ferry__relay_next_claim_limit(100, 100, 100, 100, 1, 1), 50);
    assert_int_equal(ferry__relay_next_claim_limit(1, 100, 0, 1, 0, 1), 1);
    /* after narrowing to one row, full batches double it back */
    assert_int_equal(ferry__relay_next_claim_limit(1, 100, 1, 1, 0, 0), 2);
    /* no overflow at the extremes */
    assert_int_equal(
        ferry__relay_next_claim_limit(2000000000, 2147483647, 2000000000, 2000000000, 0, 0),
        2147483647);
}

/* ---- what jsonb refuses ---------------------------------------------------------------- */

/* Every case was checked against PostgreSQL 15's jsonb input (`SELECT '<text>'::jsonb`); the
 * integration test test_outbox_inputs.c compares with the server it runs on. */
static void test_jsonb_check(void **state) {
    (void)state;
    const char *good[] = {
        "{}",
        "[]",
        "0",
        "-0",
        "1.5",
        "1E+5",
        "-1e-5",
        "\"\"",
        "true",
        "[true,false,null]",
        "\"\\ud800\\udc00\"",
        "\"\\uDBFF\\uDFFF\"",
        "\"\\uFFFF\\uFFFE\\u0001\"",
        "{\"\\ud83d\\ude00\":\"\\\\u0000\"}", /* a key with a pair; "\\u0000" is not an escape */
        "1e131071",
        "9.999e131071",
        "-1e131071",
        "0.0001e131075",
        "1e-16383",
        "0e-16383",
        "12345678901234567890e-16383",
        "0e1073741822",
        "0e-5",
        "0.000e5",
        "100e-16381",
        "[1e10, \"e\", 2E-3]",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ferryx_json_check_error e = {0, NULL};
        if (ferryx_json_check(good[i], strlen(good[i]), 512, &e))
            fail_msg("not JSON: %s (%s)", good[i], e.reason);
        if (ferryx_jsonb_check(good[i], strlen(good[i]), &e))
            fail_msg("refused %s: %s", good[i], e.reason);
    }
    struct {
        const char *text;
        size_t offset;
        const char *reason;
    } bad[] = {
        {"\"\\u0000\"", 1, "\\u0000"},
        {"[\"a\\u0000b\"]", 3, "\\u0000"},
        {"\"\\ud800\"", 1, "not followed by"},
        {"\"\\ud800x\"", 1, "not followed by"},
        {"\"\\ud800\\u0041\"", 1, "not followed by"},
        {"\"\\ud800\\ud800\"", 1, "not followed by"},
        {"\"\\ud800\\n\"", 1, "not followed by"},
        {"\"\\udc00\"", 1, "without"},
        {"{\"\\udfff\":1}", 2, "without"},
        {"\"\\udbff\\udfff\\ud800\"", 13, "not followed by"},
        {"1e200000", 0, "10^131072"},
        {"[0, -1e131072]", 4, "10^131072"},
        {"10e131071", 0, "10^131072"},
        {"0.0001e131076", 0, "10^131072"},
        {"1e-200000", 0, "16383"},
        {"1e-16384", 0, "16383"},
        {"0e-16384", 0, "16383"},
        {"1.5e-16383", 0, "16383"},
        {"100e-16385", 0, "16383"},
        {"0.0e-999999", 0, "16383"},
        {"0e1073741823", 0, "exponent"},
        {"0e-99999999999999999999", 0, "exponent"},
        {"1e1000000000000", 0, "exponent"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ferryx_json_check_error e = {0, NULL};
        size_t n = strlen(bad[i].text);
        if (ferryx_json_check(bad[i].text, n, 512, &e))
            fail_msg("not JSON: %s (%s)", bad[i].text, e.reason);
        if (!ferryx_jsonb_check(bad[i].text, n, &e)) fail_msg("accepted %s", bad[i].text);
        if (e.offset != bad[i].offset || !strstr(e.reason, bad[i].reason))
            fail_msg("%s: at %zu: %s (expected %zu, '%s')", bad[i].text, e.offset, e.reason,
                     bad[i].offset, bad[i].reason);
    }
    /* a number of 16383 decimals fits; one more does not */
    char *big = malloc(16400);
    assert_non_null(big);
    memcpy(big, "0.", 2);
    memset(big + 2, '7', 16383);
    big[16385] = '\0';
    assert_int_equal(ferryx_jsonb_check(big, strlen(big), NULL), 0);
    big[16385] = '7';
    big[16386] = '\0';
    assert_int_equal(ferryx_jsonb_check(big, strlen(big), NULL), -1);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid7_rfc_vector),
        cmocka_unit_test(test_uuid7_counter),
        cmocka_unit_test(test_uuid7_generated_sort_by_time),
        cmocka_unit_test(test_uuid_text_valid),
        cmocka_unit_test(test_traceparent),
        cmocka_unit_test(test_trace_id_check),
        cmocka_unit_test(test_envelope_shape),
        cmocka_unit_test(test_envelope_escapes_trace),
        cmocka_unit_test(test_migration_list),
        cmocka_unit_test(test_quote_schema),
        cmocka_unit_test(test_text_array),
        cmocka_unit_test(test_database_url_display_check_mask),
        cmocka_unit_test(test_claim_limit_adapts),
        cmocka_unit_test(test_jsonb_check),
        cmocka_unit_test(test_trace_id_reaches_job_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
