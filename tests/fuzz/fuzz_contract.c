/* fuzz_contract.c - libFuzzer target for payload contracts (src/contract): one input holds a
 * schema and a payload, split at the first NUL byte (no NUL: the whole input is both). Beyond
 * "no crash, no leak, no UB" it checks the promises: a refused schema is FERRY_EINVAL /
 * ETOOBIG / ENOMEM with a message naming the source; a verdict is 0 or 1 (or ENOMEM), and an
 * invalid one names a keyword and a path that is a JSON pointer, cut only with "...". */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/contract.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    const char *nul = memchr(s, 0, size);
    size_t slen = nul ? (size_t)(nul - s) : size;
    const char *p = nul ? nul + 1 : s;
    size_t plen = nul ? size - slen - 1 : size;

    ferry_contract *c = NULL;
    ferry_error e = {0};
    int rc = ferry_contract_parse(s, slen, "fuzz.json", &c, &e);
    if (rc) {
        check(c == NULL);
        check(rc == FERRY_EINVAL || rc == FERRY_ETOOBIG || rc == FERRY_ENOMEM);
        check(e.code == rc && !strncmp(e.message, "contract fuzz.json: ", 20));
        return 0;
    }
    ferry_contract_violation v;
    memset(&v, 0xAA, sizeof v);
    int got = ferry_contract_validate(c, p, plen, &v);
    check(got == 0 || got == 1 || got == FERRY_ENOMEM);
    if (got == 1) {
        size_t pl = strnlen(v.path, sizeof v.path), kl = strnlen(v.keyword, sizeof v.keyword);
        check(pl < sizeof v.path && kl > 0 && kl < sizeof v.keyword);
        check(pl == 0 || v.path[0] == '/');
    }
    /* the same verdict twice: validation keeps no state */
    ferry_contract_violation w;
    check(ferry_contract_validate(c, p, plen, &w) == got);
    if (got == 1) check(!strcmp(v.path, w.path) && !strcmp(v.keyword, w.keyword));
    ferry_contract_free(c);
    return 0;
}
