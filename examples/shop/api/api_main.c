/* api_main.c - shop-api: the shop's HTTP API (see api_router.c for its routes).
 *
 * Start: check the flags, connect to PostgreSQL, make sure the schema is ready
 * (shop_schema_ensure: `ferry migrate` must have run), listen, print one line
 * "listening on HOST:PORT". SIGTERM/SIGINT: stop accepting, finish the requests running,
 * exit 0. Exit 2 on a usage error, 1 when it cannot start. It never talks to Redis: the
 * outbox rows it commits are moved to the queues by shop-worker's relay. */
#include "api.h"

#include "ex_flags.h"
#include "ex_http.h"
#include "ex_text.h"
#include "shop_common.h"

#include <ferry/outbox.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "shop-api"

/* The flags: parsing and --help come from this one table. */
static const ex_flag flags[] = {
    {"listen", "HOST:PORT", "address to listen on (default 127.0.0.1:8080; port 0 = any free)"},
    {"database", "URL", "PostgreSQL URL (default $DATABASE_URL, else libpq's defaults)"},
    {"schema", "NAME", "schema of ferry's and the shop's tables (default public)"},
    {"gateway-url", "URL", "payment gateway base URL (default $GATEWAY_URL; required)"},
    {"provider-timeout-ms", "N", "deadline of a gateway call, 1..600000 (default 2000)"},
    {"pool", "N", "PostgreSQL connections, 1..256: bounds database work (default 8)"},
    {"help", NULL, "show this help and exit"},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

static void usage(FILE *to) {
    fprintf(to, "usage: " PROG " [options]\n"
                "The shop's HTTP API: POST /orders, GET /orders/{id}, POST /orders/{id}/cancel,\n"
                "GET /healthz. Run `ferry migrate --schema NAME` first.\n\noptions:\n");
    ex_flags_print(to, flags, NFLAGS, 30);
    fprintf(to, "\nenvironment: DATABASE_URL, GATEWAY_URL (flags override them)\n");
}

typedef struct config {
    const char *listen, *database, *schema, *gateway;
    long timeout_ms, pool;
} config;

/* Parse argv into cfg. Returns -1 to go on, else the exit code (0 after --help). */
static int parse_flags(int argc, char **argv, config *cfg) {
    struct option longopts[NFLAGS + 1];
    ex_flags_longopts(flags, NFLAGS, longopts);
    const char *f[NFLAGS] = {0};
    opterr = 0;
    int ch, idx;
    while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
        if (ch == '?' || ch == ':')
            return ex_usage_error(PROG, "%s: unknown option, or its value is missing",
                                  argv[optind - 1]);
        if (!strcmp(flags[ch].name, "help")) {
            usage(stdout);
            return 0;
        }
        f[ch] = optarg;
    }
    if (optind < argc) return ex_usage_error(PROG, "unexpected argument '%s'", argv[optind]);
    cfg->listen = ex_opt(f[0], NULL, "127.0.0.1:8080");
    cfg->database = ex_opt(f[1], "DATABASE_URL", "");
    cfg->schema = ex_opt(f[2], NULL, FERRY_OUTBOX_DEFAULT_SCHEMA);
    cfg->gateway = ex_opt(f[3], "GATEWAY_URL", NULL);
    const ex_flag_number nums[] = {
        {4, "2000", 1, 600000, &cfg->timeout_ms},
        {5, "8", 1, 256, &cfg->pool},
    };
    char err[256];
    if (ex_flags_numbers(flags, f, nums, sizeof nums / sizeof nums[0], err, sizeof err))
        return ex_usage_error(PROG, "%s", err);
    if (!cfg->gateway)
        return ex_usage_error(PROG, "no gateway URL: set --gateway-url or GATEWAY_URL");
    if (strncmp(cfg->gateway, "http://", 7) && strncmp(cfg->gateway, "https://", 8))
        return ex_usage_error(PROG,
                              "--gateway-url / GATEWAY_URL must be an http:// or https:// URL");
    if (!cfg->schema[0] || strlen(cfg->schema) > FERRY_OUTBOX_SCHEMA_MAX)
        return ex_usage_error(PROG, "--schema: a schema name is 1 to %d bytes",
                              FERRY_OUTBOX_SCHEMA_MAX);
    ferry_error fe = {0};
    if (ferry_outbox_database_url_check(cfg->database, &fe))
        return ex_usage_error(PROG, "--database / DATABASE_URL: %s", fe.message);
    return -1;
}

/* Connect once and make sure the tables are there (exit 1 with the reason otherwise). */
static int check_schema(const config *cfg) {
    char err[1024];
    PGconn *c = ex_pg_connect(cfg->database, cfg->schema, 5000, 60000, err, sizeof err);
    if (!c) {
        fprintf(stderr, PROG ": cannot connect to PostgreSQL: %s\n", err);
        return -1;
    }
    int rc = shop_schema_ensure(c, cfg->schema, err, sizeof err);
    PQfinish(c);
    if (rc) {
        fprintf(stderr, PROG ": %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    config cfg = {0};
    int rc = parse_flags(argc, argv, &cfg);
    if (rc >= 0) return rc;
    ex_log_init(PROG);
    if (ex_signals_install() || ex_http_global_init()) {
        fprintf(stderr, PROG ": cannot set up signal handlers or libcurl\n");
        return 1;
    }
    if (check_schema(&cfg)) return 1;

    char gateway[1024];
    snprintf(gateway, sizeof gateway, "%s", cfg.gateway);
    for (size_t n = strlen(gateway); n > 0 && gateway[n - 1] == '/'; n--)
        gateway[n - 1] = '\0';
    shop_api api = {
        .schema = cfg.schema, .gateway_url = gateway, .provider_timeout_ms = (int)cfg.timeout_ms};
    api.pool =
        ex_pgpool_new(cfg.database, cfg.schema, (int)cfg.pool, SHOP_API_STATEMENT_TIMEOUT_MS);
    if (!api.pool) {
        fprintf(stderr, PROG ": out of memory\n");
        return 1;
    }
    ex_httpd *server = NULL;
    char err[512];
    if (ex_httpd_start(cfg.listen, SHOP_API_BODY_MAX, shop_api_handle, &api, &server, err,
                       sizeof err)) {
        fprintf(stderr, PROG ": cannot listen on %s: %s\n", cfg.listen, err);
        ex_pgpool_free(api.pool);
        return 1;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)strcspn(cfg.listen, ":"), cfg.listen);
    printf("listening on %s:%d\n", host, ex_httpd_port(server));
    fflush(stdout);
    char shown[256];
    ex_log("schema %s, gateway %s (timeout %ld ms), pool %ld", cfg.schema,
           ex_url_display(gateway, shown, sizeof shown), cfg.timeout_ms, cfg.pool);

    ex_wait_stop(-1);
    ex_log("stopping: finishing the requests in progress");
    /* stops accepting, waits for running handlers (up to 30 s; then they are left behind and
     * nothing more is freed) */
    if (ex_httpd_stop(server) != 0) return 1;
    ex_pgpool_free(api.pool);
    ex_log("stopped");
    return 0;
}
