/* signals.c - see signals.h. */
#include "signals.h"

#include <signal.h>
#include <string.h>

static sigset_t stop_signals(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGUSR1); /* internal: wakes the thread at exit */
    return s;
}

void cli_signals_block(void) {
    sigset_t set = stop_signals();
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void *signal_thread(void *arg) {
    cli_signals *s = arg;
    sigset_t set = stop_signals();
    int count = 0;
    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0) continue;
        pthread_mutex_lock(&s->mu);
        int exiting = s->exiting;
        pthread_mutex_unlock(&s->mu);
        if (exiting) break;
        if (sig == SIGUSR1) continue;
        s->fn(sig, ++count, s->userdata);
    }
    return NULL;
}

int cli_signals_start(cli_signals *s, cli_signal_fn fn, void *userdata) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->fn = fn;
    s->userdata = userdata;
    if (pthread_create(&s->thread, NULL, signal_thread, s) != 0) return -1;
    s->started = 1;
    return 0;
}

void cli_signals_stop(cli_signals *s) {
    if (!s->started) return;
    pthread_mutex_lock(&s->mu);
    s->exiting = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_kill(s->thread, SIGUSR1);
    pthread_join(s->thread, NULL);
    s->started = 0;
}

const char *cli_signame(int sig) {
    return sig == SIGTERM  ? "SIGTERM"
           : sig == SIGINT ? "SIGINT"
           : sig == SIGHUP ? "SIGHUP"
                           : "signal";
}
