/* schema.c - loading a schema: the JSON text parsed with jansson, then compiled into cnodes
 * (contract_internal.h) while every keyword is checked against the supported subset of
 * draft-07 (docs/contracts.md). Anything outside the subset is refused with the keyword and
 * its JSON pointer in the schema, so a contract never means less than it says. Pure: no I/O. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract_internal.h"
#include "util/error.h"
#include "util/json_text.h"
#include "util/printable.h"

#define SUPPORTED_LIST                                                                             \
    "type, properties, required, additionalProperties, items, enum, const, minLength, "            \
    "maxLength, minimum, maximum, maxItems, pattern, format; annotations $schema, $id, title, "    \
    "description, $comment, default, examples"

#define DRAFT7 7
#define D2020 2020

typedef struct cctx {
    ferry_error *err;
    char src[160];   /* the source, escaped */
    int dialect;     /* DRAFT7 (also when no $schema) or D2020 */
    char path[1024]; /* JSON pointer of the schema being compiled */
    size_t plen;
    int path_cut;
} cctx;

static int fail(cctx *x, int code, const char *fmt, ...) FERRY_PRINTF(3, 4);

static int fail(cctx *x, int code, const char *fmt, ...) {
    char what[FERRY_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char path[256];
    ferryx_printable(x->plen ? x->path : "(root)", path, sizeof path);
    return ferry__err(x->err, code, "contract %s: %s%s: %s", x->src, path, x->path_cut ? "..." : "",
                      what);
}

/* Append "/" + seg (escaped per RFC 6901) to the path; returns the length to restore. */
static size_t path_push(cctx *x, const char *seg) {
    size_t old = x->plen;
    char buf[8];
    const char *parts[2] = {"/", seg};
    for (int p = 0; p < 2; p++) {
        for (const char *s = parts[p]; *s; s++) {
            const char *add = buf;
            if (p == 1 && *s == '~')
                add = "~0";
            else if (p == 1 && *s == '/')
                add = "~1";
            else
                buf[0] = *s, buf[1] = 0;
            size_t n = strlen(add);
            if (x->plen + n >= sizeof x->path) {
                x->path_cut = 1;
                return old;
            }
            memcpy(x->path + x->plen, add, n + 1);
            x->plen += n;
        }
    }
    return old;
}

static void path_pop(cctx *x, size_t old) {
    x->plen = old;
    x->path[old] = 0;
    x->path_cut = 0;
}

static size_t path_push_index(cctx *x, size_t i) {
    char n[32];
    snprintf(n, sizeof n, "%zu", i);
    return path_push(x, n);
}

static void node_free(cnode *n) {
    if (!n) return;
    for (size_t i = 0; i < n->nprops; i++)
        node_free(n->props[i].schema);
    free(n->props);
    node_free(n->additional);
    node_free(n->items);
    for (size_t i = 0; i < n->ntuple; i++)
        node_free(n->tuple[i]);
    free(n->tuple);
    pcre2_code_free(n->pattern);
    free(n);
}

static const char *const ANNOTATIONS[] = {"$schema",  "$id",     "title",   "description",
                                          "$comment", "default", "examples"};

static int is_annotation(const char *k) {
    for (size_t i = 0; i < sizeof ANNOTATIONS / sizeof *ANNOTATIONS; i++)
        if (!strcmp(k, ANNOTATIONS[i])) return 1;
    return 0;
}

static int type_bit(const char *name) {
    static const struct {
        const char *name;
        int bit;
    } t[] = {{"null", CT_NULL},      {"boolean", CT_BOOLEAN}, {"object", CT_OBJECT},
             {"array", CT_ARRAY},    {"number", CT_NUMBER},   {"string", CT_STRING},
             {"integer", CT_INTEGER}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(name, t[i].name)) return t[i].bit;
    return 0;
}

static int compile_node(cctx *x, json_t *s, int depth, cnode **out);

/* A non-negative integer (2.0 counts, as draft-07 and its test suite want). */
static int count_value(cctx *x, const char *kw, json_t *v, long long *out) {
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= 0 && d == floor(d)) {
            *out = d >= 9.2e18 ? LLONG_MAX : (long long)d;
            return 0;
        }
    }
    return fail(x, FERRY_EINVAL, "\"%s\" must be a non-negative integer", kw);
}

static int compile_type(cctx *x, cnode *n, json_t *v) {
    if (json_is_string(v)) {
        int b = type_bit(json_string_value(v));
        if (!b) {
            char name[64];
            ferryx_printable(json_string_value(v), name, sizeof name);
            return fail(x, FERRY_EINVAL, "\"type\" \"%s\" is not a JSON Schema type", name);
        }
        n->types = (unsigned)b;
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) == 0)
        return fail(x, FERRY_EINVAL, "\"type\" must be a type name or a non-empty array of them");
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        int b = json_is_string(e) ? type_bit(json_string_value(e)) : 0;
        if (!b) return fail(x, FERRY_EINVAL, "\"type\" item %zu is not a JSON Schema type name", i);
        if (n->types & (unsigned)b)
            return fail(x, FERRY_EINVAL, "\"type\" names a type twice (item %zu)", i);
        n->types |= (unsigned)b;
    }
    return 0;
}

static int compile_properties(cctx *x, cnode *n, json_t *v, int depth) {
    if (!json_is_object(v)) return fail(x, FERRY_EINVAL, "\"properties\" must be an object");
    size_t cnt = json_object_size(v);
    if (cnt && !(n->props = calloc(cnt, sizeof *n->props)))
        return fail(x, FERRY_ENOMEM, "out of memory");
    n->props_obj = v;
    const char *key;
    json_t *sub;
    json_object_foreach(v, key, sub) {
        size_t old = path_push(x, key);
        cnode *c = NULL;
        int rc = compile_node(x, sub, depth + 1, &c);
        path_pop(x, old);
        if (rc) return rc;
        n->props[n->nprops].name = key;
        n->props[n->nprops++].schema = c;
    }
    return 0;
}

static int compile_required(cctx *x, cnode *n, json_t *v) {
    if (!json_is_array(v)) return fail(x, FERRY_EINVAL, "\"required\" must be an array of strings");
    size_t i, j;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e))
            return fail(x, FERRY_EINVAL, "\"required\" item %zu is not a string", i);
        for (j = 0; j < i; j++)
            if (ferry__contract_json_equal(json_array_get(v, j), e))
                return fail(x, FERRY_EINVAL, "\"required\" names a property twice (item %zu)", i);
    }
    n->required = v;
    return 0;
}

static int compile_items(cctx *x, cnode *n, json_t *v, int depth) {
    if (!json_is_array(v)) return compile_node(x, v, depth + 1, &n->items);
    if (x->dialect == D2020)
        return fail(x, FERRY_EINVAL,
                    "\"items\" as an array is draft-07's tuple form; under 2020-12 \"items\" takes "
                    "one schema (and \"prefixItems\" is not supported)");
    size_t cnt = json_array_size(v);
    n->has_tuple = 1;
    if (cnt && !(n->tuple = calloc(cnt, sizeof *n->tuple)))
        return fail(x, FERRY_ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt; i++) {
        size_t old = path_push_index(x, i);
        int rc = compile_node(x, json_array_get(v, i), depth + 1, &n->tuple[i]);
        path_pop(x, old);
        if (rc) return rc;
        n->ntuple++;
    }
    return 0;
}

static int compile_pattern(cctx *x, cnode *n, json_t *v) {
    if (!json_is_string(v)) return fail(x, FERRY_EINVAL, "\"pattern\" must be a string");
    size_t len = json_string_length(v);
    if (len > FERRY_CONTRACT_PATTERN_MAX)
        return fail(x, FERRY_EINVAL,
                    "\"pattern\" is longer than %d bytes (FERRY_CONTRACT_PATTERN_MAX)",
                    FERRY_CONTRACT_PATTERN_MAX);
    int ec = 0;
    PCRE2_SIZE off = 0;
    n->pattern =
        pcre2_compile((PCRE2_SPTR)json_string_value(v), len,
                      PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C,
                      &ec, &off, NULL);
    if (!n->pattern) {
        if (ec == PCRE2_ERROR_NOMEMORY) return fail(x, FERRY_ENOMEM, "out of memory");
        PCRE2_UCHAR msg[160];
        if (pcre2_get_error_message(ec, msg, sizeof msg) < 0) strcpy((char *)msg, "error");
        return fail(x, FERRY_EINVAL, "\"pattern\" does not compile (PCRE2 at offset %zu: %s)",
                    (size_t)off, (const char *)msg);
    }
    return 0;
}

static int compile_format(cctx *x, cnode *n, json_t *v) {
    if (!json_is_string(v)) return fail(x, FERRY_EINVAL, "\"format\" must be a string");
    const char *f = json_string_value(v);
    if (!strcmp(f, "date-time")) {
        n->format = CF_DATE_TIME;
        return 0;
    }
    if (!strcmp(f, "uuid")) {
        n->format = CF_UUID;
        return 0;
    }
    char name[64];
    ferryx_printable(f, name, sizeof name);
    return fail(x, FERRY_EINVAL, "\"format\" \"%s\" is not supported (supported: date-time, uuid)",
                name);
}

/* $schema: the dialects of the subset. Returns DRAFT7, D2020 or 0. */
static int dialect_of(const char *uri) {
    if (!strcmp(uri, "http://json-schema.org/draft-07/schema#") ||
        !strcmp(uri, "http://json-schema.org/draft-07/schema"))
        return DRAFT7;
    if (!strcmp(uri, "https://json-schema.org/draft/2020-12/schema")) return D2020;
    return 0;
}

static int compile_annotation(cctx *x, const char *k, json_t *v) {
    if (!strcmp(k, "$schema")) {
        if (!json_is_string(v) || !dialect_of(json_string_value(v)))
            return fail(x, FERRY_EINVAL,
                        "\"$schema\" must be draft-07 (http://json-schema.org/draft-07/schema#) or "
                        "2020-12 (https://json-schema.org/draft/2020-12/schema)");
        return 0;
    }
    if (!strcmp(k, "default")) return 0;
    if (!strcmp(k, "examples")) {
        if (!json_is_array(v)) return fail(x, FERRY_EINVAL, "\"examples\" must be an array");
        return 0;
    }
    if (!json_is_string(v)) return fail(x, FERRY_EINVAL, "\"%s\" must be a string", k);
    return 0;
}

static int compile_keyword(cctx *x, cnode *n, const char *k, json_t *v, int depth) {
    if (is_annotation(k)) return compile_annotation(x, k, v);
    size_t old = path_push(x, k);
    int rc = 0;
    if (!strcmp(k, "type")) {
        rc = compile_type(x, n, v);
    } else if (!strcmp(k, "properties")) {
        rc = compile_properties(x, n, v, depth);
    } else if (!strcmp(k, "required")) {
        rc = compile_required(x, n, v);
    } else if (!strcmp(k, "additionalProperties")) {
        rc = compile_node(x, v, depth + 1, &n->additional);
    } else if (!strcmp(k, "items")) {
        rc = compile_items(x, n, v, depth);
    } else if (!strcmp(k, "enum")) {
        if (!json_is_array(v)) rc = fail(x, FERRY_EINVAL, "\"enum\" must be an array");
        n->enum_values = v;
    } else if (!strcmp(k, "const")) {
        n->const_value = v;
        n->has_const = 1;
    } else if (!strcmp(k, "minLength")) {
        rc = count_value(x, k, v, &n->min_length);
    } else if (!strcmp(k, "maxLength")) {
        rc = count_value(x, k, v, &n->max_length);
    } else if (!strcmp(k, "maxItems")) {
        rc = count_value(x, k, v, &n->max_items);
    } else if (!strcmp(k, "minimum") || !strcmp(k, "maximum")) {
        if (!json_is_number(v))
            rc = fail(x, FERRY_EINVAL, "\"%s\" must be a number", k);
        else if (k[1] == 'i')
            n->minimum = v;
        else
            n->maximum = v;
    } else if (!strcmp(k, "pattern")) {
        rc = compile_pattern(x, n, v);
    } else if (!strcmp(k, "format")) {
        rc = compile_format(x, n, v);
    } else {
        path_pop(x, old);
        char name[80];
        ferryx_printable(k, name, sizeof name);
        return fail(x, FERRY_EINVAL,
                    "keyword \"%s\" is not supported (supported: " SUPPORTED_LIST ")", name);
    }
    path_pop(x, old);
    return rc;
}

static int compile_node(cctx *x, json_t *s, int depth, cnode **out) {
    *out = NULL;
    if (depth > FERRY_CONTRACT_DEPTH_MAX)
        return fail(x, FERRY_EINVAL,
                    "schemas nest deeper than %d levels (FERRY_CONTRACT_DEPTH_MAX)",
                    FERRY_CONTRACT_DEPTH_MAX);
    if (!json_is_boolean(s) && !json_is_object(s))
        return fail(x, FERRY_EINVAL, "a schema must be an object or a boolean");
    cnode *n = calloc(1, sizeof *n);
    if (!n) return fail(x, FERRY_ENOMEM, "out of memory");
    n->min_length = n->max_length = n->max_items = -1;
    if (json_is_boolean(s)) {
        n->boolean = json_is_true(s);
        *out = n;
        return 0;
    }
    n->boolean = -1;
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        int rc = compile_keyword(x, n, k, v, depth);
        if (rc) {
            node_free(n);
            return rc;
        }
    }
    *out = n;
    return 0;
}

int ferry_contract_parse(const char *json, size_t len, const char *source, ferry_contract **out,
                         ferry_error *err) {
    if (out) *out = NULL;
    cctx x = {.err = err, .dialect = DRAFT7};
    ferryx_printable(source ? source : "schema", x.src, sizeof x.src);
    if (!out || (!json && len)) return fail(&x, FERRY_EINVAL, "NULL argument");
    if (len > FERRY_CONTRACT_SCHEMA_MAX_BYTES)
        return fail(&x, FERRY_ETOOBIG,
                    "the schema is larger than %u bytes "
                    "(FERRY_CONTRACT_SCHEMA_MAX_BYTES)",
                    FERRY_CONTRACT_SCHEMA_MAX_BYTES);
    if (ferryx_json_depth(json, len, FERRY_CONTRACT_JSON_DEPTH_MAX) > FERRY_CONTRACT_JSON_DEPTH_MAX)
        return fail(&x, FERRY_EINVAL,
                    "the schema nests deeper than %d levels "
                    "(FERRY_CONTRACT_JSON_DEPTH_MAX)",
                    FERRY_CONTRACT_JSON_DEPTH_MAX);
    json_error_t je;
    json_t *doc = json_loadb(json ? json : "", len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!doc) {
        if (json_error_code(&je) == json_error_out_of_memory)
            return fail(&x, FERRY_ENOMEM, "out of memory");
        char why[200];
        ferryx_printable(je.text, why, sizeof why);
        return fail(&x, FERRY_EINVAL, "the schema is not JSON (line %d, column %d: %s)", je.line,
                    je.column, why);
    }
    if (json_is_object(doc)) {
        json_t *ds = json_object_get(doc, "$schema");
        if (ds && json_is_string(ds) && dialect_of(json_string_value(ds)) == D2020)
            x.dialect = D2020;
    }
    ferry_contract *c = calloc(1, sizeof *c);
    if (!c || !(c->source = strdup(source ? source : "schema"))) {
        free(c);
        json_decref(doc);
        return fail(&x, FERRY_ENOMEM, "out of memory");
    }
    c->doc = doc;
    int rc = compile_node(&x, doc, 1, &c->root);
    if (!rc && !(c->mctx = pcre2_match_context_create(NULL)))
        rc = fail(&x, FERRY_ENOMEM, "out of memory");
    if (rc) {
        ferry_contract_free(c);
        return rc;
    }
    pcre2_set_match_limit(c->mctx, FERRY_CONTRACT_MATCH_LIMIT);
    pcre2_set_depth_limit(c->mctx, FERRY_CONTRACT_MATCH_LIMIT / 10);
    pcre2_set_heap_limit(c->mctx, 16 * 1024); /* KiB */
    *out = c;
    return 0;
}

void ferry_contract_free(ferry_contract *c) {
    if (!c) return;
    node_free(c->root);
    pcre2_match_context_free(c->mctx);
    json_decref(c->doc);
    free(c->source);
    free(c);
}
