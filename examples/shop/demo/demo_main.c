/* demo_main.c - shop-demo's entry point: dispatch to the subcommand. */
#include "demo.h"

#include "ex_http.h"
#include "ex_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: shop-demo SUBCOMMAND [OPTIONS]   (shop-demo SUBCOMMAND --help for its options)\n"
    "\n"
    "The load client and the reconciliation behind `make demo` (examples/shop/README.md).\n"
    "\n"
    "  load       place orders through shop-api from concurrent clients, cancel some, assign\n"
    "             tasks through taskflow-api\n"
    "  poison     write events no consumer can process (they must end as dead letters)\n"
    "  prepare    make the shop's queues keep their whole event streams (for reconcile)\n"
    "  reconcile  wait until the outbox and the queues drain, then check the providers'\n"
    "             ledgers against the database; exit 1 when an invariant fails\n";

int demo_usage_error(const char *sub, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "shop-demo %s: %s (shop-demo %s --help)\n", sub, msg, sub);
    return 2;
}

int main(int argc, char **argv) {
    ex_log_init("shop-demo");
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (ex_http_global_init() != 0) {
        fprintf(stderr, "shop-demo: libcurl did not initialise\n");
        return 1;
    }
    if (ex_signals_install() != 0) {
        fprintf(stderr, "shop-demo: cannot install signal handlers\n");
        return 1;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "load")) return demo_load(argc - 2, argv + 2);
    if (!strcmp(sub, "poison")) return demo_poison(argc - 2, argv + 2);
    if (!strcmp(sub, "prepare")) return demo_prepare(argc - 2, argv + 2);
    if (!strcmp(sub, "reconcile")) return demo_reconcile(argc - 2, argv + 2);
    fprintf(stderr, "shop-demo: unknown subcommand '%.64s'\n%s", sub, usage);
    return 2;
}
