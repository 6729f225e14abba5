/* fuzz_shop_faults.c - libFuzzer target for shop-fakes' fault settings
 * (examples/shop/fakes/fakes_faults.c): the input is split at its first NUL byte into a
 * `--fault OP:KEY=VALUE` flag and a POST /faults body. Beyond "no crash, no leak, no UB" it
 * checks that a refused input leaves the settings unchanged and says why, and that decisions
 * drawn from any accepted settings are coherent (error and throttle exclude doing the
 * operation; delays are not negative). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fakes_faults.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

static char *settings(const fakes_faults *f) {
    json_t *j = fakes_faults_to_json(f);
    char *s = j ? json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
    json_decref(j);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static fakes_faults f;
    fakes_faults_init(&f, 42);
    const uint8_t *nul = memchr(data, 0, size);
    size_t flen = nul ? (size_t)(nul - data) : size;
    char *flag = malloc(flen + 1);
    if (!flag) return 0;
    memcpy(flag, data, flen);
    flag[flen] = '\0';
    char err[512];
    char *before = settings(&f);
    if (fakes_faults_parse_flag(&f, flag, err, sizeof err) != 0) {
        char *after = settings(&f);
        check(err[0] != '\0');
        check(!before || !after || !strcmp(before, after));
        free(after);
    }
    free(before);
    free(flag);
    if (nul) {
        const char *body = (const char *)nul + 1;
        size_t blen = size - flen - 1;
        before = settings(&f);
        if (fakes_faults_apply_json(&f, body, blen, err, sizeof err) != 0) {
            char *after = settings(&f);
            check(err[0] != '\0');
            check(!before || !after || !strcmp(before, after));
            free(after);
        }
        free(before);
    }
    for (int op = 0; op < FAKES_OP_COUNT; op++)
        for (int i = 0; i < 4; i++) {
            fakes_fault_decision d = fakes_faults_decide(&f, (fakes_op)op);
            check(!(d.error && d.throttle));
            check(!((d.error || d.throttle) && (d.slow || d.drop)));
            check(d.retry_s >= 0 && d.slow_ms >= 0);
        }
    return 0;
}
