/* migrate.c - ferry's tables: the built-in migration list (src/pg/sql/NNN_name.sql,
 * embedded by cmake/embed_sql.cmake) with the schema substituted, and applying the pending
 * ones under a per-schema advisory lock, recorded in <schema>.ferry_schema_migrations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/migrations.h"
#include "pg/pg.h"
#include "util/error.h"
#include "util/range.h"

#define DEFAULT_TIMEOUT_MS 60000
#define MAX_TIMEOUT_MS FERRY_MIGRATE_TIMEOUT_MAX_MS

int ferry_outbox_schema_version(void) {
    int v = 0;
    for (size_t i = 0; i < ferry__migrations_count; i++)
        if (ferry__migrations[i].sql && ferry__migrations[i].version > v)
            v = ferry__migrations[i].version;
    return v;
}

char *ferry__migration_sql(const ferry__migration *m, const char *qschema) {
    static const char token[] = "@SCHEMA@";
    const size_t tlen = sizeof token - 1, qlen = strlen(qschema);
    size_t n = 0, count = 0;
    for (const char *p = m->sql; (p = strstr(p, token)); p += tlen)
        count++;
    n = strlen(m->sql) + count * qlen + 1; /* qlen <= 129 > tlen, so this bounds the result */
    char *out = malloc(n);
    if (!out) return NULL;
    char *o = out;
    for (const char *p = m->sql;;) {
        const char *hit = strstr(p, token);
        size_t lit = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(o, p, lit);
        o += lit;
        if (!hit) break;
        memcpy(o, qschema, qlen);
        o += qlen;
        p = hit + tlen;
    }
    *o = '\0';
    return out;
}

int ferry_outbox_migrations_sql(const ferry_migrate_options *opts, ferry_error *err) {
    ferry_migration_fn fn = opts ? opts->fn : NULL;
    void *userdata = opts ? opts->userdata : NULL;
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(opts ? opts->schema : NULL, qs, err);
    if (rc) return rc;
    for (size_t i = 0; i < ferry__migrations_count; i++) {
        const ferry__migration *m = &ferry__migrations[i];
        if (!m->sql) continue;
        char *sql = ferry__migration_sql(m, qs);
        if (!sql) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        if (fn) fn(m->version, m->name, sql, userdata);
        free(sql);
    }
    return 0;
}

/* Versions already applied, as a bitmap over the built-in list (applied[i] for
 * ferry__migrations[i]). `res` has one int column. */
static void mark_applied(const PGresult *res, unsigned char *applied) {
    for (int r = 0; r < PQntuples(res); r++) {
        int v = atoi(PQgetvalue(res, r, 0));
        for (size_t i = 0; i < ferry__migrations_count; i++)
            if (ferry__migrations[i].version == v) applied[i] = 1;
    }
}

static int dry_run(PGconn *conn, const char *qs, const ferry_migrate_options *o, int *pending,
                   ferry_error *err) {
    unsigned char *applied = calloc(ferry__migrations_count + 1, 1);
    if (!applied) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    char table[FERRY__QSCHEMA_MAX + 40], sql[FERRY__QSCHEMA_MAX + 80];
    snprintf(table, sizeof table, "%s.ferry_schema_migrations", qs);
    const char *params[] = {table};
    PGresult *r = NULL;
    int rc = ferry__pg_run(conn, "migrate (dry run)", "SELECT to_regclass($1) IS NOT NULL", 1,
                           params, &r, err);
    if (rc == 0 && !strcmp(PQgetvalue(r, 0, 0), "t")) {
        PQclear(r);
        snprintf(sql, sizeof sql, "SELECT version FROM %s", table);
        rc = ferry__pg_run(conn, "migrate (dry run)", sql, 0, NULL, &r, err);
        if (rc == 0) mark_applied(r, applied);
    }
    PQclear(r);
    for (size_t i = 0; rc == 0 && i < ferry__migrations_count; i++) {
        const ferry__migration *m = &ferry__migrations[i];
        if (!m->sql || applied[i]) continue;
        char *text = ferry__migration_sql(m, qs);
        if (!text) {
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
            break;
        }
        if (o->fn) o->fn(m->version, m->name, text, o->userdata);
        free(text);
        (*pending)++;
    }
    free(applied);
    return rc;
}

/* Everything after BEGIN: lock, create the schema and version table, apply what is
 * missing. Any failure leaves the transaction for the caller to roll back. */
static int apply_locked(PGconn *conn, const char *schema, const char *qs,
                        const ferry_migrate_options *o, int timeout_ms, int *applied_count,
                        ferry_error *err) {
    char sql[FERRY__QSCHEMA_MAX + 256];
    snprintf(sql, sizeof sql,
             "SET LOCAL lock_timeout = %d; SET LOCAL statement_timeout = %d; "
             "SET LOCAL client_min_messages = warning",
             timeout_ms, timeout_ms);
    int rc = ferry__pg_run(conn, "migrate: set timeouts", sql, 0, NULL, NULL, err);
    const char *p1[] = {schema};
    /* One lock per schema: replicas starting together queue here; the first applies. */
    if (!rc)
        rc = ferry__pg_run(conn, "migrate: waiting for the migration lock",
                           "SELECT pg_advisory_xact_lock(" FERRY__LOCK_CLASS_STR ", hashtext($1))",
                           1, p1, NULL, err);
    PGresult *r = NULL;
    if (!rc)
        rc = ferry__pg_run(conn, "migrate: schema lookup",
                           "SELECT 1 FROM pg_namespace WHERE nspname = $1", 1, p1, &r, err);
    if (!rc && PQntuples(r) == 0) {
        snprintf(sql, sizeof sql, "CREATE SCHEMA %s", qs);
        rc = ferry__pg_run(conn, "migrate: create schema", sql, 0, NULL, NULL, err);
    }
    PQclear(r);
    r = NULL;
    if (!rc) {
        snprintf(sql, sizeof sql,
                 "CREATE TABLE IF NOT EXISTS %s.ferry_schema_migrations (version int PRIMARY KEY, "
                 "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                 qs);
        rc = ferry__pg_run(conn, "migrate: version table", sql, 0, NULL, NULL, err);
    }
    unsigned char *applied = calloc(ferry__migrations_count + 1, 1);
    if (!applied && !rc) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    if (!rc) {
        snprintf(sql, sizeof sql, "SELECT version FROM %s.ferry_schema_migrations", qs);
        rc = ferry__pg_run(conn, "migrate: read versions", sql, 0, NULL, &r, err);
        if (!rc) mark_applied(r, applied);
        PQclear(r);
    }
    char insert[FERRY__QSCHEMA_MAX + 96];
    snprintf(insert, sizeof insert,
             "INSERT INTO %s.ferry_schema_migrations (version, name) VALUES ($1, $2)", qs);
    for (size_t i = 0; !rc && i < ferry__migrations_count; i++) {
        const ferry__migration *m = &ferry__migrations[i];
        if (!m->sql || applied[i]) continue;
        char *text = ferry__migration_sql(m, qs);
        if (!text) {
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
            break;
        }
        if (o->fn) o->fn(m->version, m->name, text, o->userdata);
        char what[160], ver[16];
        snprintf(what, sizeof what, "migration %03d_%s", m->version, m->name);
        rc = ferry__pg_run(conn, what, text, 0, NULL, NULL, err);
        free(text);
        snprintf(ver, sizeof ver, "%d", m->version);
        const char *p2[] = {ver, m->name};
        if (!rc) rc = ferry__pg_run(conn, what, insert, 2, p2, NULL, err);
        if (!rc) (*applied_count)++;
    }
    free(applied);
    return rc;
}

void ferry_migrate_options_init(ferry_migrate_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_outbox_migrate(PGconn *conn, const ferry_migrate_options *opts, int *applied,
                         ferry_error *err) {
    ferry_migrate_options o = {0};
    if (opts) o = *opts;
    if (applied) *applied = 0;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "ferry_outbox_migrate: NULL connection");
    if (ferry__check_range(err, "migrate", "timeout_ms", o.timeout_ms, 0, MAX_TIMEOUT_MS))
        return FERRY_EINVAL;
    int timeout_ms = o.timeout_ms ? o.timeout_ms : DEFAULT_TIMEOUT_MS;
    const char *schema = o.schema ? o.schema : FERRY_OUTBOX_DEFAULT_SCHEMA;
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(schema, qs, err);
    if (rc) return rc;
    if (PQstatus(conn) != CONNECTION_OK)
        return ferry__err(err, FERRY_EIO, "migrate: connection is not open");
    if (PQtransactionStatus(conn) != PQTRANS_IDLE)
        return ferry__err(err, FERRY_ESTATE, "migrate: the connection has a transaction open");
    int count = 0;
    if (o.dry_run) {
        rc = dry_run(conn, qs, &o, &count, err);
    } else {
        /* READ COMMITTED whatever default_transaction_isolation says: apply_locked reads
         * the catalog and the version table after the lock is granted, and only a
         * statement snapshot taken then sees what the replica before us committed (under
         * REPEATABLE READ the snapshot of the lock's SELECT predates that commit, and the
         * waiter would apply everything again: "schema already exists"). */
        rc = ferry__pg_run(conn, "migrate: begin", "BEGIN ISOLATION LEVEL READ COMMITTED", 0, NULL,
                           NULL, err);
        if (!rc) {
            rc = apply_locked(conn, schema, qs, &o, timeout_ms, &count, err);
            if (!rc) rc = ferry__pg_run(conn, "migrate: commit", "COMMIT", 0, NULL, NULL, err);
            if (rc) {
                count = 0;
                PQclear(PQexec(conn, "ROLLBACK"));
            }
        }
    }
    if (applied) *applied = count;
    return rc;
}

int ferry__schema_version_get(PGconn *conn, const char *qs, int *version, ferry_error *err) {
    char table[FERRY__QSCHEMA_MAX + 40], sql[FERRY__QSCHEMA_MAX + 96];
    snprintf(table, sizeof table, "%s.ferry_schema_migrations", qs);
    const char *params[] = {table};
    PGresult *r = NULL;
    *version = 0;
    int rc = ferry__pg_run(conn, "schema version", "SELECT to_regclass($1) IS NOT NULL", 1, params,
                           &r, err);
    if (rc) return rc;
    int exists = !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    if (!exists) return 0;
    snprintf(sql, sizeof sql, "SELECT coalesce(max(version), 0) FROM %s", table);
    rc = ferry__pg_run(conn, "schema version", sql, 0, NULL, &r, err);
    if (rc) return rc;
    *version = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}
