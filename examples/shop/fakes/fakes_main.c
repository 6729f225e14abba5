/* fakes_main.c - shop-fakes: the shop's fake payment gateway, carrier and mailer on one
 * port (examples/shop/PROTOCOL.md). Parses the flags, starts the server, prints
 * "listening on HOST:PORT", and stops on SIGTERM/SIGINT (exit 0). Usage errors exit 2,
 * start-up failures 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ex_flags.h"
#include "ex_httpd.h"
#include "ex_util.h"
#include "fakes_faults.h"
#include "fakes_http.h"
#include "fakes_state.h"

#define FAKES_MAX_BODY (64u * 1024u) /* bytes of a request body; more gets 413 */

enum { OPT_LISTEN, OPT_SEED, OPT_FAULT, OPT_LEDGER_MAX, OPT_HELP };

static const ex_flag OPTS[] = {
    [OPT_LISTEN] = {"listen", "HOST:PORT",
                    "where to listen (default 127.0.0.1:7071; port 0: any free port)"},
    [OPT_SEED] = {"seed", "N", "seed of the generator the fault rates draw from (default 1)"},
    [OPT_FAULT] =
        {"fault", "OP:KEY=VALUE",
         "a fault setting in force from the start, repeatable; OP is gateway.authorize,\n"
         "      gateway.get, gateway.capture, gateway.void, carrier.lookup, carrier.create,\n"
         "      mailer.send or '*' (all); KEY is error_rate, error_next, slow_rate, slow_next,\n"
         "      slow_ms, throttle_rate, throttle_next, retry_after (seconds|date|both),\n"
         "      retry_after_s, drop_rate or drop_next"},
    [OPT_LEDGER_MAX] =
        {"ledger-max", "N",
         "most entries kept per ledger list and per idempotency-key space (default 1000000);\n"
         "      beyond it the providers answer 507"},
    [OPT_HELP] = {"help", NULL, "show this help"},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

static void usage(FILE *to) {
    fprintf(to, "usage: shop-fakes [--listen HOST:PORT] [--seed N] [--fault OP:KEY=VALUE]...\n"
                "                  [--ledger-max N] [--help]\n\n"
                "The shop's fake providers on one port: /gateway, /carrier, /mailer, with\n"
                "GET /ledger (what they really did), /faults (inject faults) and /healthz.\n"
                "See examples/shop/PROTOCOL.md.\n\n");
    ex_flags_print(to, OPTS, NOPTS, EX_FLAGS_HELP_BELOW);
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
        const char *val = NULL;
        int k = ex_flags_find(OPTS, NOPTS, a, &val);
        if (k < 0 || !OPTS[k].arg) { /* --help was taken above */
            free(fault_specs);
            return ex_usage_error("shop-fakes", "unknown option %s", a);
        }
        if (!val) {
            if (i + 1 >= argc) {
                free(fault_specs);
                return ex_usage_error("shop-fakes", "--%s needs a value (%s)", OPTS[k].name,
                                      OPTS[k].arg);
            }
            val = argv[++i];
        }
        int bad = 0;
        if (k == OPT_LISTEN)
            listen = val;
        else if (k == OPT_SEED)
            bad = ex_parse_long(val, 0, 0x7fffffffffffffffL, "--seed", &seed, err, sizeof err);
        else if (k == OPT_LEDGER_MAX)
            bad = ex_parse_long(val, 1, 100000000L, "--ledger-max", &ledger_max, err, sizeof err);
        else
            fault_specs[nfaults++] = val;
        if (bad) {
            free(fault_specs);
            return ex_usage_error("shop-fakes", "%s", err);
        }
    }
    const char *colon = strrchr(listen, ':');
    long port;
    if (!colon || colon == listen ||
        ex_parse_long(colon + 1, 0, 65535, "the --listen port", &port, err, sizeof err) != 0) {
        free(fault_specs);
        return ex_usage_error("shop-fakes", "--listen %s: expected HOST:PORT (e.g. 127.0.0.1:7071)",
                              listen);
    }
    fakes_faults_init(&faults, (uint64_t)seed);
    for (int i = 0; i < nfaults; i++)
        if (fakes_faults_parse_flag(&faults, fault_specs[i], err, sizeof err) != 0) {
            free(fault_specs);
            return ex_usage_error("shop-fakes", "--fault: %s", err);
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
    if (ex_httpd_stop(srv) != 0) return 1; /* handlers left running: the state stays */
    fakes_state_free(state);
    return 0;
}
