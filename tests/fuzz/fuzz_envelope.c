/* fuzz_envelope.c - libFuzzer target for the envelope decoder (src/envelope/decode.c). Beyond
 * "no crash, no leak, no UB" it checks the decoder's promises: an event id is empty or a
 * canonical UUID, a trace id is empty or passes the trace-id rule, an envelope's payload
 * span lies inside the input and is one JSON value by itself, and its compact copy is too. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envelope/envelope.h"
#include "envelope/trace.h"
#include "util/json_text.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    ferry__envelope_view v;
    int env = ferry__envelope_parse(s, size, 64, &v);
    check(env == v.is_envelope);
    size_t el = strlen(v.event_id), tl = strlen(v.trace_id);
    check(el == 0 || el == 36);
    for (size_t i = 0; i < el; i++)
        check((i == 8 || i == 13 || i == 18 || i == 23) ? v.event_id[i] == '-'
                                                        : strchr("0123456789abcdefABCDEF",
                                                                 v.event_id[i]) != NULL);
    check(tl == 0 || ferry__trace_id_valid(v.trace_id, tl));
    if (!env) {
        check(v.payload_len == 0);
        return 0;
    }
    check(v.payload_off < size && v.payload_len > 0 && v.payload_off + v.payload_len <= size);
    check(ferryx_json_check(s + v.payload_off, v.payload_len, 64, NULL) == 0);
    char *copy = malloc(v.payload_len + 1);
    if (!copy) return 0;
    size_t n = ferry__json_compact_copy(s + v.payload_off, v.payload_len, copy);
    check(n <= v.payload_len && strlen(copy) == n);
    check(ferryx_json_check(copy, n, 64, NULL) == 0);
    free(copy);
    return 0;
}
