/* cli.c - connection options, environment fallbacks and error reporting shared by the
 * subcommands (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logline.h"
#include "util/printable.h"

#define CONN_COMMON_DEFS                                                                           \
    {"redis",                                                                                      \
     OPT_STRING,                                                                                   \
     "URL",                                                                                        \
     offsetof(cli_conn, redis_url),                                                                \
     0,                                                                                            \
     0,                                                                                            \
     "Redis URL: redis://[user:pass@]host[:port][/db], rediss://... (TLS) or "                     \
     "unix:///path[?db=N]. Default: $REDIS_URL (an empty one is refused), "                        \
     "else " FERRY_DEFAULT_REDIS_URL "."},                                                         \
        {"redis-url-file",                                                                         \
         OPT_STRING,                                                                               \
         "FILE",                                                                                   \
         offsetof(cli_conn, redis_url_file),                                                       \
         0,                                                                                        \
         0,                                                                                        \
         "Read the Redis URL from FILE (the URL alone on one line), so that a password is "        \
         "neither in the command line nor in the environment. Not with --redis; used instead "     \
         "of $REDIS_URL."},                                                                        \
        {"prefix",                                                                                 \
         OPT_STRING,                                                                               \
         "P",                                                                                      \
         offsetof(cli_conn, prefix),                                                               \
         0,                                                                                        \
         0,                                                                                        \
         "Key prefix. Default: $FERRY_PREFIX (an empty one is refused), "                          \
         "else " FERRY_DEFAULT_PREFIX "."},                                                        \
        {"tls-ca",                                                                                 \
         OPT_STRING,                                                                               \
         "FILE",                                                                                   \
         offsetof(cli_conn, tls_ca),                                                               \
         0,                                                                                        \
         0,                                                                                        \
         "CA bundle (PEM) to verify the server. Default: system store. The TLS options "           \
         "need a rediss:// URL."},                                                                 \
        {"tls-cert",                                                                               \
         OPT_STRING,                                                                               \
         "FILE",                                                                                   \
         offsetof(cli_conn, tls_cert),                                                             \
         0,                                                                                        \
         0,                                                                                        \
         "Client certificate (PEM) for TLS (rediss://)."},                                         \
        {"tls-key",                                                                                \
         OPT_STRING,                                                                               \
         "FILE",                                                                                   \
         offsetof(cli_conn, tls_key),                                                              \
         0,                                                                                        \
         0,                                                                                        \
         "Client private key (PEM) for TLS (rediss://)."},                                         \
    {                                                                                              \
        "tls-insecure", OPT_FLAG, NULL, offsetof(cli_conn, tls_insecure), 0, 0,                    \
            "Do not verify the server certificate (rediss://; testing only)."                      \
    }

static const opt_def conn_defs[] = {
    CONN_COMMON_DEFS,
    {"timeout", OPT_INT, "MS", offsetof(cli_conn, timeout_ms), 1, 3600000,
     "Connect and per-command timeout in milliseconds (default 5000)."},
    {"command-timeout", OPT_INT, "MS", offsetof(cli_conn, timeout_ms), 1, 3600000,
     "Same as --timeout."},
};

/* For `ferry worker`, --timeout is the per-job time limit, so the connection group only
 * has --command-timeout. */
static const opt_def worker_conn_defs[] = {
    CONN_COMMON_DEFS,
    {"command-timeout", OPT_INT, "MS", offsetof(cli_conn, timeout_ms), 1, 3600000,
     "Connect and per-command timeout in milliseconds (default 5000). (In this "
     "subcommand --timeout is the per-job time limit.)"},
};

opt_group cli_conn_group(cli_conn *c, int worker_style) {
    opt_group g = {"Connection options", conn_defs, sizeof conn_defs / sizeof conn_defs[0], c};
    if (worker_style) {
        g.defs = worker_conn_defs;
        g.n = sizeof worker_conn_defs / sizeof worker_conn_defs[0];
    }
    return g;
}

/* The part of a URL safe to show: "host:port" (or the socket path). Purely textual; the
 * URL has already been validated by ferry_redis_url_check. */
static void url_display_host(const char *url, char *out, size_t cap) {
    const char *p = strstr(url, "://");
    if (!p) {
        snprintf(out, cap, "(unparsed URL)");
        return;
    }
    p += 3;
    if (!strncmp(url, "unix:", 5)) {
        /* unix://[user:pass@]/path: the authority (credentials) ends at the first '/' */
        p += strcspn(p, "/?#");
        size_t n = strcspn(p, "?#");
        snprintf(out, cap, "%.*s", (int)n, p);
        return;
    }
    size_t alen = strcspn(p, "/?#");
    const char *host = p;
    for (const char *q = p; q < p + alen; q++)
        if (*q == '@') host = q + 1;
    int hlen = (int)(p + alen - host);
    if (memchr(host, ':', (size_t)hlen) && host[0] != '[')
        snprintf(out, cap, "%.*s", hlen, host);
    else if (host[0] == '[' && memchr(host, ']', (size_t)hlen) &&
             ((const char *)memchr(host, ']', (size_t)hlen))[1] == ':')
        snprintf(out, cap, "%.*s", hlen, host);
    else
        snprintf(out, cap, "%.*s:6379", hlen, host);
}

static int tls_file_check(const cmd_spec *spec, const char *opt, const char *path) {
    if (path && access(path, R_OK) != 0)
        return opts_usage_error(spec, "--%s: cannot read %s", opt, path);
    return 0;
}

/* The first TLS option given, for the "TLS needs rediss://" message; NULL when none. */
static const char *tls_option_given(const cli_conn *c) {
    return c->tls_ca         ? "--tls-ca"
           : c->tls_cert     ? "--tls-cert"
           : c->tls_key      ? "--tls-key"
           : c->tls_insecure ? "--tls-insecure"
                             : NULL;
}

/* The URL read from --redis-url-file: c->redis_url and the connection options borrow it
 * for the life of the process (cli_conn has no destructor). */
static char *url_from_file;

int cli_conn_resolve(const cmd_spec *spec, cli_conn *c) {
    c->url_source = "--redis";
    if (c->redis_url_file) {
        if (c->redis_url)
            return opts_usage_error(spec, "--redis and --redis-url-file both give the Redis URL: "
                                          "give one");
        free(url_from_file);
        int rc = cli_read_secret_file(spec, "redis-url-file", c->redis_url_file, &url_from_file);
        if (rc) return rc;
        c->redis_url = url_from_file;
        c->url_source = "--redis-url-file";
    }
    /* A variable set but empty is refused like an empty option (`--prefix ''` is exit 2):
     * it is almost always an unset shell variable, and falling back to the default server
     * or prefix would silently work on the wrong keys. */
    if (!c->redis_url) {
        const char *env = getenv("REDIS_URL");
        if (env && !*env) return opts_usage_error(spec, "REDIS_URL is set but empty");
        if (env) {
            c->redis_url = env;
            c->url_source = "REDIS_URL";
        } else {
            c->redis_url = FERRY_DEFAULT_REDIS_URL;
            c->url_source = "default URL";
        }
    }
    ferry_error err = {0};
    if (ferry_redis_url_check(c->redis_url, &err) != 0)
        return opts_usage_error(spec, "%s: %s", c->url_source, err.message);
    url_display_host(c->redis_url, c->host, sizeof c->host);
    const char *prefix_src = "--prefix";
    if (!c->prefix) {
        const char *env = getenv("FERRY_PREFIX");
        prefix_src = "FERRY_PREFIX";
        if (env && !*env) return opts_usage_error(spec, "FERRY_PREFIX is set but empty");
        c->prefix = env ? env : FERRY_DEFAULT_PREFIX;
    }
    /* (the library's limit, checked here so that every command, the relay included, says
     * so before connecting) */
    if (strlen(c->prefix) > FERRY_QUEUE_NAME_MAX)
        return opts_usage_error(spec, "%s: longer than %d bytes", prefix_src, FERRY_QUEUE_NAME_MAX);
    /* The library ignores TLS settings on a plain connection: a certificate given for a
     * redis:// URL would silently not be used, and the traffic would go in clear text. */
    const char *tls_opt = tls_option_given(c);
    if (tls_opt && strncasecmp(c->redis_url, "rediss://", 9) != 0)
        return opts_usage_error(spec,
                                "%s applies to rediss:// (TLS) URLs only; the URL (%s) is "
                                "%.*s://",
                                tls_opt, c->url_source, (int)strcspn(c->redis_url, ":"),
                                c->redis_url);
    if (tls_file_check(spec, "tls-ca", c->tls_ca) ||
        tls_file_check(spec, "tls-cert", c->tls_cert) ||
        tls_file_check(spec, "tls-key", c->tls_key))
        return CLI_EXIT_USAGE;
    if (!c->timeout_ms) c->timeout_ms = CLI_DEFAULT_TIMEOUT_MS;
    ferry_redis_options_init(&c->redis);
    c->redis.url = c->redis_url;
    c->redis.tls_ca_file = c->tls_ca;
    c->redis.tls_cert_file = c->tls_cert;
    c->redis.tls_key_file = c->tls_key;
    c->redis.tls_insecure = c->tls_insecure;
    c->redis.connect_timeout_ms = (int)c->timeout_ms;
    c->redis.command_timeout_ms = (int)c->timeout_ms;
    return 0;
}

void cli_report_text(const cli_conn *c, const char *what, const ferry_error *err, char *out,
                     size_t cap) {
    char msg[FERRY_ERROR_MESSAGE_MAX * 2];
    snprintf(msg, sizeof msg, "%s", err->message[0] ? err->message : ferry_strerror(err->code));
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    if (c) logline_mask_url_password(msg, sizeof msg, c->redis_url);
    int transport = err->code == FERRY_EIO || err->code == FERRY_ETIMEDOUT ||
                    err->code == FERRY_ETLS || err->code == FERRY_EAUTH ||
                    err->code == FERRY_EPROTO || err->code == FERRY_EREDIS;
    char where[400] = "";
    /* Name the server unless the library's message already does. */
    if (transport && c && !strstr(msg, c->host))
        snprintf(where, sizeof where, "redis %s: ", c->host);
    snprintf(out, cap, "%s%s%s%s", what ? what : "", what ? ": " : "", where, msg);
    /* a password cut by the host prefix or `what` cannot appear: mask the whole once more */
    if (c) logline_mask_url_password(out, cap, c->redis_url);
}

int cli_report(const cmd_spec *spec, const cli_conn *c, const char *what, const ferry_error *err) {
    char text[FERRY_ERROR_MESSAGE_MAX * 2 + 1024];
    cli_report_text(c, what, err, text, sizeof text);
    fprintf(stderr, "ferry %s: %s\n", spec->name, text);
    return err->code == FERRY_EINVAL || err->code == FERRY_ETOOBIG ? CLI_EXIT_USAGE
                                                                   : CLI_EXIT_RUNTIME;
}

int cli_open_queue(const cmd_spec *spec, cli_conn *c, const char *name, cli_queue_use use,
                   ferry_queue **out) {
    ferry_queue_options qo;
    ferry_queue_options_init(&qo);
    qo.redis = &c->redis;
    qo.prefix = c->prefix;
    qo.skip_meta_update = use == CLI_QUEUE_READS;
    ferry_error err = {0};
    *out = NULL;
    if (ferry_queue_open(name, &qo, out, &err) != 0) {
        *out = NULL;
        return cli_report(spec, c, NULL, &err);
    }
    return 0;
}

int cli_read_secret_file(const cmd_spec *spec, const char *opt, const char *path, char **out) {
    *out = NULL;
    char shown[256];
    ferryx_printable(path, shown, sizeof shown);
    /* O_NONBLOCK: a FIFO without a writer must not hang the start; cleared again below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return opts_usage_error(spec, "--%s: cannot open %s: %s", opt, shown, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return opts_usage_error(spec, "--%s: %s is a directory, not a file", opt, shown);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (S_ISREG(st.st_mode) && (st.st_mode & 077))
        opts_message(spec, "warning: --%s: %s can be read by other users (mode %03o); chmod 600 it",
                     opt, shown, (unsigned)(st.st_mode & 0777));
    char *buf = malloc(CLI_SECRET_FILE_MAX + 2);
    if (!buf) {
        close(fd);
        return opts_usage_error(spec, "--%s: out of memory", opt);
    }
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, CLI_SECRET_FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return opts_usage_error(spec, "--%s: cannot read %s: %s", opt, shown, strerror(e));
        }
        if (r == 0) break;
        len += (size_t)r;
        if (len > CLI_SECRET_FILE_MAX) {
            close(fd);
            free(buf);
            return opts_usage_error(spec, "--%s: %s is longer than %d bytes", opt, shown,
                                    CLI_SECRET_FILE_MAX);
        }
    }
    close(fd);
    if (len && buf[len - 1] == '\n') len--;
    if (len && buf[len - 1] == '\r') len--;
    buf[len] = 0;
    const char *why = len == 0                 ? "is empty"
                      : memchr(buf, 0, len)    ? "holds a NUL byte"
                      : memchr(buf, '\n', len) ? "holds more than one line"
                      : memchr(buf, '\r', len) ? "holds a carriage return inside the value"
                                               : NULL;
    if (why) {
        free(buf);
        return opts_usage_error(spec, "--%s: %s %s (expected the value alone on one line)", opt,
                                shown, why);
    }
    *out = buf;
    return 0;
}
