/* fuzz_admin.c - libFuzzer target for `ferry serve`'s parsers: the token file
 * (ferry_admin_tokens_parse), the request path split into percent-decoded segments
 * (ferry__admin_split_path), a query value's decoding (ferry__admin_decode), the listen
 * address (ferry__listen_addr_parse) and the API's time and duration parameters
 * (ferry__api_parse_time / _duration). The first byte picks the parser; the rest is the
 * input. Beyond "no crash, no leak, no UB" it checks their promises: a decoded segment or
 * value is valid UTF-8 without NUL, a refusal comes with a message, a token set never holds
 * more than its bound, a duration is never negative. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "admin/framework.h"
#include "ferry/admin.h"
#include "util/listen_addr.h"
#include "util/utf8.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

/* s[0..n) is valid UTF-8 and holds no NUL */
static int text_ok(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] ? ferryx_utf8_seq(u + i, n - i) : 0;
        if (!k) return 0;
        i += k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int which = data[0] % 5;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    char *s = malloc(n + 1); /* a NUL-terminated copy for the string parsers */
    if (!s) return 0;
    memcpy(s, in, n);
    s[n] = '\0';
    char msg[700];
    ferry_error e = {0};
    if (which == 0) {
        ferry_admin_tokens *t = NULL;
        int rc = ferry_admin_tokens_parse(in, n, "fuzz.tokens", &t, &e);
        if (rc) {
            check(t == NULL && e.code == rc && e.message[0]);
        } else {
            check(t != NULL);
            ferry_admin_tokens_free(t);
        }
    } else if (which == 1) {
        char *segs[16];
        int k = ferry__admin_split_path(s, segs, 16, msg, sizeof msg);
        if (k < 0) {
            check(msg[0] != '\0');
        } else {
            for (int i = 0; i < k; i++) {
                size_t len = strlen(segs[i]);
                check(text_ok(segs[i], len));
                free(segs[i]);
            }
        }
    } else if (which == 2) {
        char *v = ferry__admin_decode(in, n, 1, msg, sizeof msg);
        if (v) {
            check(text_ok(v, strlen(v)));
            free(v);
        } else {
            check(msg[0] != '\0');
        }
    } else if (which == 3) {
        struct sockaddr_storage ss;
        socklen_t sl = 0;
        int rc = ferry__listen_addr_parse("fuzz", s, &ss, &sl, &e);
        if (rc)
            check(rc == FERRY_EINVAL && !strncmp(e.message, "fuzz", 4));
        else
            check(sl > 0 && (ss.ss_family == AF_INET || ss.ss_family == AF_INET6));
    } else {
        long long ms = 0;
        if (ferry__api_parse_duration(s, &ms) == 0) check(ms >= 0);
        (void)ferry__api_parse_time(s, &ms);
    }
    free(s);
    return 0;
}
