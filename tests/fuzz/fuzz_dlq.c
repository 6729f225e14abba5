/* fuzz_dlq.c - libFuzzer target for the dead letters' pure parts and the CLI's time parser:
 * the first byte picks one, the rest is its input.
 *  0: ferry__dlq_redrive_opts on stored options text: the result is a JSON object whose
 *     jobId is the one asked for and that holds none of the failed job's own keys;
 *  1: ferry__dlq_params_fill on a failure whose texts are the input: every parameter is
 *     valid UTF-8, and data goes to exactly one of data (jsonb-safe JSON) or data_text;
 *  2: ferry__dlq_where_build / ferry__dlq_filter_text with the input as every filter text:
 *     a clause with at most 8 parameters, or FERRY_EINVAL;
 *  3: cli_time_ms (`--since` / `--until`): a time it accepts is after the epoch. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deadletter/dlq_internal.h"
#include "timetext.h"
#include "util/json_text.h"

static void check(int cond) {
    if (!cond) abort(); /* libFuzzer reports the input that got here */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char *s = malloc(size);
    if (!s) return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0; /* the texts are C strings: cut at the first NUL */
    switch (data[0] % 4) {
    case 0: {
        char *o = ferry__dlq_redrive_opts(s, "dlq-x-1");
        if (o) {
            json_t *j = json_loads(o, 0, NULL);
            check(json_is_object(j));
            check(!strcmp(json_string_value(json_object_get(j, "jobId")), "dlq-x-1"));
            const char *gone[] = {"delay", "repeat", "parent", "de", "repeatJobKey", "kl"};
            for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
                check(json_object_get(j, gone[i]) == NULL);
            json_decref(j);
            free(o);
        }
        break;
    }
    case 1: {
        ferry_dlq_failure f = {.queue = "q",
                               .job_id = s,
                               .job_name = s,
                               .data = s,
                               .opts = s,
                               .error = s,
                               .stacktrace = s};
        ferry__dlq_params p;
        if (ferry__dlq_params_fill(&p, &f, "sync", NULL) == 0) {
            for (int i = 0; i < FERRY__DLQ_NPARAMS; i++)
                if (p.v[i]) check(ferryx_utf8_valid(p.v[i], strlen(p.v[i])));
            check((p.v[4] == NULL) != (p.v[5] == NULL));
            if (p.v[4]) check(ferryx_jsonb_check(p.v[4], strlen(p.v[4]), NULL) == 0);
            ferry__dlq_params_free(&p);
        }
        break;
    }
    case 2: {
        ferry_dlq_filter f = {.id = s, .prefix = s, .queue = s, .name = s, .error_contains = s};
        ferry__dlq_where w;
        int rc = ferry__dlq_where_build(&f, 1, &w, NULL);
        check(rc == 0 || rc == FERRY_EINVAL);
        if (rc == 0) check(w.n <= FERRY__DLQ_FILTER_PARAMS && strlen(w.sql) < sizeof w.sql - 1);
        f.id = NULL;
        rc = ferry__dlq_where_build(&f, 0, &w, NULL);
        check(rc == 0 || rc == FERRY_EINVAL);
        char *t = ferry__dlq_filter_text(&f, 1);
        free(t);
        break;
    }
    default: {
        long long ms = 0;
        if (cli_time_ms(s, 1764547200000LL, &ms) == 0) check(ms > 0);
        break;
    }
    }
    free(s);
    return 0;
}
