/* fakes_main.c - shop-fakes: the shop's fake payment gateway, carrier and mailer on one
 * port (examples/shop/PROTOCOL.md). Parses the flags, starts the server, prints
 * "listening on HOST:PORT", and stops on SIGTERM/SIGINT (exit 0). Usage errors exit 2,
 * start-up failures 1. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_httpd.h"
#include "ex_util.h"
#include "fakes_faults.h"
#include "fakes_http.h"
#include "fakes_state.h"

#define FAKES_MAX_BODY (64u * 1024u) /* bytes of a request body; more gets 413 */

typedef struct opt_def {
    const char *name, *arg, *help;
} opt_def;

static const opt_def OPTS[] = {
    {"--listen", "HOST:PORT", "where to listen (default 127.0.0.1:7071; port 0: any free port)"},
    {"--seed", "N", "seed of the generator the fault rates draw from (default 1)"},
    {"--fault", "OP:KEY=VALUE",
     "a fault setting in force from the start, repeatable; OP is gateway.authorize,\n"
     "      gateway.get, gateway.capture, gateway.void, carrier.lookup, carrier.create,\n"
     "      mailer.send or '*' (all); KEY is error_rate, error_next, slow_rate, slow_next,\n"
     "      slow_ms, throttle_rate, throttle_next, retry_after (seconds|date|both),\n"
     "      retry_after_s, drop_rate or drop_next"},
    {"--ledger-max", "N",
     "most entries kept per ledger list and per idempotency-key space (default 1000000);\n"
     "      beyond it the providers answer 507"},
    {"--help", NULL, "show this help"},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

static void usage(FILE *to) {
    fprintf(to, "usage: shop-fakes [--listen HOST:PORT] [--seed N] [--fault OP:KEY=VALUE]...\n"
                "                  [--ledger-max N] [--help]\n\n"
                "The shop's fake providers on one port: /gateway, /carrier, /mailer, with\n"
                "GET /ledger (what they really did), /faults (inject faults) and /healthz.\n"
                "See examples/shop/PROTOCOL.md.\n\n");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(to, "  %s%s%s\n      %s\n", OPTS[i].name, OPTS[i].arg ? " " : "",
                OPTS[i].arg ? OPTS[i].arg : "", OPTS[i].help);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "shop-fakes: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(shop-fakes --help shows the options)\n");
    va_end(ap);
    return 2;
}

int main(int argc, char **argv) {
    ex_log_init("shop-fakes");
    const char *listen = "127.0.0.1:7071";
    long seed = 1, ledger_max = FAKES_LEDGER_MAX_DEFAULT;
    fakes_faults faults;
    fakes_faults_init(&faults, 1);
    char err[512];
    /* --fault flags are applied after the loop, once the seed is known */
    const char **fault_specs = calloc((size_t)argc + 1, sizeof *fault_specs);
    int nfaults = 0;
    if (!fault_specs) {
        fprintf(stderr, "shop-fakes: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            free(fault_specs);
            return 0;
        }
        const opt_def *o = NULL;
        const char *val = NULL;
        for (size_t k = 0; k < NOPTS && !o; k++) {
            size_t n = strlen(OPTS[k].name);
            if (!OPTS[k].arg || strncmp(a, OPTS[k].name, n) != 0) continue;
            if (a[n] == '=')
                o = &OPTS[k], val = a + n + 1;
            else if (a[n] == '\0')
                o = &OPTS[k];
        }
        if (!o) {
            free(fault_specs);
            return usage_error("unknown option %s", a);
        }
        if (!val) {
            if (i + 1 >= argc) {
                free(fault_specs);
                return usage_error("%s needs a value (%s)", o->name, o->arg);
            }
            val = argv[++i];
        }
        int bad = 0;
        if (strcmp(o->name, "--listen") == 0)
            listen = val;
        else if (strcmp(o->name, "--seed") == 0)
            bad = ex_parse_long(val, 0, 0x7fffffffffffffffL, "--seed", &seed, err, sizeof err);
        else if (strcmp(o->name, "--ledger-max") == 0)
            bad = ex_parse_long(val, 1, 100000000L, "--ledger-max", &ledger_max, err, sizeof err);
        else
            fault_specs[nfaults++] = val;
        if (bad) {
            free(fault_specs);
            return usage_error("%s", err);
        }
    }
    const char *colon = strrchr(listen, ':');
    long port;
    if (!colon || colon == listen ||
        ex_parse_long(colon + 1, 0, 65535, "the --listen port", &port, err, sizeof err) != 0) {
        free(fault_specs);
        return usage_error("--listen %s: expected HOST:PORT (e.g. 127.0.0.1:7071)", listen);
    }
    fakes_faults_init(&faults, (uint64_t)seed);
    for (int i = 0; i < nfaults; i++)
        if (fakes_faults_parse_flag(&faults, fault_specs[i], err, sizeof err) != 0) {
            free(fault_specs);
            return usage_error("--fault: %s", err);
        }
    free(fault_specs);

    if (ex_signals_install() != 0) {
        fprintf(stderr, "shop-fakes: cannot install signal handlers\n");
        return 1;
    }
    fakes_state *state = fakes_state_new(&faults, (size_t)ledger_max);
    if (!state) {
        fprintf(stderr, "shop-fakes: out of memory\n");
        return 1;
    }
    ex_httpd *srv = NULL;
    if (ex_httpd_start(listen, FAKES_MAX_BODY, fakes_http_handle, state, &srv, err, sizeof err) !=
        0) {
        fprintf(stderr, "shop-fakes: cannot listen on %s: %s\n", listen, err);
        fakes_state_free(state);
        return 1;
    }
    printf("listening on %.*s:%d\n", (int)(colon - listen), listen, ex_httpd_port(srv));
    fflush(stdout);
    ex_log("serving the gateway, carrier and mailer on port %d (seed %ld)", ex_httpd_port(srv),
           seed);

    ex_wait_stop(-1);
    ex_log("stopping");
    ex_httpd_stop(srv);
    fakes_state_free(state);
    return 0;
}
