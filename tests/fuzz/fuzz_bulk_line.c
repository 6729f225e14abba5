/* fuzz_bulk_line.c - libFuzzer target for the `ferry queue add-bulk` line parser
 * (cmd/ferry/bulk_line.c). Besides "no crash, no leak, no UB" it checks what the command
 * relies on: a line taken as a job has a non-empty name without NUL, data that is one JSON
 * value within the size limit, and opts that are NULL or a JSON object's text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bulk_line.h"
#include "util/json_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bulk_line l;
    char msg[256];
    int rc = bulk_line_parse((const char *)data, size, 4096, &l, msg, sizeof msg);
    if (rc == BULK_LINE_JOB) {
        if (!l.name || !*l.name || !l.data) __builtin_trap();
        size_t dl = strlen(l.data);
        if (dl > 4096 || ferryx_json_check(l.data, dl, BULK_LINE_MAX_DEPTH, NULL)) __builtin_trap();
        if (l.opts && (l.opts[0] != '{' || ferryx_json_check(l.opts, strlen(l.opts), 600, NULL)))
            __builtin_trap();
        bulk_line_free(&l);
    } else if (rc == BULK_LINE_BAD) {
        if (!msg[0] || memchr(msg, '\n', strlen(msg))) __builtin_trap();
        if (l.name || l.data || l.opts) __builtin_trap();
    } else if (rc != BULK_LINE_BLANK) {
        __builtin_trap();
    }
    return 0;
}
