/* taskflow_common.c - taskflow's schema check and its UUID predicate. */
#include "taskflow_common.h"

#include "ex_util.h"

#include <ferry/outbox.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int taskflow_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap) {
    if (!schema) schema = TASKFLOW_SCHEMA;
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = schema;
    ferry_error fe = {0};
    int version = 0;
    if (ferry_outbox_schema_applied(c, &oo, &version, &fe) != 0) {
        snprintf(err, cap, "cannot read ferry's schema version: %s", fe.message);
        return -1;
    }
    if (version < ferry_outbox_schema_version()) {
        snprintf(err, cap,
                 "schema '%s' has ferry's tables at version %d, this build needs %d: run "
                 "`ferry migrate --schema %s` (with the same database URL) first",
                 schema, version, ferry_outbox_schema_version(), schema);
        return -1;
    }
    char e[512];
    if (ex_pg_exec(c, "BEGIN", 0, NULL, e, sizeof e) < 0 ||
        ex_pg_exec(c, "SET LOCAL client_min_messages = warning", 0, NULL, e, sizeof e) < 0 ||
        ex_pg_exec(c, "SELECT pg_advisory_xact_lock(hashtext('ferry-examples.taskflow.schema'))", 0,
                   NULL, e, sizeof e) < 0) {
        snprintf(err, cap, "taskflow schema: %s", e);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    /* several statements: the simple query protocol; unqualified names go to the schema
     * (ex_pg_connect set search_path) */
    PGresult *r = PQexec(c, taskflow_sql_text);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        snprintf(err, cap, "taskflow schema (sql/taskflow.sql): %s: %s", ex_pg_sqlstate(r),
                 msg ? msg : PQerrorMessage(c));
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    PQclear(r);
    if (ex_pg_exec(c, "COMMIT", 0, NULL, e, sizeof e) < 0) {
        snprintf(err, cap, "taskflow schema: %s", e);
        return -1;
    }
    return 0;
}

int taskflow_uuid_valid(const char *s) {
    if (!s || strlen(s) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}
