/* cmd_http.c - `ferry http-outcome STATUS [RETRY_AFTER]`: the last step of a shell job
 * handler that called an HTTP service. It classifies the response exactly as handlers in C do
 * (ferry_http_classify_now, docs/http-classify.md) and exits with the exec worker's exit code
 * for that class (exec_job.h), printing the delay hint the worker reads from the command's
 * stdout, so a script can end with
 *     exec ferry http-outcome "$status" "$retry_after"
 * No Redis, no options: the arguments are taken literally (a Retry-After value may start
 * with '-'). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "exec_job.h"
#include "ferry/http_classify.h"
#include "opts.h"

static const cmd_spec http_spec = {
    "http-outcome",
    "STATUS [RETRY_AFTER]",
    "Turn an HTTP response into the `ferry worker` exit code for it (for shell job handlers).",
    "STATUS is the response's status code, 1 to 3 digits (curl's %{http_code};\n"
    "000 or 0 = no response). RETRY_AFTER is the value of its Retry-After header\n"
    "(delta-seconds or an HTTP-date); empty or absent when there is none.\n"
    "Arguments are taken literally (no options besides --help).\n"
    "\n"
    "  class        exit  stdout                     when\n"
    "  ok           0                                2xx\n"
    "  transient    75                               0; 408, 5xx without a usable\n"
    "                                                Retry-After\n"
    "  retry-later  118   FERRY_RETRY_AFTER_MS=<ms>  408, 5xx with a usable Retry-After\n"
    "  throttled    119   FERRY_RETRY_AFTER_MS=<ms>  429 (no usable Retry-After: 10000)\n"
    "  permanent    65                               other 4xx; 1xx, 3xx, >= 600\n"
    "\n"
    "One line naming the class goes to stderr; the worker stores it as the job's\n"
    "failedReason. A bad STATUS or a wrong number of arguments: one line on stderr,\n"
    "exit 2 (which the worker treats as a transient failure). A handler ends with\n"
    "  exec ferry http-outcome \"$status\" \"$retry_after\"\n",
    1,
    2,
    0,
    0};

/* STATUS: 1 to 3 ASCII digits (an HTTP status is three digits; curl prints 000 when no
 * response arrived). Returns 0 and writes *status, or -1. */
static int parse_status(const char *s, int *status) {
    size_t n = strlen(s);
    if (n < 1 || n > 3 || strspn(s, "0123456789") != n) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    *status = v;
    return 0;
}

static int exit_code_of(ferry_http_class cls) {
    switch (cls) {
    case FERRY_HTTP_OK:
        return EXEC_EXIT_COMPLETED;
    case FERRY_HTTP_TRANSIENT:
        return EXEC_EXIT_TRANSIENT;
    case FERRY_HTTP_RETRY_LATER:
        return EXEC_EXIT_RETRY_LATER;
    case FERRY_HTTP_THROTTLED:
        return EXEC_EXIT_THROTTLED;
    case FERRY_HTTP_PERMANENT:
        return EXEC_EXIT_PERMANENT;
    }
    return EXEC_EXIT_TRANSIENT; /* unreachable: the classifier returns one of the above */
}

/* Up to 64 bytes of an argument for an error message; controls become '?'. */
static void printable_arg(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src[i] && i < 64 && i + 4 < cap; i++)
        dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
    if (src[i] && i + 4 < cap) {
        memcpy(dst + i, "...", 3);
        i += 3;
    }
    dst[i] = 0;
}

static int http_outcome_main(int argc, char **argv) {
    if (argc > 0 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        opts_print_help(&http_spec, NULL, 0);
        return CLI_EXIT_OK;
    }
    int i = argc > 0 && !strcmp(argv[0], "--") ? 1 : 0;
    int n = argc - i;
    if (n < 1) return opts_usage_error(&http_spec, "missing argument: expected %s", http_spec.args);
    char shown[80];
    if (n > 2) {
        printable_arg(shown, sizeof shown, argv[i + 2]);
        return opts_usage_error(&http_spec,
                                "unexpected argument '%s': expected %s (quote a "
                                "Retry-After date)",
                                shown, http_spec.args);
    }
    int status;
    if (parse_status(argv[i], &status)) {
        printable_arg(shown, sizeof shown, argv[i]);
        return opts_usage_error(&http_spec,
                                "STATUS: expected an HTTP status code of 1 to 3 digits (000 = no "
                                "response), got '%s'",
                                shown);
    }
    ferry_http_verdict v = ferry_http_classify_now(status, n == 2 ? argv[i + 1] : NULL);
    const char *cls = ferry_http_class_name(v.cls);
    int delayed = v.cls == FERRY_HTTP_RETRY_LATER || v.cls == FERRY_HTTP_THROTTLED;
    if (delayed) {
        printf(EXEC_HINT_MS_KEY "%lld\n", v.delay_ms);
        fflush(stdout);
    }
    if (status == 0)
        fprintf(stderr, "no HTTP response (status 0): %s\n", cls);
    else if (delayed)
        fprintf(stderr, "HTTP %d: %s (delay %lld ms)\n", status, cls, v.delay_ms);
    else
        fprintf(stderr, "HTTP %d: %s\n", status, cls);
    return exit_code_of(v.cls);
}

const cli_setup http_outcome_cmd = {.main = http_outcome_main};
