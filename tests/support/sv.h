/* sv.h - run `ferry serve` ($FERRY_BIN) as a child process for the HTTP tests, prefix sv_:
 * start it on a free loopback port with the test's flags (the port is read from its start-up
 * line), wait until GET /healthz answers, send requests with libcurl (method, path, headers,
 * body; status, headers and body back, the body parsed as JSON when it is), raw requests
 * over a plain socket for what libcurl would tidy up (bad percent-encoding, chunked bodies),
 * and stop it with SIGTERM, checking that it exits 0. Header-only (static inline): each test
 * file is its own executable; link libcurl (tests/CMakeLists.txt does for test_serve*.c).
 *
 *   sv_server s;
 *   sv_start(&s, SV_FLAGS("--prefix", prefix, "--token-file", path));
 *   sv_resp r;
 *   sv_request(&s, "POST", "/api/queues/q/pause", SV_HEADERS("Authorization: Bearer ..."),
 *              NULL, &r);
 *   assert_int_equal(r.status, 403);
 *   sv_resp_free(&r);
 *   sv_stop(&s);   // SIGTERM, exit 0 or the test fails with the server's log
 */
#ifndef FERRY_TEST_SV_H
#define FERRY_TEST_SV_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/cli.h"
#include "support/th.h"

#define SV_ARGS_MAX 64
#define SV_START_TIMEOUT_MS 20000

typedef struct sv_server {
    pid_t pid;
    int port;
    int https;
    char log_path[256];
    char base[64];     /* "http://127.0.0.1:PORT" */
    char ca_file[256]; /* for https: the CA libcurl verifies the server with ("" = none) */
} sv_server;

typedef struct sv_resp {
    long status;
    char *headers; /* the raw header lines of the final answer */
    char *body;    /* NUL-terminated */
    size_t body_len;
    json_t *json;  /* the body parsed, or NULL when it is not JSON */
    int curl_code; /* CURLE_OK, or why no answer came (then status is 0) */
} sv_resp;

#define SV_FLAGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define SV_HEADERS(...) ((const char *const[]){__VA_ARGS__, NULL})

static inline int sv_has_flag(const char *const *flags, const char *name) {
    for (size_t i = 0; flags && flags[i]; i++)
        if (strcmp(flags[i], name) == 0) return 1;
    return 0;
}

/* The port of the "listening on http(s)://HOST:PORT" start-up line in text, or 0. */
static inline int sv_port_from_log(const char *text, int *https) {
    const char *p = strstr(text, "listening on http");
    if (!p) return 0;
    *https = strncmp(p, "listening on https", 18) == 0;
    const char *sp = strstr(p, ", actions");
    if (!sp) return 0;
    const char *colon = sp;
    while (colon > p && *colon != ':')
        colon--;
    return atoi(colon + 1);
}

static inline void sv_request(const sv_server *s, const char *method, const char *path,
                              const char *const *headers, const char *body, struct sv_resp *r);
static inline void sv_resp_free(struct sv_resp *r);

/* Start `ferry serve` with `flags` (NULL-terminated; "--listen 127.0.0.1:0" and the
 * fixture's --redis are added unless given) and `env` ("K=V", may be NULL); `ca` (may be
 * NULL) is the CA file libcurl verifies an https server with. Its stderr goes to
 * s->log_path. Waits for the start-up line and GET /healthz 200; fails the test (with the
 * log) when the server exits or does not come up. */
static inline void sv_start_ca(sv_server *s, const char *const *flags, const char *const *env,
                               const char *ca) {
    static int seq;
    memset(s, 0, sizeof *s);
    if (ca) snprintf(s->ca_file, sizeof s->ca_file, "%s", ca);
    curl_global_init(CURL_GLOBAL_ALL);
    const char *argv[SV_ARGS_MAX];
    size_t n = 0;
    argv[n++] = "serve";
    if (!sv_has_flag(flags, "--listen")) {
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
    }
    if (!sv_has_flag(flags, "--redis") && !sv_has_flag(flags, "--redis-url-file")) {
        argv[n++] = "--redis";
        argv[n++] = cli_url();
    }
    for (size_t i = 0; flags && flags[i]; i++) {
        if (n + 1 >= SV_ARGS_MAX) fail_msg("sv_start: too many flags");
        argv[n++] = flags[i];
    }
    argv[n] = NULL;
    snprintf(s->log_path, sizeof s->log_path, "%s/serve-%d.log", th_tmpdir(), ++seq);
    s->pid = cli_start(argv, env, NULL, s->log_path, s->log_path);
    long long deadline = th_mono_ms() + SV_START_TIMEOUT_MS;
    for (;;) {
        char *log = th_slurp(s->log_path);
        s->port = sv_port_from_log(log, &s->https);
        int st;
        if (!s->port && waitpid(s->pid, &st, WNOHANG) == s->pid) {
            s->pid = 0;
            fail_msg("ferry serve exited (status %d) before listening:\n%s",
                     WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
        }
        free(log);
        if (s->port) break;
        if (th_mono_ms() > deadline) {
            kill(s->pid, SIGKILL);
            fail_msg("ferry serve did not say where it listens within %d ms", SV_START_TIMEOUT_MS);
        }
        th_sleep_ms(10);
    }
    snprintf(s->base, sizeof s->base, "%s://127.0.0.1:%d", s->https ? "https" : "http", s->port);
    for (;;) {
        sv_resp r;
        sv_request(s, "GET", "/healthz", NULL, NULL, &r);
        long st = r.status;
        sv_resp_free(&r);
        if (st == 200) break;
        if (th_mono_ms() > deadline) {
            kill(s->pid, SIGKILL);
            fail_msg("GET /healthz did not answer 200 within %d ms (last %ld)", SV_START_TIMEOUT_MS,
                     st);
        }
        th_sleep_ms(10);
    }
}

static inline void sv_start_env(sv_server *s, const char *const *flags, const char *const *env) {
    sv_start_ca(s, flags, env, NULL);
}

static inline void sv_start(sv_server *s, const char *const *flags) {
    sv_start_ca(s, flags, NULL, NULL);
}

/* The server's log so far (malloc'd). */
static inline char *sv_log(const sv_server *s) {
    return th_slurp(s->log_path);
}

typedef struct sv_buf {
    char *p;
    size_t n;
} sv_buf;

static inline size_t sv_write_cb(char *data, size_t size, size_t nmemb, void *ud) {
    sv_buf *b = ud;
    size_t add = size * nmemb;
    char *grown = realloc(b->p, b->n + add + 1);
    if (!grown) return 0;
    b->p = grown;
    memcpy(b->p + b->n, data, add);
    b->n += add;
    b->p[b->n] = '\0';
    return add;
}

/* One request: method ("GET", "HEAD", "POST", ...), path (with its query, sent as is),
 * extra header lines (NULL-terminated, may be NULL), body (NULL = none; sent as
 * application/json unless a Content-Type header is given). Fills *r (sv_resp_free it); a
 * request that got no answer has status 0 and curl_code set (no test failure: refusing a
 * connection can be the point). */
static inline void sv_request_len(const sv_server *s, const char *method, const char *path,
                                  const char *const *headers, const char *body, size_t body_len,
                                  sv_resp *r) {
    memset(r, 0, sizeof *r);
    CURL *h = curl_easy_init();
    if (!h) fail_msg("curl_easy_init failed");
    char url[4096];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    sv_buf hb = {0}, bb = {0};
    struct curl_slist *hl = NULL;
    int has_type = 0;
    for (size_t i = 0; headers && headers[i]; i++) {
        hl = curl_slist_append(hl, headers[i]);
        if (strncasecmp(headers[i], "Content-Type:", 13) == 0) has_type = 1;
    }
    if (body && !has_type) hl = curl_slist_append(hl, "Content-Type: application/json");
    hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sv_write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bb);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, sv_write_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &hb);
    if (s->ca_file[0]) curl_easy_setopt(h, CURLOPT_CAINFO, s->ca_file);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0 || body)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
    } else if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    r->curl_code = (int)curl_easy_perform(h);
    if (r->curl_code == CURLE_OK) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    r->headers = hb.p ? hb.p : strdup("");
    r->body = bb.p ? bb.p : strdup("");
    r->body_len = bb.n;
    r->json = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
}

static inline void sv_request(const sv_server *s, const char *method, const char *path,
                              const char *const *headers, const char *body, sv_resp *r) {
    sv_request_len(s, method, path, headers, body, body ? strlen(body) : 0, r);
}

static inline void sv_resp_free(sv_resp *r) {
    free(r->headers);
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* The value of header `name` in the answer (malloc'd, trimmed), or NULL. The last one wins
 * (headers of a 100 Continue come first). */
static inline char *sv_header(const sv_resp *r, const char *name) {
    size_t n = strlen(name);
    char *found = NULL;
    for (const char *line = r->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (ll > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ')
                v++;
            free(found);
            found = strndup(v, ll - (size_t)(v - line));
        }
        line += ll + (end ? 2 : 0);
    }
    return found;
}

/* The string member `key` of the answer's JSON object, or NULL. */
static inline const char *sv_json_str(const sv_resp *r, const char *key) {
    return r->json ? json_string_value(json_object_get(r->json, key)) : NULL;
}

/* Fail unless the answer has status `want`, showing the body otherwise. */
#define SV_EXPECT(r, want)                                                                         \
    do {                                                                                           \
        if ((r).status != (want))                                                                  \
            fail_msg("HTTP %ld, want %d (curl %d)\n%s", (r).status, (want), (r).curl_code,         \
                     (r).body);                                                                    \
    } while (0)

/* Write `text` (raw HTTP/1.1 request bytes, len of them) to the server over a plain socket
 * and read until it closes the connection or 10 s pass; the raw answer (malloc'd) and its
 * status (0 when none came) in *status. For requests libcurl would not send as given. */
static inline char *sv_raw(const sv_server *s, const char *text, size_t len, int *status) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail_msg("socket: %s", strerror(errno));
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a))
        fail_msg("connect to port %d: %s", s->port, strerror(errno));
    size_t off = 0;
    while (off < len) {
        ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
        if (w <= 0) break; /* the server may close early (413): read what it said */
        off += (size_t)w;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", status) != 1) *status = 0;
    return buf;
}

/* Send SIGTERM and wait for the exit status (fails after timeout_ms). */
static inline int sv_stop_code(sv_server *s, int timeout_ms) {
    if (!s->pid) return -1;
    kill(s->pid, SIGTERM);
    int code = cli_wait(s->pid, timeout_ms);
    s->pid = 0;
    return code;
}

/* SIGTERM; fail (with the log) unless the server exits 0 within 20 s. */
static inline void sv_stop(sv_server *s) {
    int code = sv_stop_code(s, 20000);
    if (code != 0) {
        char *log = sv_log(s);
        fail_msg("ferry serve exited %d after SIGTERM, want 0:\n%s", code, log);
    }
}

/* A token file in the temp directory with `text`, mode 0600 (mode other than 0600 for the
 * tests of a file others can read). Returns the path (static storage per call slot). */
static inline const char *sv_token_file(const char *name, const char *text, int mode) {
    static char paths[8][256];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 256, "%s/%s", th_tmpdir(), name);
    th_write_file(p, text, mode);
    return p;
}

/* One request to s; the answer (sv_resp_free it). auth NULL: no Authorization header. */
static inline sv_resp sv_call(const sv_server *s, const char *method, const char *path,
                              const char *auth, const char *body) {
    sv_resp r;
    if (auth)
        sv_request(s, method, path, SV_HEADERS(auth), body, &r);
    else
        sv_request(s, method, path, NULL, body, &r);
    return r;
}

/* Expect status `want` and an "error" naming `needle`. */
static inline void sv_expect_error(const sv_server *s, const char *method, const char *path,
                                   const char *auth, const char *body, int want,
                                   const char *needle) {
    sv_resp r = sv_call(s, method, path, auth, body);
    SV_EXPECT(r, want);
    const char *e = sv_json_str(&r, "error");
    if (!e || !strstr(e, needle))
        fail_msg("%s %s: want an error naming \"%s\", got %s", method, path, needle, r.body);
    sv_resp_free(&r);
}

/* The integer member key of o (fails the test when it is not one). */
static inline long long sv_jint(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("member %s is not an integer", key);
    return (long long)json_integer_value(v);
}

#endif
