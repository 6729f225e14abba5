/* scripts.c - registry of the Lua scripts embedded at build time: lookup by name and the
 * SHA-1 each EVALSHA needs, computed once per process. */
#include "redis/scripts.h"

#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>

/* Defined in the generated lua_scripts.c (cmake/embed_lua.cmake). */
extern ferry_script ferry__scripts[];
extern const size_t ferry__scripts_count;

static pthread_once_t hash_once = PTHREAD_ONCE_INIT;

static int sha1_hex(const char *src, size_t len, char out[41]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (!EVP_Digest(src, len, md, &mdlen, EVP_sha1(), NULL) || mdlen != 20) {
        out[0] = '\0';
        return -1;
    }
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
    return 0;
}

/* Written once under pthread_once, read-only afterwards: readers need no lock. */
static void hash_all(void) {
    for (size_t i = 0; i < ferry__scripts_count; i++)
        (void)sha1_hex(ferry__scripts[i].source, ferry__scripts[i].source_len,
                       ferry__scripts[i].sha1);
}

const ferry_script *ferry__scripts_all(size_t *count) {
    pthread_once(&hash_once, hash_all);
    *count = ferry__scripts_count;
    return ferry__scripts;
}

const ferry_script *ferry__script_get(const char *name) {
    if (!name) return NULL;
    size_t n;
    const ferry_script *all = ferry__scripts_all(&n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0) return &all[i];
    return NULL;
}

int ferry__script_sha1(const ferry_script *s, char out[41]) {
    if (s->sha1[0]) {
        memcpy(out, s->sha1, 41);
        out[40] = '\0';
        return 0;
    }
    return sha1_hex(s->source, s->source_len, out) == 0 ? 0 : FERRY_EINVAL;
}
