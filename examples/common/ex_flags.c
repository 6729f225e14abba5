/* ex_flags.c - an example program's flags from one table (ex_flags.h): the --help lines,
 * getopt_long's table, the plain word-by-word reading the taskflow programs use, usage
 * errors and bounded numbers. */
#include "ex_flags.h"

#include "ex_util.h"

#include <stdarg.h>
#include <string.h>

void ex_flags_print(FILE *to, const ex_flag *flags, size_t n, int width) {
    for (size_t i = 0; i < n; i++) {
        const ex_flag *f = &flags[i];
        int len = fprintf(to, "  --%s%s%s", f->name, f->arg ? " " : "", f->arg ? f->arg : "");
        if (width == EX_FLAGS_HELP_BELOW) {
            fprintf(to, "\n      %s\n", f->help);
            continue;
        }
        int pad = len < 2 ? width : width - (len - 2); /* the two leading spaces are no column */
        fprintf(to, "%*s %s\n", pad > 0 ? pad : 0, "", f->help);
    }
}

void ex_flags_longopts(const ex_flag *flags, size_t n, struct option *out) {
    for (size_t i = 0; i < n; i++)
        out[i] = (struct option){flags[i].name, flags[i].arg ? required_argument : no_argument,
                                 NULL, (int)i};
    out[n] = (struct option){0};
}

int ex_flags_find(const ex_flag *flags, size_t n, const char *word, const char **inline_value) {
    if (inline_value) *inline_value = NULL;
    if (strncmp(word, "--", 2) != 0) return -1;
    const char *name = word + 2;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(flags[i].name);
        if (strncmp(name, flags[i].name, len) != 0) continue;
        if (name[len] == '\0') return (int)i;
        if (name[len] == '=' && inline_value && flags[i].arg) {
            *inline_value = name + len + 1;
            return (int)i;
        }
    }
    return -1;
}

int ex_flags_scan(const char *prog, const ex_flag *flags, size_t n, int argc, char **argv,
                  const char **values, FILE *errors) {
    for (size_t k = 0; k < n; k++)
        values[k] = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
        int k = ex_flags_find(flags, n, argv[i], NULL);
        if (k < 0) {
            fprintf(errors, "%s: unknown option %s (see --help)\n", prog, argv[i]);
            return 2;
        }
        if (!flags[k].arg) {
            values[k] = "1";
        } else if (i + 1 >= argc) {
            fprintf(errors, "%s: --%s needs a value (%s)\n", prog, flags[k].name, flags[k].arg);
            return 2;
        } else {
            values[k] = argv[++i];
        }
    }
    return 0;
}

int ex_usage_error(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(%s --help shows the options)\n", prog);
    va_end(ap);
    return 2;
}

int ex_flags_numbers(const ex_flag *flags, const char *const *values, const ex_flag_number *nums,
                     size_t n, char *err, size_t cap) {
    for (size_t i = 0; i < n; i++) {
        const char *name = flags[nums[i].flag].name;
        char what[80];
        if ((size_t)snprintf(what, sizeof what, "--%s", name) >= sizeof what) {
            snprintf(err, cap, "a flag name is at most %zu bytes", sizeof what - 3);
            return -1;
        }
        const char *text = values[nums[i].flag] ? values[nums[i].flag] : nums[i].dflt;
        if (ex_parse_long(text, nums[i].min, nums[i].max, what, nums[i].out, err, cap)) return -1;
    }
    return 0;
}
