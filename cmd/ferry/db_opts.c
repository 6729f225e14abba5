/* db_opts.c - see db_opts.h. */
#include "db_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/outbox.h"
#include "util/printable.h"

const opt_def db_defs[DB_DEFS_COUNT] = {
    {"database", OPT_STRING, "URL", offsetof(db_opts, url), 0, 0, DB_URL_HELP},
    {"database-url-file", OPT_STRING, "FILE", offsetof(db_opts, url_file), 0, 0, DB_URL_FILE_HELP},
    {"schema", OPT_STRING, "NAME", offsetof(db_opts, schema), 0, 0, DB_SCHEMA_HELP},
    {"db-timeout", OPT_INT, "MS", offsetof(db_opts, timeout_ms), 1, 3600000,
     "Database connect and statement timeout in milliseconds (default 30000)."},
};

/* The database URL and where it came from; a bad one (or DATABASE_URL set but empty) is a
 * usage error: returns 0 or the exit status. */
int db_resolve(const cmd_spec *spec, db_opts *d) {
    d->url_source = "--database";
    if (d->url_file) {
        if (d->url)
            return opts_usage_error(spec, "--database and --database-url-file are exclusive");
        int rc = cli_read_secret_file(spec, "database-url-file", d->url_file, &d->url_read);
        if (rc) return rc;
        d->url = d->url_read;
        d->url_source = "--database-url-file";
    } else if (!d->url) {
        const char *env = getenv("DATABASE_URL");
        if (env && !*env) return opts_usage_error(spec, "DATABASE_URL is set but empty");
        d->url = env ? env : "";
        d->url_source = env ? "DATABASE_URL" : "libpq defaults";
    } else if (!*d->url) {
        return opts_usage_error(spec, "--database is empty");
    }
    ferry_error e = {0};
    if (ferry_outbox_database_url_check(d->url, &e) != 0) {
        char msg[FERRY_ERROR_MESSAGE_MAX + 32];
        snprintf(msg, sizeof msg, "%s (%s)", e.message, d->url_source);
        return opts_usage_error(spec, "%s", msg);
    }
    return 0;
}

/* Whether a URL was given at all (--database, --database-url-file, DATABASE_URL). */
int db_given(const db_opts *d) {
    const char *env = getenv("DATABASE_URL");
    return d->url || d->url_file || (env && *env);
}

void db_opts_free(db_opts *d) {
    if (d->url_read) explicit_bzero(d->url_read, strlen(d->url_read));
    free(d->url_read);
    d->url_read = NULL;
}

long long db_timeout(const db_opts *d) {
    return d->timeout_ms ? d->timeout_ms : DEFAULT_DB_TIMEOUT_MS;
}

/* The database part of a URL that is safe to show ("user@host:port/db"), never the password. */
void db_display(const db_opts *d, char *out, size_t cap) {
    ferry_outbox_database_url_display(d->url, out, cap);
}

static void ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

/* Connect with libpq's blocking API, with a connect timeout and a session statement
 * timeout. On failure prints one line and returns NULL. */
PGconn *db_connect(const cmd_spec *spec, const db_opts *d) {
    char connect_s[24], user_timeout[24], where[300];
    snprintf(connect_s, sizeof connect_s, "%lld", (db_timeout(d) + 999) / 1000);
    /* a server that stops answering ends the connection instead of hanging the command */
    snprintf(user_timeout, sizeof user_timeout, "%lld", db_timeout(d) + 2000);
    const char *keys[] = {
        "connect_timeout",  "application_name", "keepalives",      "keepalives_idle",
        "tcp_user_timeout", "dbname",           "client_encoding", NULL};
    const char *vals[] = {connect_s, "ferry", "1", "10", user_timeout, d->url, "UTF8", NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    db_display(d, where, sizeof where);
    if (!conn || PQstatus(conn) != CONNECTION_OK) {
        const char *m = conn ? PQerrorMessage(conn) : "out of memory";
        char line[512];
        snprintf(line, sizeof line, "%s", m);
        for (char *c = line; *c; c++)
            if (*c == '\n' || *c == '\t') *c = ' ';
        for (size_t n = strlen(line); n > 0 && line[n - 1] == ' ';)
            line[--n] = '\0';
        ferry_outbox_database_url_mask(d->url,
                                       line); /* libpq quotes hosts, ports, database names */
        if (strcmp(d->url_source, "libpq defaults") == 0) /* `where` says so already */
            fprintf(stderr, "ferry %s: database %s: %s\n", spec->name, where, line);
        else
            fprintf(stderr, "ferry %s: database %s (%s): %s\n", spec->name, where, d->url_source,
                    line);
        PQfinish(conn);
        return NULL;
    }
    PQsetNoticeProcessor(conn, ignore_notice, NULL); /* "already exists, skipping" is noise */
    char sql[64];
    snprintf(sql, sizeof sql, "SET statement_timeout = %lld", db_timeout(d));
    PGresult *r = PQexec(conn, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        char line[512];
        snprintf(line, sizeof line, "%s", PQerrorMessage(conn));
        line[strcspn(line, "\n")] = '\0';
        ferry_outbox_database_url_mask(d->url, line);
        fprintf(stderr, "ferry %s: database %s: %s\n", spec->name, where, line);
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

int db_report(const cmd_spec *spec, const char *url, const ferry_error *e) {
    char msg[FERRY_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", e->message);
    ferry_outbox_database_url_mask(url, msg);
    char shown[4 * FERRY_ERROR_MESSAGE_MAX];
    fprintf(stderr, "ferry %s: %s\n", spec->name, ferryx_printable(msg, shown, sizeof shown));
    return e->code == FERRY_EINVAL || e->code == FERRY_ETOOBIG ? CLI_EXIT_USAGE : CLI_EXIT_RUNTIME;
}
