/* fuzz_job_opts.c - libFuzzer target for the JobsOptions parsers (src/queue/job_opts.c):
 * strict parse, lenient read of stored opts, keepJobs values and the data JSON check.
 * Besides "no crash, no leak, no UB" it checks that normalisation is stable: whatever the
 * strict parser accepts, its stored form parses again to the same stored form and reads
 * back through the lenient reader with the same values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "queue/job_opts.h"
#include "util/json_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;

    ferry_error err;
    ferry__job_opts a, b, c;
    if (ferry__job_opts_parse(text, &a, &err) == 0) {
        int rc = ferry__job_opts_parse(a.stored_json, &b, &err);
        /* the stored form may grow past the input limit ("1E5" -> 100000), nothing else */
        if (rc != 0 && rc != FERRY_ETOOBIG) __builtin_trap();
        if (rc == 0) {
            if (strcmp(a.stored_json, b.stored_json) != 0) __builtin_trap();
            ferry__job_opts_free(&b);
        }
        ferry__job_opts_from_stored(a.stored_json, &c);
        if (c.attempts != a.attempts || c.delay_ms != a.delay_ms || c.priority != a.priority ||
            c.lifo != a.lifo || c.backoff.set != a.backoff.set ||
            c.backoff.delay_ms != a.backoff.delay_ms || strcmp(c.backoff.type, a.backoff.type) ||
            c.remove_on_complete.count != a.remove_on_complete.count ||
            c.remove_on_fail.age_set != a.remove_on_fail.age_set ||
            c.remove_on_fail.age_s != a.remove_on_fail.age_s ||
            (a.job_id && (!c.job_id || strcmp(a.job_id, c.job_id))))
            __builtin_trap();
        ferry__job_opts_free(&c);
        ferry__job_opts_free(&a);
    }

    ferry__job_opts_from_stored(text, &c);
    ferry__job_opts_free(&c);

    ferry__keep_jobs k;
    (void)ferry__keep_jobs_parse(text, &k, &err);

    char *merged = ferry__json_merge_shallow(text, "{\"attempts\":1}", &err);
    free(merged);

    ferryx_json_check_error je;
    (void)ferryx_json_check(text, size, 64, &je);
    free(text);
    return 0;
}
