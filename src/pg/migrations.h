/* migrations.h - the embedded migration list (generated from src/pg/sql by
 * cmake/embed_sql.cmake) and the advisory-lock keys ferry uses in PostgreSQL. */
#ifndef FERRY_PG_MIGRATIONS_H
#define FERRY_PG_MIGRATIONS_H

#include <libpq-fe.h>
#include <stddef.h>

#include "ferry/common.h"

/* Same layout as the generated table's typedef. */
typedef struct ferry__migration {
    int version;
    const char *name;
    const char *sql; /* with the token @SCHEMA@ where the quoted schema goes */
} ferry__migration;

extern const ferry__migration ferry__migrations[];
extern const size_t ferry__migrations_count;

/* Advisory locks are (class, hashtext(schema)) pairs; the class says what is locked.
 * 0x66657279 is "fery" in ASCII, picked to stay clear of applications' own keys. */
#define FERRY__LOCK_CLASS_STR "1717924473"     /* migrations */
#define FERRY__LOCK_RETENTION_STR "1717924474" /* outbox retention task */
/* Every relay holds this one in shared mode on its main connection while it runs; a relay
 * that can take it exclusively for an instant knows it is the only one (relay_batch.c). */
#define FERRY__LOCK_RELAYS_STR "1717924475"

/* The migration's SQL with @SCHEMA@ replaced by qschema (an already quoted identifier).
 * malloc'd (caller frees); NULL when out of memory. Pure. */
char *ferry__migration_sql(const ferry__migration *m, const char *qschema);

/* Highest applied version in <qschema>.ferry_schema_migrations (0 when the table does not
 * exist), on a caller's idle blocking connection. */
int ferry__schema_version_get(PGconn *conn, const char *qschema, int *version, ferry_error *err);

#endif
