/* consumer.c - an outside program built against an installed ferry (tests/install/check.sh):
 * the headers compile with -Werror and the library links and runs, without a server. */
#include <ferry/ferry.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    ferry_error err = {0};
    /* a bad URL is refused before any connection, naming the problem */
    if (ferry_redis_url_check("redis://127.0.0.1:70000", &err) != FERRY_EINVAL ||
        !strstr(err.message, "port")) {
        fprintf(stderr, "consumer: url check: %s\n", err.message);
        return 1;
    }
    ferry_worker_options o;
    ferry_worker_options_init(&o);
    ferry_worker *w = NULL;
    if (ferry_worker_create("consumer", &o, NULL, NULL, &w, &err) != FERRY_EINVAL) {
        fprintf(stderr, "consumer: a worker without a handler was accepted\n");
        ferry_worker_free(w);
        return 1;
    }
    puts("consumer OK");
    return 0;
}
