/* json_text.c - JSON syntax check and JS-style compact serializer; see json_text.h. */
#include "util/json_text.h"
#include "util/numtext.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- syntax check ------------------------------------------------------------------ */

#define CHECK_DEPTH_CAP 4096

static int fail(ferryx_json_check_error *e, size_t off, const char *why) {
    if (e) {
        e->offset = off;
        e->reason = why;
    }
    return -1;
}

static size_t skip_ws(const unsigned char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* s[i] is the opening quote; returns the index after the closing quote, or (size_t)-1. */
static size_t scan_string(const unsigned char *s, size_t n, size_t i, ferryx_json_check_error *e) {
    i++;
    for (;;) {
        /* fast path: plain ASCII */
        while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
            i++;
        if (i >= n) {
            fail(e, i, "unterminated string");
            return (size_t)-1;
        }
        unsigned char c = s[i];
        if (c == '"') return i + 1;
        if (c == '\\') {
            if (i + 1 >= n) {
                fail(e, i, "unterminated string");
                return (size_t)-1;
            }
            unsigned char x = s[i + 1];
            if (x == 'u') {
                if (i + 6 > n || hexval(s[i + 2]) < 0 || hexval(s[i + 3]) < 0 ||
                    hexval(s[i + 4]) < 0 || hexval(s[i + 5]) < 0) {
                    fail(e, i, "bad \\u escape");
                    return (size_t)-1;
                }
                i += 6;
            } else if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' ||
                       x == 'r' || x == 't') {
                i += 2;
            } else {
                fail(e, i, "bad escape in string");
                return (size_t)-1;
            }
        } else if (c < 0x20) {
            fail(e, i, "control character in string");
            return (size_t)-1;
        } else {
            size_t len = ferryx_utf8_seq(s + i, n - i);
            if (!len) {
                fail(e, i, "invalid UTF-8");
                return (size_t)-1;
            }
            i += len;
        }
    }
}

static size_t scan_number(const unsigned char *s, size_t n, size_t i, ferryx_json_check_error *e) {
    size_t start = i;
    if (s[i] == '-') i++;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        fail(e, start, "bad number");
        return (size_t)-1;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9') {
            fail(e, start, "bad number");
            return (size_t)-1;
        }
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || s[i] < '0' || s[i] > '9') {
            fail(e, start, "bad number");
            return (size_t)-1;
        }
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    }
    return i;
}

int ferryx_json_check(const char *text, size_t n, int max_depth, ferryx_json_check_error *e) {
    const unsigned char *s = (const unsigned char *)text;
    char stack[CHECK_DEPTH_CAP];
    int depth = 0;
    if (max_depth < 1 || max_depth > CHECK_DEPTH_CAP) max_depth = CHECK_DEPTH_CAP;
    size_t i = skip_ws(s, n, 0);

value:
    if (i >= n) return fail(e, i, "unexpected end of input");
    switch (s[i]) {
    case '{':
    case '[':
        if (depth >= max_depth) return fail(e, i, "nested too deeply");
        stack[depth++] = (char)s[i];
        i = skip_ws(s, n, i + 1);
        if (i < n && s[i] == (stack[depth - 1] == '{' ? '}' : ']')) {
            depth--;
            i++;
            goto after;
        }
        if (stack[depth - 1] == '[') goto value;
        goto key;
    case '"':
        i = scan_string(s, n, i, e);
        if (i == (size_t)-1) return -1;
        goto after;
    case 't':
        if (n - i < 4 || memcmp(s + i, "true", 4)) return fail(e, i, "unexpected character");
        i += 4;
        goto after;
    case 'f':
        if (n - i < 5 || memcmp(s + i, "false", 5)) return fail(e, i, "unexpected character");
        i += 5;
        goto after;
    case 'n':
        if (n - i < 4 || memcmp(s + i, "null", 4)) return fail(e, i, "unexpected character");
        i += 4;
        goto after;
    default:
        if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
            i = scan_number(s, n, i, e);
            if (i == (size_t)-1) return -1;
            goto after;
        }
        return fail(e, i, "unexpected character");
    }

key:
    if (i >= n || s[i] != '"') return fail(e, i, "expected a string key");
    i = scan_string(s, n, i, e);
    if (i == (size_t)-1) return -1;
    i = skip_ws(s, n, i);
    if (i >= n || s[i] != ':') return fail(e, i, "expected ':'");
    i = skip_ws(s, n, i + 1);
    goto value;

after:
    i = skip_ws(s, n, i);
    if (depth == 0) {
        if (i != n) return fail(e, i, "trailing characters after the value");
        return 0;
    }
    if (i >= n) return fail(e, i, "unexpected end of input");
    if (s[i] == ',') {
        i = skip_ws(s, n, i + 1);
        if (stack[depth - 1] == '{') goto key;
        goto value;
    }
    if (s[i] == (stack[depth - 1] == '{' ? '}' : ']')) {
        depth--;
        i++;
        goto after;
    }
    return fail(e, i, stack[depth - 1] == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
}

/* ---- what PostgreSQL's jsonb input refuses ------------------------------------------- */

/* numeric (PostgreSQL's numeric.c): the weight of the first base-10000 digit is an int16,
 * the display scale 14 bits, and the exponent is refused from INT_MAX / 2 on before
 * anything else (PostgreSQL 13-15; 16 accepts exactly INT_MAX / 2, a zero only). */
#define PG_NUMERIC_WEIGHT_MAX 32767
#define PG_NUMERIC_DSCALE_MAX 16383
#define PG_NUMERIC_EXPONENT_LIMIT 1073741823LL

static int is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

/* s[i] starts a number that ferryx_json_check accepted; returns the index after it, or
 * (size_t)-1 when numeric cannot hold it. */
static size_t jsonb_number(const unsigned char *s, size_t n, size_t i, ferryx_json_check_error *e) {
    size_t start = i;
    if (s[i] == '-') i++;
    size_t ibeg = i;
    while (i < n && is_digit(s[i]))
        i++;
    size_t iend = i, fbeg = i, fend = i;
    if (i < n && s[i] == '.') {
        fbeg = ++i;
        while (i < n && is_digit(s[i]))
            i++;
        fend = i;
    }
    long long x = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int neg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
        while (i < n && is_digit(s[i])) {
            if (x < PG_NUMERIC_EXPONENT_LIMIT) x = x * 10 + (s[i] - '0'); /* saturates above */
            i++;
        }
        if (x >= PG_NUMERIC_EXPONENT_LIMIT) {
            fail(e, start, "number's exponent is out of PostgreSQL numeric's range");
            return (size_t)-1;
        }
        if (neg) x = -x;
    }
    /* digits after the decimal point once the exponent is applied (trailing zeros count) */
    long long dscale = (long long)(fend - fbeg) - x;
    if (dscale > PG_NUMERIC_DSCALE_MAX) {
        fail(e, start,
             "number has more than 16383 digits after the decimal point (PostgreSQL numeric's "
             "limit)");
        return (size_t)-1;
    }
    /* decimal exponent of the first non-zero digit; a zero has none and fits */
    long long lead;
    size_t k = ibeg;
    while (k < iend && s[k] == '0')
        k++;
    if (k < iend) {
        lead = (long long)(iend - 1 - k) + x;
    } else {
        k = fbeg;
        while (k < fend && s[k] == '0')
            k++;
        if (k == fend) return i;
        lead = -(long long)(k - fbeg + 1) + x;
    }
    /* weight = floor(lead / 4). Below -32768 would need more than 16383 decimals: refused
     * above already. */
    long long weight = lead >= 0 ? lead / 4 : -((-lead + 3) / 4);
    if (weight > PG_NUMERIC_WEIGHT_MAX) {
        fail(e, start,
             "number is 10^131072 or more (PostgreSQL numeric's limit: 131072 digits before the "
             "decimal point)");
        return (size_t)-1;
    }
    return i;
}

static unsigned escape_value(const unsigned char *s) {
    return (unsigned)(hexval(s[0]) << 12 | hexval(s[1]) << 8 | hexval(s[2]) << 4 | hexval(s[3]));
}

/* s[i] is a string's opening quote (a string ferryx_json_check accepted); returns the index
 * after the closing quote, or (size_t)-1 on an escape jsonb refuses. */
static size_t jsonb_string(const unsigned char *s, size_t n, size_t i, ferryx_json_check_error *e) {
    i++;
    while (i < n && s[i] != '"') {
        if (s[i] != '\\') {
            i++;
            continue;
        }
        if (s[i + 1] != 'u') {
            i += 2;
            continue;
        }
        unsigned cp = escape_value(s + i + 2);
        if (cp == 0) {
            fail(e, i, "\\u0000 in a string (PostgreSQL jsonb cannot store it)");
            return (size_t)-1;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(e, i,
                 "\\uDC00-\\uDFFF escape without a \\uD800-\\uDBFF escape before it (a lone "
                 "UTF-16 surrogate, which PostgreSQL jsonb refuses)");
            return (size_t)-1;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo =
                i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' ? escape_value(s + i + 8) : 0;
            if (lo < 0xDC00 || lo > 0xDFFF) {
                fail(e, i,
                     "\\uD800-\\uDBFF escape not followed by a \\uDC00-\\uDFFF escape (a lone "
                     "UTF-16 surrogate, which PostgreSQL jsonb refuses)");
                return (size_t)-1;
            }
            i += 6; /* the pair */
        }
        i += 6;
    }
    return i + 1;
}

int ferryx_jsonb_check(const char *text, size_t n, ferryx_json_check_error *e) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        if (s[i] == '"') {
            i = jsonb_string(s, n, i, e);
        } else if (s[i] == '-' || is_digit(s[i])) {
            i = jsonb_number(s, n, i, e);
        } else {
            i++; /* structure, blanks, true/false/null */
        }
        if (i == (size_t)-1) return -1;
    }
    return 0;
}

int ferryx_utf8_valid(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = ferryx_utf8_seq(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

int ferryx_json_depth(const char *text, size_t n, int limit) {
    const unsigned char *s = (const unsigned char *)text;
    int depth = 0, max = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max) {
                max = depth;
                if (max > limit) return max;
            }
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return max;
}

size_t ferryx_json_value_end(const char *s, size_t n, size_t i) {
    int depth = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
            if (depth == 0) return i < n ? i + 1 : n;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (--depth <= 0) return i + 1;
        } else if (depth == 0 && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            /* a number or a literal: up to the next delimiter */
            while (i < n && s[i] != ',' && s[i] != ']' && s[i] != '}' && s[i] != ' ' &&
                   s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
                i++;
            return i;
        }
    }
    return n;
}

/* ---- serializer -------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap, max;
    int bad; /* out of memory or over max */
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->bad) return;
    if (b->len + n + 1 > b->max) {
        b->bad = 1;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->bad = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    sb_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char u[6];
        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[c >> 4], u[5] = hex[c & 15];
        } else {
            run++;
            continue;
        }
        sb_put(b, s + i - run, run);
        run = 0;
        if (esc)
            sb_put(b, esc, strlen(esc));
        else
            sb_put(b, u, 6);
    }
    sb_put(b, s + n - run, run);
    sb_put(b, "\"", 1);
}

/* Numbers as JavaScript prints them: integral doubles below 2^53 without a fraction,
 * otherwise the shortest of %.15g..%.17g that reads back to the same double. */
static void sb_real(sbuf *b, double v) {
    char t[40];
    if (!isfinite(v)) {
        sb_put(b, "null", 4); /* what JSON.stringify does; jansson never parses these */
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        int n = snprintf(t, sizeof t, "%lld", (long long)v);
        sb_put(b, t, (size_t)n);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        int n = ferryx_fmt_g(t, sizeof t, prec, v);
        if (prec == 17 || ferryx_strtod_c(t, NULL) == v) {
            sb_put(b, t, (size_t)n);
            return;
        }
    }
}

static void sb_value(sbuf *b, const json_t *v, int drop_nulls) {
    char t[32];
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        size_t klen;
        json_t *m;
        int first = 1;
        sb_put(b, "{", 1);
        json_object_keylen_foreach((json_t *)v, k, klen, m) {
            if (drop_nulls && json_is_null(m)) continue;
            if (!first) sb_put(b, ",", 1);
            first = 0;
            sb_str(b, k, klen);
            sb_put(b, ":", 1);
            sb_value(b, m, drop_nulls);
        }
        sb_put(b, "}", 1);
        break;
    }
    case JSON_ARRAY: {
        sb_put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) sb_put(b, ",", 1);
            sb_value(b, json_array_get(v, i), drop_nulls);
        }
        sb_put(b, "]", 1);
        break;
    }
    case JSON_STRING:
        sb_str(b, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER: {
        int n = snprintf(t, sizeof t, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        sb_put(b, t, (size_t)n);
        break;
    }
    case JSON_REAL:
        sb_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        sb_put(b, "true", 4);
        break;
    case JSON_FALSE:
        sb_put(b, "false", 5);
        break;
    case JSON_NULL:
        sb_put(b, "null", 4);
        break;
    }
}

char *ferryx_json_serialize(const json_t *v, int drop_nulls, size_t max_len) {
    sbuf b = {NULL, 0, 0, max_len + 1, 0};
    sb_value(&b, v, drop_nulls);
    if (b.bad || !b.p) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
