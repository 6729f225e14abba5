/* fakes_faults.c - fault settings of shop-fakes: parsing (flags, POST /faults), showing them,
 * and the per-request decision. Pure (no I/O): see fakes_faults.h. */
#include "fakes_faults.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const OP_NAMES[FAKES_OP_COUNT] = {
    "gateway.authorize", "gateway.get",    "gateway.capture", "gateway.void",
    "carrier.lookup",    "carrier.create", "mailer.send",
};

/* The kinds of value a setting takes. */
enum { K_RATE, K_NEXT, K_SLOW_MS, K_RETRY_S, K_MODE };

typedef struct key_def {
    const char *name;
    int kind;
    size_t off; /* offset of the double or long in fakes_op_faults (unused for K_MODE) */
} key_def;

static const key_def KEYS[] = {
    {"error_rate", K_RATE, offsetof(fakes_op_faults, error_rate)},
    {"error_next", K_NEXT, offsetof(fakes_op_faults, error_next)},
    {"slow_rate", K_RATE, offsetof(fakes_op_faults, slow_rate)},
    {"slow_next", K_NEXT, offsetof(fakes_op_faults, slow_next)},
    {"slow_ms", K_SLOW_MS, offsetof(fakes_op_faults, slow_ms)},
    {"throttle_rate", K_RATE, offsetof(fakes_op_faults, throttle_rate)},
    {"throttle_next", K_NEXT, offsetof(fakes_op_faults, throttle_next)},
    {"retry_after", K_MODE, 0},
    {"retry_after_s", K_RETRY_S, offsetof(fakes_op_faults, retry_after_s)},
    {"drop_rate", K_RATE, offsetof(fakes_op_faults, drop_rate)},
    {"drop_next", K_NEXT, offsetof(fakes_op_faults, drop_next)},
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static const char *const MODE_NAMES[] = {"both", "seconds", "date"};

static void op_defaults(fakes_op_faults *o) {
    memset(o, 0, sizeof *o);
    o->slow_ms = FAKES_SLOW_MS_DEFAULT;
    o->retry_after = FAKES_RA_BOTH;
    o->retry_after_s = FAKES_RETRY_AFTER_S_DEFAULT;
}

void fakes_faults_init(fakes_faults *f, uint64_t seed) {
    for (int i = 0; i < FAKES_OP_COUNT; i++)
        op_defaults(&f->op[i]);
    f->rng = seed;
}

void fakes_faults_clear(fakes_faults *f) {
    for (int i = 0; i < FAKES_OP_COUNT; i++)
        op_defaults(&f->op[i]);
}

int fakes_op_from_name(const char *name) {
    for (int i = 0; i < FAKES_OP_COUNT; i++)
        if (strcmp(name, OP_NAMES[i]) == 0) return i;
    return -1;
}

const char *fakes_op_name(int op) {
    return op >= 0 && op < FAKES_OP_COUNT ? OP_NAMES[op] : "?";
}

static const key_def *key_find(const char *name) {
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(name, KEYS[i].name) == 0) return &KEYS[i];
    return NULL;
}

static long key_max(int kind) {
    switch (kind) {
    case K_NEXT:
        return FAKES_NEXT_MAX;
    case K_SLOW_MS:
        return FAKES_SLOW_MS_MAX;
    default:
        return FAKES_RETRY_AFTER_S_MAX;
    }
}

static const char *key_expects(int kind) {
    switch (kind) {
    case K_RATE:
        return "a number from 0 to 1";
    case K_NEXT:
        return "an integer from 0 to 1000000000";
    case K_SLOW_MS:
        return "an integer from 0 to 600000 (milliseconds)";
    case K_RETRY_S:
        return "an integer from 0 to 86400 (seconds)";
    default:
        return "\"seconds\", \"date\" or \"both\"";
    }
}

/* A validated value of one key, ready to store. */
typedef struct key_value {
    double rate;
    long n;
    fakes_retry_after mode;
} key_value;

static void key_store(fakes_op_faults *o, const key_def *k, const key_value *v) {
    char *base = (char *)o;
    if (k->kind == K_MODE)
        o->retry_after = v->mode;
    else if (k->kind == K_RATE)
        memcpy(base + k->off, &v->rate, sizeof v->rate);
    else
        memcpy(base + k->off, &v->n, sizeof v->n);
}

static int mode_parse(const char *s, fakes_retry_after *out) {
    for (int i = 0; i < 3; i++)
        if (strcmp(s, MODE_NAMES[i]) == 0) {
            *out = (fakes_retry_after)i;
            return 0;
        }
    return -1;
}

/* Parse a flag's text value for key k. Returns 0, -1 when it is not valid. */
static int value_from_text(const key_def *k, const char *s, key_value *v) {
    if (k->kind == K_MODE) return mode_parse(s, &v->mode);
    if (*s == '\0' || *s == ' ' || *s == '\t' || *s == '+' || *s == '-') return -1;
    char *end;
    errno = 0;
    if (k->kind == K_RATE) {
        double d = strtod(s, &end);
        if (errno || *end != '\0' || !isfinite(d) || d < 0.0 || d > 1.0) return -1;
        v->rate = d;
        return 0;
    }
    long n = strtol(s, &end, 10);
    if (errno || *end != '\0' || n < 0 || n > key_max(k->kind)) return -1;
    v->n = n;
    return 0;
}

/* Parse a JSON value for key k. Returns 0, -1 when it is not valid. */
static int value_from_json(const key_def *k, const json_t *j, key_value *v) {
    if (k->kind == K_MODE)
        return json_is_string(j) ? mode_parse(json_string_value(j), &v->mode) : -1;
    if (k->kind == K_RATE) {
        if (!json_is_number(j)) return -1;
        double d = json_number_value(j);
        if (!isfinite(d) || d < 0.0 || d > 1.0) return -1;
        v->rate = d;
        return 0;
    }
    if (!json_is_integer(j)) return -1;
    json_int_t n = json_integer_value(j);
    if (n < 0 || n > key_max(k->kind)) return -1;
    v->n = (long)n;
    return 0;
}

int fakes_faults_parse_flag(fakes_faults *f, const char *spec, char *err, size_t cap) {
    const char *colon = strchr(spec, ':');
    const char *eq = colon ? strchr(colon + 1, '=') : NULL;
    if (!colon || !eq) {
        snprintf(err, cap,
                 "fault \"%s\": expected OP:KEY=VALUE (e.g. gateway.capture:drop_rate=0.05)", spec);
        return -1;
    }
    char op[64], key[64];
    size_t oplen = (size_t)(colon - spec), keylen = (size_t)(eq - colon - 1);
    if (oplen == 0 || oplen >= sizeof op) {
        snprintf(err, cap, "fault \"%s\": missing or over-long operation name", spec);
        return -1;
    }
    memcpy(op, spec, oplen);
    op[oplen] = '\0';
    int which = -1;
    if (strcmp(op, "*") != 0 && (which = fakes_op_from_name(op)) < 0) {
        snprintf(err, cap,
                 "fault \"%s\": unknown operation \"%s\" (gateway.authorize, gateway.get, "
                 "gateway.capture, gateway.void, carrier.lookup, carrier.create, mailer.send or *)",
                 spec, op);
        return -1;
    }
    const key_def *k = NULL;
    if (keylen < sizeof key) {
        memcpy(key, colon + 1, keylen);
        key[keylen] = '\0';
        k = key_find(key);
    }
    if (!k) {
        snprintf(err, cap, "fault \"%s\": unknown setting \"%.*s\"", spec,
                 (int)(keylen > 60 ? 60 : keylen), colon + 1);
        return -1;
    }
    key_value v = {0};
    if (value_from_text(k, eq + 1, &v) != 0) {
        snprintf(err, cap, "fault \"%s\": %s must be %s", spec, k->name, key_expects(k->kind));
        return -1;
    }
    for (int i = 0; i < FAKES_OP_COUNT; i++)
        if (which < 0 || which == i) key_store(&f->op[i], k, &v);
    return 0;
}

/* Build one operation's settings from a JSON object, naming the bad key as OPNAME.KEY. */
static int op_from_json(const char *opname, const json_t *obj, fakes_op_faults *out, char *err,
                        size_t cap) {
    if (!json_is_object(obj)) {
        snprintf(err, cap, "%s: must be an object of settings", opname);
        return -1;
    }
    op_defaults(out);
    const char *name;
    json_t *val;
    json_object_foreach((json_t *)obj, name, val) {
        const key_def *k = key_find(name);
        if (!k) {
            snprintf(err, cap, "%s.%s: unknown setting", opname, name);
            return -1;
        }
        key_value v = {0};
        if (value_from_json(k, val, &v) != 0) {
            snprintf(err, cap, "%s.%s: must be %s", opname, name, key_expects(k->kind));
            return -1;
        }
        key_store(out, k, &v);
    }
    return 0;
}

int fakes_faults_apply_json(fakes_faults *f, const char *json, size_t len, char *err, size_t cap) {
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, cap, "malformed JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(root)) {
        snprintf(err, cap, "the body must be an object of operations");
        goto out;
    }
    fakes_faults next = *f;
    json_t *star = json_object_get(root, "*");
    if (star) {
        fakes_op_faults all;
        if (op_from_json("*", star, &all, err, cap) != 0) goto out;
        for (int i = 0; i < FAKES_OP_COUNT; i++)
            next.op[i] = all;
    }
    const char *name;
    json_t *val;
    json_object_foreach(root, name, val) {
        if (strcmp(name, "*") == 0) continue;
        int which = fakes_op_from_name(name);
        if (which < 0) {
            snprintf(err, cap, "%s: unknown operation", name);
            goto out;
        }
        if (op_from_json(name, val, &next.op[which], err, cap) != 0) goto out;
    }
    *f = next;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

json_t *fakes_faults_to_json(const fakes_faults *f) {
    json_t *root = json_object();
    if (!root) return NULL;
    for (int i = 0; i < FAKES_OP_COUNT; i++) {
        const fakes_op_faults *o = &f->op[i];
        json_t *j = json_pack(
            "{s:f,s:I,s:f,s:I,s:I,s:f,s:I,s:s,s:I,s:f,s:I}", "error_rate", o->error_rate,
            "error_next", (json_int_t)o->error_next, "slow_rate", o->slow_rate, "slow_next",
            (json_int_t)o->slow_next, "slow_ms", (json_int_t)o->slow_ms, "throttle_rate",
            o->throttle_rate, "throttle_next", (json_int_t)o->throttle_next, "retry_after",
            MODE_NAMES[o->retry_after], "retry_after_s", (json_int_t)o->retry_after_s, "drop_rate",
            o->drop_rate, "drop_next", (json_int_t)o->drop_next);
        if (!j || json_object_set_new(root, OP_NAMES[i], j) != 0) {
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

double fakes_faults_draw(fakes_faults *f) {
    /* splitmix64: small, good enough, and the same sequence for the same seed everywhere */
    uint64_t z = (f->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0); /* 53 bits */
}

/* A rate fires: only draw when the rate is set, so unset rates do not move the generator. */
static int rate_fires(fakes_faults *f, double rate) {
    return rate > 0.0 && fakes_faults_draw(f) < rate;
}

static void throttle_fill(fakes_op_faults *o, fakes_fault_decision *d) {
    d->throttle = 1;
    d->retry_s = o->retry_after_s;
    d->retry_date = o->retry_after == FAKES_RA_DATE ||
                    (o->retry_after == FAKES_RA_BOTH && (o->throttles % 2) == 1);
    o->throttles++;
}

fakes_fault_decision fakes_faults_decide(fakes_faults *f, fakes_op op) {
    fakes_fault_decision d;
    memset(&d, 0, sizeof d);
    if ((int)op < 0 || op >= FAKES_OP_COUNT) return d;
    fakes_op_faults *o = &f->op[op];
    /* counts first */
    if (o->error_next > 0) {
        o->error_next--;
        d.error = 1;
        return d;
    }
    if (o->throttle_next > 0) {
        o->throttle_next--;
        throttle_fill(o, &d);
        return d;
    }
    int counted = 0;
    if (o->slow_next > 0) {
        o->slow_next--;
        d.slow = 1;
        d.slow_ms = o->slow_ms;
        counted = 1;
    }
    if (o->drop_next > 0) {
        o->drop_next--;
        d.drop = 1;
        counted = 1;
    }
    if (counted) return d;
    /* then rates */
    if (rate_fires(f, o->error_rate)) {
        d.error = 1;
        return d;
    }
    if (rate_fires(f, o->throttle_rate)) {
        throttle_fill(o, &d);
        return d;
    }
    if (rate_fires(f, o->slow_rate)) {
        d.slow = 1;
        d.slow_ms = o->slow_ms;
    }
    if (rate_fires(f, o->drop_rate)) d.drop = 1;
    return d;
}
