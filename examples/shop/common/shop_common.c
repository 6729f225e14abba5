/* shop_common.c - the shop's schema check and small shared helpers. */
#include "shop_common.h"

#include "ex_util.h"

#include <ferry/outbox.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int shop_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap) {
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
                 schema ? schema : "public", version, ferry_outbox_schema_version(),
                 schema ? schema : "public");
        return -1;
    }
    char e[512];
    if (ex_pg_exec(c, "BEGIN", 0, NULL, e, sizeof e) < 0 ||
        ex_pg_exec(c, "SELECT pg_advisory_xact_lock(hashtext('ferry-examples.shop.schema'))", 0,
                   NULL, e, sizeof e) < 0) {
        snprintf(err, cap, "shop schema: %s", e);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    /* several statements: the simple query protocol */
    PGresult *r = PQexec(c, shop_sql_text);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        snprintf(err, cap, "shop schema (sql/shop.sql): %s: %s", ex_pg_sqlstate(r),
                 PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                     ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY)
                     : PQerrorMessage(c));
        PQclear(r);
        ex_pg_exec(c, "ROLLBACK", 0, NULL, e, sizeof e);
        return -1;
    }
    PQclear(r);
    if (ex_pg_exec(c, "COMMIT", 0, NULL, e, sizeof e) < 0) {
        snprintf(err, cap, "shop schema: %s", e);
        return -1;
    }
    return 0;
}

int shop_uuid_valid(const char *s) {
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
