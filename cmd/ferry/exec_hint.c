/* exec_hint.c - the delay hint a command that exits 118 / 119 prints (FERRY_RETRY_AFTER_MS=
 * or Retry-After:), read from its output (see exec_job.h). Pure. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "exec_job.h"
#include "ferry/http_classify.h"

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Quote up to 64 bytes of a bad value for a failure reason; controls become '?'. */
static void quote_value(char *dst, size_t cap, const char *v, size_t n) {
    size_t k = 0, lim = n > 64 ? 64 : n;
    for (size_t i = 0; i < lim && k + 5 < cap; i++)
        dst[k++] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
    if (lim < n && k + 4 < cap) {
        memcpy(dst + k, "...", 3);
        k += 3;
    }
    dst[k] = 0;
}

int exec_delay_hint(const char *out, size_t len, long long *delay_ms, char *why, size_t whycap) {
    if (!out) return 0;
    while (len && is_blank(out[len - 1]))
        len--;
    size_t start = len;
    while (start && out[start - 1] != '\n')
        start--;
    const char *line = out + start;
    size_t n = len - start;
    size_t klen = strlen(EXEC_HINT_MS_KEY), hlen = strlen(EXEC_HINT_HEADER);
    if (n >= klen && !memcmp(line, EXEC_HINT_MS_KEY, klen)) {
        const char *v = line + klen;
        size_t vn = n - klen;
        while (vn && is_blank(*v)) {
            v++;
            vn--;
        }
        long long ms = 0;
        size_t i = 0;
        for (; i < vn && v[i] >= '0' && v[i] <= '9'; i++)
            if ((ms = ms * 10 + (v[i] - '0')) > FERRY_RETRY_AFTER_MAX_MS)
                ms = FERRY_RETRY_AFTER_MAX_MS + 1; /* saturate: clamped below */
        if (i == 0 || i != vn) {
            char q[80];
            quote_value(q, sizeof q, v, vn);
            snprintf(why, whycap,
                     "invalid %s line: \"%s\" is not a whole number of milliseconds (digits "
                     "only; more than %lld counts as %lld)",
                     EXEC_HINT_MS_KEY "<ms>", q, FERRY_RETRY_AFTER_MAX_MS,
                     FERRY_RETRY_AFTER_MAX_MS);
            return -1;
        }
        *delay_ms = ms > FERRY_RETRY_AFTER_MAX_MS ? FERRY_RETRY_AFTER_MAX_MS : ms;
        return 1;
    }
    if (n >= hlen && !strncasecmp(line, EXEC_HINT_HEADER, hlen)) {
        char v[FERRY_RETRY_AFTER_MAX_LEN + 1];
        size_t vn = n - hlen;
        /* Longer than any valid value, or with a NUL inside: no hint (as an HTTP client
         * would ignore such a header). */
        if (vn > FERRY_RETRY_AFTER_MAX_LEN || memchr(line + hlen, 0, vn)) return 0;
        memcpy(v, line + hlen, vn);
        v[vn] = 0;
        return ferry_retry_after_parse_now(v, delay_ms) == 0 ? 1 : 0;
    }
    return 0;
}
