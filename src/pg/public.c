/* public.c - the PostgreSQL helpers a tool that connects for a person needs, as public
 * calls (ferry/outbox.h): the applied schema version, a database URL shown or masked. */
#include "ferry/outbox.h"
#include "pg/migrations.h"
#include "pg/pg.h"
#include "util/error.h"

int ferry_outbox_schema_applied(PGconn *conn, const ferry_outbox_options *opts, int *version,
                                ferry_error *err) {
    if (!version)
        return ferry__err(err, FERRY_EINVAL, "ferry_outbox_schema_applied: version is NULL");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(opts ? opts->schema : NULL, qs, err);
    return rc ? rc : ferry__schema_version_get(conn, qs, version, err);
}

const char *ferry_outbox_database_url_display(const char *url, char *out, size_t cap) {
    return ferry__pg_url_display(url, out, cap);
}

void ferry_outbox_database_url_mask(const char *url, char *msg) {
    ferry__pg_url_mask(url, msg);
}
