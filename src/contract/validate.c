/* validate.c - checking a payload against a compiled schema: the payload parsed once with
 * jansson (after a depth and UTF-8 check, so jansson never recurses deeper than the stated
 * bound), then walked against the cnodes, stopping at the first failure. A failure names
 * where (a JSON pointer) and which keyword, never a value. Pure: no I/O. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract_internal.h"
#include "util/json_text.h"
#include "util/numtext.h"
#include "util/uuid7.h"

/* ---- numbers and equality ------------------------------------------------------------ */

/* i <=> d, exactly (no rounding of i to a double). d is finite. */
static int cmp_int_real(long long i, double d) {
    if (d >= 9223372036854775808.0) return -1;
    if (d < -9223372036854775808.0) return 1;
    double fl = floor(d);
    long long f = (long long)fl;
    if (i < f) return -1;
    if (i > f) return 1;
    return d > fl ? -1 : 0;
}

int ferry__contract_num_cmp(const json_t *a, const json_t *b) {
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return (x > y) - (x < y);
    }
    if (json_is_integer(a)) return cmp_int_real(json_integer_value(a), json_real_value(b));
    if (json_is_integer(b)) return -cmp_int_real(json_integer_value(b), json_real_value(a));
    double x = json_real_value(a), y = json_real_value(b);
    return (x > y) - (x < y);
}

int ferry__contract_json_equal(const json_t *a, const json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return ferry__contract_num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b)) return 0;
        for (size_t i = 0; i < n; i++)
            if (!ferry__contract_json_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !ferry__contract_json_equal(v, w)) return 0;
        }
        return 1;
    }
    default: /* true, false, null: the type is the value */
        return 1;
    }
}

/* ---- parsing the payload ------------------------------------------------------------- */

static void set_verdict(ferry_contract_violation *v, const char *path, const char *kw) {
    if (!v) return;
    snprintf(v->path, sizeof v->path, "%s", path);
    snprintf(v->keyword, sizeof v->keyword, "%s", kw);
}

typedef struct dbuf {
    char *p;
    size_t n, cap;
} dbuf;

static int dbuf_add(dbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap : 256);
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

/* A copy of the (valid) JSON text s with every number jansson cannot hold rewritten: an
 * integer beyond int64 as the nearest double, a number beyond the double range as the
 * largest double of its sign. NULL when out of memory. */
static char *rewrite_numbers(const char *s, size_t n, size_t *outn) {
    dbuf b = {0};
    char *tok = NULL;
    size_t tokcap = 0, i = 0, from = 0;
    int in_str = 0;
    while (i < n) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            i++;
            continue;
        }
        if (c == '"') {
            in_str = 1;
            i++;
            continue;
        }
        if (c != '-' && (c < '0' || c > '9')) {
            i++;
            continue;
        }
        size_t start = i;
        int is_int = 1;
        while (i < n && strchr("0123456789+-.eE", s[i]) && s[i]) {
            if (s[i] == '.' || s[i] == 'e' || s[i] == 'E') is_int = 0;
            i++;
        }
        size_t len = i - start;
        if (len + 1 > tokcap) {
            char *t = realloc(tok, len + 1);
            if (!t) goto oom;
            tok = t;
            tokcap = len + 1;
        }
        memcpy(tok, s + start, len);
        tok[len] = 0;
        int rewrite = 0;
        errno = 0;
        if (is_int) {
            (void)strtoll(tok, NULL, 10);
            rewrite = errno == ERANGE;
        }
        errno = 0;
        double d = ferryx_strtod_c(tok, NULL);
        if (!is_int && errno == ERANGE && isinf(d)) rewrite = 1;
        if (!rewrite) continue;
        char num[40];
        if (isinf(d))
            snprintf(num, sizeof num, "%s1.7976931348623157e308", d < 0 ? "-" : "");
        else
            ferryx_fmt_g(num, sizeof num, 17, d);
        if (!strpbrk(num, ".eE")) strcat(num, ".0");
        if (dbuf_add(&b, s + from, start - from) || dbuf_add(&b, num, strlen(num))) goto oom;
        from = i;
    }
    if (dbuf_add(&b, s + from, n - from)) goto oom;
    free(tok);
    *outn = b.n;
    return b.p;
oom:
    free(tok);
    free(b.p);
    return NULL;
}

int ferry__contract_parse_payload(const char *s, size_t n, json_t **out,
                                  ferry_contract_violation *v) {
    *out = NULL;
    if (!s) s = "";
    if (ferryx_json_depth(s, n, FERRY_CONTRACT_PAYLOAD_DEPTH_MAX) >
        FERRY_CONTRACT_PAYLOAD_DEPTH_MAX) {
        set_verdict(v, "", "depth");
        return 1;
    }
    /* syntax and UTF-8 first: jansson then only meets text it can read */
    if (ferryx_json_check(s, n, FERRY_CONTRACT_PAYLOAD_DEPTH_MAX, NULL)) {
        set_verdict(v, "", "json");
        return 1;
    }
    json_error_t je;
    json_t *doc = json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!doc && json_error_code(&je) == json_error_numeric_overflow) {
        size_t m = 0;
        char *t = rewrite_numbers(s, n, &m);
        if (!t) return FERRY_ENOMEM;
        doc = json_loadb(t, m, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        free(t);
    }
    if (!doc) {
        if (json_error_code(&je) == json_error_out_of_memory) return FERRY_ENOMEM;
        /* a lone surrogate escape, or U+0000 in an object key: valid JSON text that jansson
         * cannot hold; refused as "json" (docs/contracts.md) */
        set_verdict(v, "", "json");
        return 1;
    }
    *out = doc;
    return 0;
}

/* ---- the walk ------------------------------------------------------------------------ */

typedef struct seg {
    const char *key; /* NULL: an array index */
    size_t index;
} seg;

typedef struct vctx {
    const ferry_contract *c;
    ferry_contract_violation *v;
    pcre2_match_data *md;
    int oom;
    int nseg;
    seg segs[FERRY_CONTRACT_DEPTH_MAX + 2];
} vctx;

/* Append text to the verdict's path, escaped per RFC 6901 when it is a key; 0 when full. */
static int path_add(char *p, size_t *len, const char *s, int key) {
    for (; *s; s++) {
        const char *add = NULL;
        char one[2] = {*s, 0};
        if (key && *s == '~')
            add = "~0";
        else if (key && *s == '/')
            add = "~1";
        else
            add = one;
        size_t n = strlen(add);
        if (*len + n + 4 > FERRY_CONTRACT_PATH_MAX) return 0; /* room for "..." */
        memcpy(p + *len, add, n);
        *len += n;
    }
    return 1;
}

static int fail(vctx *x, const char *kw) {
    if (!x->v) return 1;
    char *p = x->v->path;
    size_t len = 0;
    for (int i = 0; i < x->nseg; i++) {
        char idx[32];
        const seg *s = &x->segs[i];
        if (!s->key) snprintf(idx, sizeof idx, "%zu", s->index);
        if (!path_add(p, &len, "/", 0) || !path_add(p, &len, s->key ? s->key : idx, !!s->key)) {
            memcpy(p + len, "...", 3);
            len += 3;
            break;
        }
    }
    p[len] = 0;
    snprintf(x->v->keyword, sizeof x->v->keyword, "%s", kw);
    return 1;
}

static int validate(vctx *x, const cnode *n, const json_t *j, const char *parent_kw);

/* Validate a child instance under one more path segment. */
static int child(vctx *x, const cnode *n, const json_t *j, const char *key, size_t index,
                 const char *kw) {
    x->segs[x->nseg].key = key;
    x->segs[x->nseg].index = index;
    x->nseg++;
    int rc = validate(x, n, j, kw);
    x->nseg--;
    return rc;
}

static int is_integral(const json_t *j) {
    if (json_is_integer(j)) return 1;
    double d = json_real_value(j);
    return d == floor(d);
}

static unsigned type_bits(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_NULL:
        return CT_NULL;
    case JSON_TRUE:
    case JSON_FALSE:
        return CT_BOOLEAN;
    case JSON_OBJECT:
        return CT_OBJECT;
    case JSON_ARRAY:
        return CT_ARRAY;
    case JSON_STRING:
        return CT_STRING;
    default:
        return CT_NUMBER | (is_integral(j) ? CT_INTEGER : 0);
    }
}

static long long code_points(const char *s, size_t n) {
    long long c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) c++;
    return c;
}

static int check_string(vctx *x, const cnode *n, const json_t *j) {
    const char *s = json_string_value(j);
    size_t len = json_string_length(j);
    if (n->min_length >= 0 || n->max_length >= 0) {
        long long cp = code_points(s, len);
        if (n->min_length >= 0 && cp < n->min_length) return fail(x, "minLength");
        if (n->max_length >= 0 && cp > n->max_length) return fail(x, "maxLength");
    }
    if (n->pattern) {
        if (!x->md && !(x->md = pcre2_match_data_create(1, NULL))) {
            x->oom = 1;
            return 1;
        }
        /* strings from jansson are valid UTF-8: no second check. A match over the limits
         * (FERRY_CONTRACT_MATCH_LIMIT) counts as no match. */
        int rc =
            pcre2_match(n->pattern, (PCRE2_SPTR)s, len, 0, PCRE2_NO_UTF_CHECK, x->md, x->c->mctx);
        if (rc == PCRE2_ERROR_NOMEMORY) {
            x->oom = 1;
            return 1;
        }
        if (rc < 0) return fail(x, "pattern");
    }
    if (n->format == CF_DATE_TIME && !ferry__contract_is_date_time(s, len))
        return fail(x, "format");
    if (n->format == CF_UUID && !ferry__uuid_text_valid(s, len)) return fail(x, "format");
    return 0;
}

static int check_object(vctx *x, const cnode *n, const json_t *j) {
    if (n->required) {
        size_t i;
        json_t *r;
        json_array_foreach(n->required, i, r) {
            if (!json_object_get(j, json_string_value(r))) {
                x->segs[x->nseg].key = json_string_value(r);
                x->nseg++;
                fail(x, "required");
                x->nseg--;
                return 1;
            }
        }
    }
    for (size_t i = 0; i < n->nprops; i++) {
        json_t *m = json_object_get(j, n->props[i].name);
        if (m && child(x, n->props[i].schema, m, n->props[i].name, 0, "properties")) return 1;
    }
    if (n->additional && n->additional->boolean != 1) {
        const char *k;
        json_t *m;
        json_object_foreach((json_t *)j, k, m) {
            if (n->props_obj && json_object_get(n->props_obj, k)) continue;
            if (child(x, n->additional, m, k, 0, "additionalProperties")) return 1;
        }
    }
    return 0;
}

static int check_array(vctx *x, const cnode *n, const json_t *j) {
    size_t cnt = json_array_size(j);
    if (n->max_items >= 0 && (unsigned long long)cnt > (unsigned long long)n->max_items)
        return fail(x, "maxItems");
    if (n->items && n->items->boolean != 1) {
        for (size_t i = 0; i < cnt; i++)
            if (child(x, n->items, json_array_get(j, i), NULL, i, "items")) return 1;
    }
    for (size_t i = 0; i < n->ntuple && i < cnt; i++)
        if (child(x, n->tuple[i], json_array_get(j, i), NULL, i, "items")) return 1;
    return 0;
}

static int validate(vctx *x, const cnode *n, const json_t *j, const char *parent_kw) {
    if (n->boolean == 1) return 0;
    if (n->boolean == 0) return fail(x, parent_kw ? parent_kw : "false");
    if (n->types) {
        unsigned t = type_bits(j);
        if (!(t & n->types)) return fail(x, "type");
    }
    if (n->enum_values) {
        size_t i, hit = 0;
        json_t *e;
        json_array_foreach(n->enum_values, i, e) {
            if (ferry__contract_json_equal(e, j)) {
                hit = 1;
                break;
            }
        }
        if (!hit) return fail(x, "enum");
    }
    if (n->has_const && !ferry__contract_json_equal(n->const_value, j)) return fail(x, "const");
    switch (json_typeof(j)) {
    case JSON_STRING:
        return check_string(x, n, j);
    case JSON_INTEGER:
    case JSON_REAL:
        if (n->minimum && ferry__contract_num_cmp(j, n->minimum) < 0) return fail(x, "minimum");
        if (n->maximum && ferry__contract_num_cmp(j, n->maximum) > 0) return fail(x, "maximum");
        return 0;
    case JSON_OBJECT:
        return check_object(x, n, j);
    case JSON_ARRAY:
        return check_array(x, n, j);
    default:
        return 0;
    }
}

int ferry__contract_validate_value(const ferry_contract *c, const json_t *value,
                                   ferry_contract_violation *v) {
    vctx x = {.c = c, .v = v};
    int rc = validate(&x, c->root, value, NULL);
    pcre2_match_data_free(x.md);
    if (x.oom) return FERRY_ENOMEM;
    return rc;
}

int ferry_contract_validate(const ferry_contract *c, const char *json, size_t len,
                            ferry_contract_violation *v) {
    if (!c || (!json && len)) return FERRY_EINVAL;
    json_t *doc = NULL;
    int rc = ferry__contract_parse_payload(json, len, &doc, v);
    if (rc) return rc;
    rc = ferry__contract_validate_value(c, doc, v);
    json_decref(doc);
    return rc;
}
