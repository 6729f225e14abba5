/* th.c - see th.h. */
#include "th.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the fixture's servers ------------------------------------------------------------ */

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

const char *th_env_get(const char *key) {
    load();
    for (int i = 0; i < env.n; i++)
        if (!strcmp(env.key[i], key)) return env.val[i];
    return NULL;
}

const char *th_env_require(const char *key) {
    const char *v = th_env_get(key);
    if (!v)
        fail_msg("test environment has no %s (FERRY_TESTENV=%s); run through ctest", key,
                 getenv("FERRY_TESTENV") ? getenv("FERRY_TESTENV") : "(unset)");
    return v;
}

const char *th_prefix(void) {
    static char buf[8][64];
    static int n;
    char *b = buf[n % 8];
    snprintf(b, sizeof buf[0], "ft%dx%d", (int)getpid(), n);
    n++;
    return b;
}

ferry_redis_options th_redis_options(int tls) {
    ferry_redis_options o;
    ferry_redis_options_init(&o);
    if (tls) {
        o.url = th_env_require("REDIS_TLS_URL");
        o.tls_ca_file = th_env_require("TLS_CA");
    } else {
        o.url = th_env_require("REDIS_URL");
    }
    return o;
}

ferry_conn *th_conn(void) {
    ferry_redis_options o = th_redis_options(0);
    ferry_conn *c = NULL;
    ferry_error e = {0};
    if (ferry__conn_open(&o, NULL, &c, &e) != 0) fail_msg("connect %s: %s", o.url, e.message);
    return c;
}

ferry_queue *th_queue_open(const char *prefix, const char *name, const char *defaults,
                           int allow_unknown) {
    ferry_redis_options ro = th_redis_options(0);
    ferry_queue_options o;
    ferry_queue_options_init(&o);
    o.redis = &ro;
    o.prefix = prefix;
    o.default_job_opts = defaults;
    o.allow_unknown_opts = allow_unknown;
    ferry_queue *q = NULL;
    ferry_error e = {0};
    if (ferry_queue_open(name, &o, &q, &e)) fail_msg("open %s: %s", name, e.message);
    return q;
}

int th_redis_ctl_rc(const char *action) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", th_env_require("REDIS_CTL"), action);
    return system(cmd);
}

void th_redis_ctl(const char *action) {
    if (th_redis_ctl_rc(action) != 0) fail_msg("redis-ctl %s failed", action);
}

pid_t th_redis_pid(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' pid", th_env_require("REDIS_CTL"));
    FILE *p = popen(cmd, "r");
    long pid = 0;
    if (!p) fail_msg("redis-ctl pid failed");
    if (fscanf(p, "%ld", &pid) != 1) pid = 0;
    pclose(p);
    if (pid <= 0) fail_msg("redis-ctl pid: no running redis-server");
    return (pid_t)pid;
}

/* ---- Redis commands ------------------------------------------------------------------- */

redisReply *th_vcmd(ferry_conn *c, int error_fails, const char *fmt, va_list ap) {
    redisReply *reply = NULL;
    ferry_error e = {0};
    if (ferry__conn_vcommand(c, &reply, &e, fmt, ap) != 0)
        fail_msg("redis command failed: %s (%s)", e.message, fmt);
    if (error_fails && reply->type == REDIS_REPLY_ERROR)
        fail_msg("redis error: %s (%s)", reply->str, fmt);
    return reply;
}

redisReply *th_cmd(ferry_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = th_vcmd(c, 0, fmt, ap);
    va_end(ap);
    return reply;
}

redisReply *th_cmd_ok(ferry_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = th_vcmd(c, 1, fmt, ap);
    va_end(ap);
    return reply;
}

long long th_cmd_int(ferry_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = th_vcmd(c, 0, fmt, ap);
    va_end(ap);
    if (r->type != REDIS_REPLY_INTEGER)
        fail_msg("redis: integer reply expected, got type %d (%s)", r->type, fmt);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

char *th_hget(ferry_conn *c, const char *key, const char *field) {
    redisReply *r = th_cmd_ok(c, "HGET %s %s", key, field);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

void th_expect_field(ferry_conn *c, const char *key, const char *field, const char *want) {
    char *v = th_hget(c, key, field);
    if (!want) {
        if (v) fail_msg("%s: %s = '%s', want absent", key, field, v);
        return;
    }
    if (!v || strcmp(v, want) != 0)
        fail_msg("%s: %s = '%s', want '%s'", key, field, v ? v : "(absent)", want);
    free(v);
}

char *th_zscore(ferry_conn *c, const char *key, const char *member) {
    redisReply *r = th_cmd_ok(c, "ZSCORE %s %s", key, member);
    char *v = r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;
    freeReplyObject(r);
    return v;
}

/* ---- waiting -------------------------------------------------------------------------- */

int th_wait_until(int (*cond)(void *), void *arg, int timeout_ms) {
    struct timespec ts = {0, 5 * 1000 * 1000};
    for (int waited = 0; waited <= timeout_ms; waited += 5) {
        if (cond(arg)) return 1;
        nanosleep(&ts, NULL);
    }
    return cond(arg);
}

int th_file_exists(void *arg) {
    return access(((th_file_arg *)arg)->path, F_OK) == 0;
}

int th_log_has(void *arg) {
    const th_log_arg *a = arg;
    return th_file_contains(a->path, a->needle);
}

long long th_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void th_sleep_ms(long long ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- files and the temporary directory ------------------------------------------------ */

const char *th_tmpdir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/ferry-clitest-XXXXXX");
        if (!mkdtemp(dir)) fail_msg("mkdtemp failed");
    }
    return dir;
}

void th_tmpdir_remove(void) {
    DIR *d = opendir(th_tmpdir());
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", th_tmpdir(), e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(th_tmpdir());
}

char *th_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    fclose(f);
    return s;
}

void th_write_file(const char *path, const char *text, int mode) {
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    fputs(text, f);
    fclose(f);
    chmod(path, (mode_t)mode);
}

int th_file_contains(const char *path, const char *needle) {
    char *s = th_slurp(path);
    int found = strstr(s, needle) != NULL;
    free(s);
    return found;
}

int th_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- child processes ------------------------------------------------------------------ */

char **th_env_with(const char *const *extra, const char *drop) {
    size_t n = 0, k = 0, dl = drop ? strlen(drop) : 0;
    while (environ[n])
        n++;
    while (extra && extra[k])
        k++;
    char **out = calloc(n + k + 1, sizeof *out);
    if (!out) fail_msg("out of memory");
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (!drop || strncmp(environ[i], drop, dl) != 0) out[j++] = environ[i];
    for (size_t i = 0; i < k; i++)
        out[j++] = (char *)extra[i];
    return out;
}

pid_t th_spawn(const char *const *argv, char *const *envp, const char *in_path,
               const char *out_path, const char *err_path, int append) {
    int flags = O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, flags, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, flags, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) fail_msg("posix_spawn %s: %s", argv[0], strerror(rc));
    return pid;
}

/* ---- sockets -------------------------------------------------------------------------- */

int th_listen_local(int family, int backlog, int *port) {
    *port = 0;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, backlog) < 0) {
        close(fd);
        return -1;
    }
    len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* ---- skipped -------------------------------------------------------------------------- */

static int skipped;

void th_skip(const char *why) {
    fprintf(stderr, "SKIPPED: %s\n", why);
    skipped = 1;
    skip();
}

int th_exit(int failed) {
    return failed ? failed : skipped ? TH_SKIPPED : 0;
}
