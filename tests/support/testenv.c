/* testenv.c - see testenv.h. */
#include "testenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_KEYS 64

static struct {
    int loaded;
    int n;
    char key[MAX_KEYS][64];
    char val[MAX_KEYS][1024];
} env;

static void load(void) {
    if (env.loaded) return;
    env.loaded = 1;
    const char *dir = getenv("FERRY_TESTENV");
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/env", dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1200];
    while (env.n < MAX_KEYS && fgets(line, sizeof line, f)) {
        char *eq = strchr(line, '=');
        if (!eq) continue;
        *eq = 0;
        char *v = eq + 1;
        v[strcspn(v, "\r\n")] = 0;
        size_t kl = strlen(line), vl = strlen(v);
        if (kl >= sizeof env.key[0] || vl >= sizeof env.val[0]) continue; /* never truncate */
        memcpy(env.key[env.n], line, kl + 1);
        memcpy(env.val[env.n], v, vl + 1);
        env.n++;
    }
    fclose(f);
}

const char *testenv_get(const char *key) {
    load();
    for (int i = 0; i < env.n; i++)
        if (!strcmp(env.key[i], key)) return env.val[i];
    return NULL;
}

const char *testenv_require(const char *key) {
    const char *v = testenv_get(key);
    if (!v)
        fail_msg("test environment has no %s (FERRY_TESTENV=%s); run through ctest", key,
                 getenv("FERRY_TESTENV") ? getenv("FERRY_TESTENV") : "(unset)");
    return v;
}

const char *testenv_prefix(void) {
    static char buf[8][64];
    static int n;
    char *b = buf[n % 8];
    snprintf(b, sizeof buf[0], "ft%dx%d", (int)getpid(), n);
    n++;
    return b;
}

ferry_redis_options testenv_redis_options(int tls) {
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    if (tls) {
        o.url = testenv_require("REDIS_TLS_URL");
        o.tls_ca_file = testenv_require("TLS_CA");
    } else {
        o.url = testenv_require("REDIS_URL");
    }
    return o;
}

ferry_conn *testenv_conn(void) {
    ferry_redis_options o = testenv_redis_options(0);
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(&o, NULL, &c, &e) != 0) fail_msg("connect %s: %s", o.url, e.message);
    return c;
}

redisReply *testenv_cmd(ferry_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = NULL;
    ferry_error e = {0};
    int rc = ferry__conn_vcommand(c, &reply, &e, fmt, ap);
    va_end(ap);
    if (rc != 0) fail_msg("redis command failed: %s", e.message);
    return reply;
}

int testenv_wait_until(int (*cond)(void *), void *arg, int timeout_ms) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    for (int waited = 0; waited <= timeout_ms; waited += 5) {
        if (cond(arg)) return 1;
        nanosleep(&ts, NULL);
    }
    return cond(arg);
}

static int skipped;

void testenv_skip(const char *why) {
    fprintf(stderr, "SKIPPED: %s\n", why);
    skipped = 1;
    skip();
}

int testenv_exit(int failed) {
    return failed ? failed : skipped ? TESTENV_SKIPPED : 0;
}
