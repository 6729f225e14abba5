/* db_opts.h - the database options every PostgreSQL command takes (--database,
 * --database-url-file, --schema, --db-timeout), their resolution (flag, file, $DATABASE_URL,
 * libpq defaults) and a blocking connect with timeouts. Used by `ferry migrate`, `outbox`,
 * `relay`, `inbox` and `dlq`. Messages never show the URL's password. */
#ifndef FERRY_CLI_DB_OPTS_H
#define FERRY_CLI_DB_OPTS_H

#include <libpq-fe.h>
#include <stddef.h>

#include "cli.h"
#include "opts.h"

#define DEFAULT_DB_TIMEOUT_MS 30000

typedef struct db_opts {
    const char *url;
    const char *url_file; /* --database-url-file */
    const char *schema;
    long long timeout_ms;
    const char *url_source; /* for messages */
    char *url_read;         /* the URL read from url_file (db_opts_free clears and frees it) */
} db_opts;

#define DB_URL_HELP                                                                                \
    "PostgreSQL URL or conninfo (postgresql://user:pass@host:port/db). Default: $DATABASE_URL, "   \
    "else libpq's defaults (PGHOST, PGDATABASE, ...)."
#define DB_URL_FILE_HELP                                                                           \
    "Read the database URL from FILE (the URL alone on one line), so the password is neither "     \
    "in the command line nor in the environment. Not with --database; wins over $DATABASE_URL."
#define DB_SCHEMA_HELP "Schema of ferry's tables (default public)."

/* The four options with the default timeout (30 s); 4 entries. */
extern const opt_def db_defs[4];
#define DB_DEFS_COUNT 4

/* The database URL and where it came from; a bad one (or DATABASE_URL set but empty) is a
 * usage error: returns 0 or the exit status (printed). */
int db_resolve(const cmd_spec *spec, db_opts *d);
/* Whether a URL was given at all (--database, --database-url-file, DATABASE_URL). */
int db_given(const db_opts *d);
/* Clears and frees the URL read from a file. */
void db_opts_free(db_opts *d);
/* --db-timeout, or the default. */
long long db_timeout(const db_opts *d);
/* "user@host:port/db" of the URL, never the password. */
void db_display(const db_opts *d, char *out, size_t cap);
/* Connect (blocking, connect timeout, session statement_timeout = db_timeout); on failure
 * prints "ferry CMD: database WHERE (SOURCE): message" and returns NULL. */
PGconn *db_connect(const cmd_spec *spec, const db_opts *d);

/* A library failure of a database command on one line, "ferry CMD: message", the URL's
 * password masked and control characters escaped. Returns the exit status: 2 for
 * FERRY_EINVAL / FERRY_ETOOBIG (bad input), else 1. */
int db_report(const cmd_spec *spec, const char *url, const ferry_error *e);

#endif
