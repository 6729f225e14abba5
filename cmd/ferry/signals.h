/* signals.h - SIGTERM/SIGINT/SIGHUP for the long-running commands (worker, relay). The
 * library is not async-signal-safe, so the signals are blocked in every thread and taken by
 * one sigwait thread, which calls the command's handler in normal thread context. */
#ifndef FERRY_CLI_SIGNALS_H
#define FERRY_CLI_SIGNALS_H

#include <pthread.h>

/* Called on the signal thread for each stop signal; count is 1 for the first, 2 for the
 * second, ... */
typedef void (*cli_signal_fn)(int sig, int count, void *userdata);

typedef struct cli_signals {
    pthread_t thread;
    pthread_mutex_t mu;
    int exiting; /* [mu] */
    int started;
    cli_signal_fn fn;
    void *userdata;
} cli_signals;

/* Block the stop signals (and SIGUSR1, used to wake the thread at exit) in the calling
 * thread and ignore SIGPIPE. Call before any other thread exists, so all inherit the mask. */
void cli_signals_block(void);

/* Start the sigwait thread. 0 or -1 (thread not created). */
int cli_signals_start(cli_signals *s, cli_signal_fn fn, void *userdata);

/* Stop and join the thread (no-op if it was never started). No handler call after return. */
void cli_signals_stop(cli_signals *s);

/* "SIGTERM", "SIGINT", "SIGHUP" or "signal". Static. */
const char *cli_signame(int sig);

#endif
