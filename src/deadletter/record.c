/* record.c - one final failure into dead_letters in the caller's own code
 * (ferry_dlq_record); the parameters and the statement are params.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "util/error.h"

void ferry_dlq_options_init(ferry_dlq_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_dlq_record(PGconn *conn, const ferry_dlq_options *o, const ferry_dlq_failure *f,
                     int *inserted, ferry_error *err) {
    if (inserted) *inserted = 0;
    if (!conn) return ferry__err(err, FERRY_EINVAL, "dead letter: conn is NULL");
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(o ? o->schema : NULL, qs, err);
    if (rc) return rc;
    ferry__dlq_params p;
    rc = ferry__dlq_params_fill(&p, f, "api", err);
    if (rc) return rc;
    char sql[FERRY__DLQ_INSERT_SQL_MAX];
    ferry__dlq_insert_sql(qs, sql, sizeof sql);
    PGresult *r = NULL;
    rc = ferry__pg_run(conn, "dead letter record", sql, FERRY__DLQ_NPARAMS, p.v, &r, err);
    if (rc == 0) {
        if (inserted) *inserted = atoi(PQcmdTuples(r)) > 0;
        PQclear(r);
    }
    ferry__dlq_params_free(&p);
    return rc;
}
