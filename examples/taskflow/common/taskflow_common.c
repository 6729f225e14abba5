/* taskflow_common.c - taskflow's schema check. */
#include "taskflow_common.h"

#include "ex_util.h"

int taskflow_schema_ensure(PGconn *c, const char *schema, char *err, size_t cap) {
    return ex_schema_ensure(c, schema ? schema : TASKFLOW_SCHEMA, "taskflow", taskflow_sql_text,
                            err, cap);
}
