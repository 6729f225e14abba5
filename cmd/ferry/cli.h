/* cli.h - what every ferry subcommand shares: the connection options (--redis, --prefix,
 * TLS files, command timeout) with their environment fallbacks, turning them into
 * ferry_redis_options, and one-line error reporting that names the Redis host but never
 * its password.
 *
 * Not thread-safe by itself: resolve options on the main thread before starting others;
 * cli_report may be called from any thread (it writes one line with one fprintf). */
#ifndef FERRY_CLI_CLI_H
#define FERRY_CLI_CLI_H

#include <stddef.h>

#include "ferry/ferry.h"
#include "opts.h"

#define CLI_DEFAULT_TIMEOUT_MS 5000

typedef struct cli_conn {
    /* as parsed (NULL / 0 = not given) */
    const char *redis_url;
    const char *redis_url_file; /* --redis-url-file: read into redis_url by cli_conn_resolve */
    const char *prefix;
    const char *tls_ca;
    const char *tls_cert;
    const char *tls_key;
    int tls_insecure;
    long long timeout_ms;
    /* resolved by cli_conn_resolve */
    const char *url_source; /* "--redis", "--redis-url-file", "REDIS_URL" or "default URL" */
    char host[300];         /* "host:port" or the unix socket path, for messages */
    ferry_redis_options redis;
} cli_conn;

/* The connection option group, writing into *c. With worker_style = 0 the command timeout
 * is `--timeout MS` (alias `--command-timeout`); with 1 (`ferry worker`, where --timeout is
 * the per-job limit) only `--command-timeout MS` exists. */
opt_group cli_conn_group(cli_conn *c, int worker_style);

/* Read --redis-url-file (cli_read_secret_file; exclusive with --redis, wins over
 * REDIS_URL), apply env fallbacks (REDIS_URL, FERRY_PREFIX; set but empty is an error, as
 * an empty option is) and defaults, check the URL, that TLS options come with a rediss://
 * URL and that the TLS files are readable, fill c->redis. Prints a usage error (never the
 * file's content) and returns CLI_EXIT_USAGE on a bad value, else 0. A URL read from a file
 * stays allocated until the process exits (c->redis_url points to it); blocking (reads the
 * file); main thread only, once per process. */
int cli_conn_resolve(const cmd_spec *spec, cli_conn *c);

/* Print "ferry <cmd>: <what>: <detail>" for a library failure and return the exit code
 * for it: CLI_EXIT_USAGE for FERRY_EINVAL / FERRY_ETOOBIG (the input was bad), else
 * CLI_EXIT_RUNTIME. Transport-type failures are prefixed with "redis <host>". The message
 * is flattened to one line and any occurrence of the URL's password is masked. */
int cli_report(const cmd_spec *spec, const cli_conn *c, const char *what, const ferry_error *err);

/* The text cli_report writes after "ferry <cmd>: ", into out[cap] (cut at cap), for a
 * writer of its own (the worker's JSON lines): the same wording and masking. c may be NULL.
 * Cannot fail. */
void cli_report_text(const cli_conn *c, const char *what, const ferry_error *err, char *out,
                     size_t cap);

/* What a subcommand does with the queue it opens. CLI_QUEUE_READS (only reads, or deletes
 * the queue) opens it without writing its meta (skip_meta_update), so that naming a queue
 * that does not exist creates no key; CLI_QUEUE_WRITES writes meta as Node's Queue does. */
typedef enum { CLI_QUEUE_WRITES, CLI_QUEUE_READS } cli_queue_use;

/* Open the queue handle for `name` with the resolved connection; on failure reports and
 * returns the exit code (never 0), with *out NULL. */
int cli_open_queue(const cmd_spec *spec, cli_conn *c, const char *name, cli_queue_use use,
                   ferry_queue **out);

/* Read a credential (a Redis or database URL) from the file at `path`, for the
 * `--redis-url-file` / `--database-url-file` options, so that it is neither in argv (seen
 * in `ps`) nor in the environment (inherited by job commands). The file holds the value on
 * one line; one trailing "\n" or "\r\n" is dropped. Refused, with a usage error naming
 * `opt` and the path but never the content: a file that cannot be read, a directory, an
 * empty value, more than one line, a NUL byte, more than CLI_SECRET_FILE_MAX bytes. A file
 * that others can read (mode & 0077) gets a warning on stderr. On success *out is a
 * malloc'd NUL-terminated copy (the caller frees it) and 0 is returned; else *out is NULL
 * and CLI_EXIT_USAGE is returned. Blocking (reads a file); main thread only. */
#define CLI_SECRET_FILE_MAX 65536
int cli_read_secret_file(const cmd_spec *spec, const char *opt, const char *path, char **out);

#endif
