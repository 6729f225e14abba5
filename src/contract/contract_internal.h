/* contract_internal.h - the compiled form of a schema (schema.c builds it, validate.c walks
 * it) and the pure helpers the registry shares. Private to src/contract/. */
#ifndef FERRY_CONTRACT_CONTRACT_INTERNAL_H
#define FERRY_CONTRACT_CONTRACT_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <jansson.h>
#include <pcre2.h>
#include <stddef.h>

#include "ferry/contract.h"

/* type bits */
enum {
    CT_NULL = 1 << 0,
    CT_BOOLEAN = 1 << 1,
    CT_OBJECT = 1 << 2,
    CT_ARRAY = 1 << 3,
    CT_NUMBER = 1 << 4,
    CT_STRING = 1 << 5,
    CT_INTEGER = 1 << 6
};

enum { CF_NONE = 0, CF_DATE_TIME, CF_UUID };

typedef struct cnode cnode;

typedef struct cprop {
    const char *name; /* borrowed from the schema document (a key of "properties") */
    cnode *schema;
} cprop;

/* One schema (or boolean schema). Pointers to json_t borrow from the document the
 * ferry_contract keeps. */
struct cnode {
    int boolean;    /* -1: an object schema; 0: false; 1: true */
    unsigned types; /* CT_* bits; 0 = no "type" */
    cprop *props;   /* "properties", in the schema's order */
    size_t nprops;
    json_t *props_obj; /* the "properties" object (lookups for additionalProperties) */
    json_t *required;  /* array of strings, or NULL */
    cnode *additional; /* "additionalProperties", or NULL */
    cnode *items;      /* "items" as one schema, or NULL */
    cnode **tuple;     /* "items" as an array (draft-07 tuple form) */
    size_t ntuple;
    int has_tuple;
    json_t *enum_values; /* array, or NULL */
    json_t *const_value; /* or NULL (has_const says whether "const" was there) */
    int has_const;
    long long min_length, max_length, max_items; /* -1 = absent */
    json_t *minimum, *maximum;                   /* numbers, or NULL */
    pcre2_code *pattern;
    int format; /* CF_* */
};

struct ferry_contract {
    json_t *doc; /* the parsed schema; every cnode borrows from it */
    cnode *root;
    pcre2_match_context *mctx; /* the match limit; read-only once built */
    char *source;
};

/* Parse payload text into *out (JSON_DECODE_ANY, numbers beyond int64 read as doubles,
 * beyond double as the largest double of their sign). Returns 0; 1 with v filled ("json" or
 * "depth") when it is not acceptable JSON; FERRY_ENOMEM. */
int ferry__contract_parse_payload(const char *s, size_t n, json_t **out,
                                  ferry_contract_violation *v);

/* Validate a parsed payload. Returns 0 / 1 (v filled) / FERRY_ENOMEM. */
int ferry__contract_validate_value(const ferry_contract *c, const json_t *value,
                                   ferry_contract_violation *v);

/* JSON equality as JSON Schema defines it: numbers by value (1 == 1.0), objects unordered. */
int ferry__contract_json_equal(const json_t *a, const json_t *b);

/* Exact comparison of two numbers (integers or reals): <0, 0, >0. */
int ferry__contract_num_cmp(const json_t *a, const json_t *b);

/* RFC 3339 date-time / 8-4-4-4-12 hex UUID, s[0..n). Predicates. */
int ferry__contract_is_date_time(const char *s, size_t n);

#endif
