/* demo.h - shop-demo: the load client and the reconciliation of `make demo`.
 *
 *   shop-demo load      place orders through shop-api from concurrent clients, cancel some,
 *                       assign tasks through taskflow-api
 *   shop-demo poison    write events no consumer can process (they must end as dead letters)
 *   shop-demo prepare   keep the queues' whole event streams for the reconciliation
 *   shop-demo reconcile wait for the outbox and the queues to drain, then check what the
 *                       providers really did (their ledgers) against the database
 *
 * Each subcommand is a function taking argc/argv after the subcommand's name and returning the
 * process's exit status (0 ok, 1 failure or an invariant broken, 2 usage). */
#ifndef SHOP_DEMO_H
#define SHOP_DEMO_H

int demo_load(int argc, char **argv);
int demo_poison(int argc, char **argv);
int demo_prepare(int argc, char **argv);
int demo_reconcile(int argc, char **argv);

/* Shared by the subcommands: print "shop-demo SUB: message" to stderr and return 2. */
int demo_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
