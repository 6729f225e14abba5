/* opts.c - table-driven option parsing and help generation for the CLI (see opts.h). */
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry/queue.h"
#include "logline.h"
#include "util/json_text.h"

#define HELP_WIDTH 79
#define HELP_INDENT 26

/* A timestamped command's message goes through logline_event (one JSON object in json
 * mode, at `level`); the others keep their plain "ferry <cmd>: " line. */
__attribute__((format(printf, 3, 0))) static void vmessage(const cmd_spec *spec, int level,
                                                           const char *fmt, va_list ap) {
    char text[2048];
    vsnprintf(text, sizeof text, fmt, ap);
    if (spec->timestamped)
        logline_event(spec->name, level, NULL, NULL, "%s", text);
    else
        fprintf(stderr, "ferry %s: %s\n", spec->name, text);
}

void opts_message(const cmd_spec *spec, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(spec, FERRY_LOG_WARN, fmt, ap);
    va_end(ap);
}

int opts_usage_error(const cmd_spec *spec, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmessage(spec, FERRY_LOG_ERROR, fmt, ap);
    va_end(ap);
    return CLI_EXIT_USAGE;
}

int opts_check_json(const char *text, size_t len, int want_object, char *msg, size_t msgcap) {
    if (!want_object) {
        /* Any value (job data): the library's own check, which takes all that JSON.parse
         * takes (integers past 64 bits, \u0000), so the CLI refuses no data that Node or
         * ferry_queue_add would store. */
        ferryx_json_check_error ce;
        if (ferryx_json_check(text, len, FERRY_JOB_DATA_DEPTH_MAX, &ce) == 0) return 0;
        int line = 1;
        size_t col = 1;
        for (size_t i = 0; i < ce.offset && i < len; i++, col++)
            if (text[i] == '\n') line++, col = 0;
        snprintf(msg, msgcap, "invalid JSON at line %d column %zu: %s", line, col, ce.reason);
        return -1;
    }
    /* An object of options: the library reads options with jansson, so check with it */
    json_error_t je;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        snprintf(msg, msgcap, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
        return -1;
    }
    int ok = !want_object || json_is_object(v);
    json_decref(v);
    if (!ok) {
        snprintf(msg, msgcap, "expected a JSON object");
        return -1;
    }
    return 0;
}

static const opt_def *find_def(const opt_group *groups, size_t ngroups, const char *name,
                               size_t namelen, void **base) {
    for (size_t g = 0; g < ngroups; g++)
        for (size_t i = 0; i < groups[g].n; i++) {
            const opt_def *d = &groups[g].defs[i];
            if (strlen(d->name) == namelen && !strncmp(d->name, name, namelen)) {
                *base = groups[g].base;
                return d;
            }
        }
    return NULL;
}

int opts_parse_ll(const char *text, long long *out) {
    /* strtoll alone would also take leading blanks and a '+': not what anyone types on
     * purpose, and " 5" from a badly quoted script should not pass silently. */
    const char *digits = text[0] == '-' ? text + 1 : text;
    if (*digits < '0' || *digits > '9') return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_int(const cmd_spec *spec, const opt_def *d, const char *val, long long *out) {
    long long v = 0;
    if (opts_parse_ll(val, &v) || v < d->min || v > d->max)
        return opts_usage_error(spec, "--%s: expected an integer from %lld to %lld, got '%s'",
                                d->name, d->min, d->max, val);
    *out = v;
    return 0;
}

static int store(const cmd_spec *spec, const opt_def *d, void *base, const char *val) {
    char *p = (char *)base + d->offset;
    char msg[256];
    switch (d->kind) {
    case OPT_FLAG:
        *(int *)p = 1;
        return 0;
    case OPT_STRING:
        if (!*val) return opts_usage_error(spec, "--%s: empty value", d->name);
        *(const char **)p = val;
        return 0;
    case OPT_INT:
        return parse_int(spec, d, val, (long long *)p);
    case OPT_JSON:
    case OPT_JSON_OBJECT:
        if (opts_check_json(val, strlen(val), d->kind == OPT_JSON_OBJECT, msg, sizeof msg))
            return opts_usage_error(spec, "--%s: %s", d->name, msg);
        *(const char **)p = val;
        return 0;
    }
    return opts_usage_error(spec, "--%s: internal error (unknown option kind)", d->name);
}

/* More positionals than the command takes. */
static int too_many(const cmd_spec *spec, const opt_result *out) {
    const char *extra = out->pos[spec->max_pos];
    if (spec->max_pos == 0)
        return opts_usage_error(spec, "unexpected argument '%s' (takes no positional arguments)",
                                extra);
    return opts_usage_error(spec, "unexpected argument '%s': expected %s", extra, spec->args);
}

/* "-" followed by a JSON number's digits ("-5", "-1.5", "-2e3"), whole. */
static int negative_number(const char *a) {
    const char *p = a + 1;
    if (!isdigit((unsigned char)*p)) return 0;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p)) return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

int opts_parse(const cmd_spec *spec, const opt_group *groups, size_t ngroups, int argc, char **argv,
               opt_result *out) {
    memset(out, 0, sizeof *out);
    out->pos = calloc((size_t)argc + 1, sizeof *out->pos);
    if (!out->pos) return opts_usage_error(spec, "out of memory");
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            out->cmd = &argv[i + 1];
            out->ncmd = argc - i - 1;
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            opts_print_help(spec, groups, ngroups);
            rc = OPTS_HELP_SHOWN;
            goto done;
        }
        if (a[0] == '-' && a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t namelen = eq ? (size_t)(eq - name) : strlen(name);
            void *base = NULL;
            const opt_def *d = find_def(groups, ngroups, name, namelen, &base);
            if (!d) {
                rc = opts_usage_error(spec, "unknown option --%.*s (see ferry %s --help)",
                                      (int)namelen, name, spec->name);
                goto done;
            }
            const char *val = NULL;
            if (d->kind == OPT_FLAG) {
                if (eq) {
                    rc = opts_usage_error(spec, "--%s takes no value", d->name);
                    goto done;
                }
            } else if (eq) {
                val = eq + 1;
            } else if (i + 1 < argc) {
                val = argv[++i];
            } else {
                rc = opts_usage_error(spec, "--%s needs a value (%s)", d->name, d->metavar);
                goto done;
            }
            if ((rc = store(spec, d, base, val)) != 0) goto done;
            continue;
        }
        /* "-" is stdin and "-5" / "-1.5" a negative number (DATA, a value): positionals, as
         * no command has one-letter options besides -h */
        if (a[0] == '-' && a[1] != '\0' && !negative_number(a)) {
            rc = opts_usage_error(spec, "unknown option %s (see ferry %s --help)", a, spec->name);
            goto done;
        }
        out->pos[out->npos++] = argv[i];
    }
    if (!spec->wants_command && out->cmd) {
        /* `--` ends the options: what follows are positionals (an ID or DATA that starts
         * with '-'), subject to the count checks below like the others */
        for (int k = 0; k < out->ncmd; k++)
            out->pos[out->npos++] = out->cmd[k];
        out->cmd = NULL;
        out->ncmd = 0;
    }
    if (out->npos < spec->min_pos) {
        rc = opts_usage_error(spec, "missing argument%s: expected %s",
                              spec->min_pos - out->npos > 1 ? "s" : "", spec->args);
        goto done;
    }
    if (spec->max_pos >= 0 && out->npos > spec->max_pos) {
        rc = too_many(spec, out);
        goto done;
    }
    if (spec->wants_command && out->ncmd == 0) {
        rc = opts_usage_error(spec, "missing command: expected %s", spec->args);
        goto done;
    }
    return 0;
done:
    free(out->pos);
    out->pos = NULL;
    out->npos = 0;
    return rc;
}

/* Print `text` word-wrapped to HELP_WIDTH, continuation lines indented by `indent`;
 * the first line starts at column `col`. Explicit '\n' in text starts a new line. */
static void print_wrapped(const char *text, int col, int indent) {
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            printf("\n%*s", indent, "");
            col = indent;
            p++;
            continue;
        }
        size_t wl = strcspn(p, " \n");
        if (col > indent && col + 1 + (int)wl > HELP_WIDTH) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            putchar(' ');
            col++;
        }
        fwrite(p, 1, wl, stdout);
        col += (int)wl;
        p += wl;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

static void print_opt(const char *left, const char *help) {
    int col = printf("  %s", left);
    if (col >= HELP_INDENT - 1) {
        printf("\n%*s", HELP_INDENT, "");
    } else {
        printf("%*s", HELP_INDENT - col, "");
    }
    print_wrapped(help, HELP_INDENT, HELP_INDENT);
}

void opts_print_help(const cmd_spec *spec, const opt_group *groups, size_t ngroups) {
    printf("Usage: ferry %s [OPTIONS]%s%s\n\n", spec->name, spec->args[0] ? " " : "", spec->args);
    print_wrapped(spec->summary, 0, 0);
    for (size_t g = 0; g < ngroups; g++) {
        if (!groups[g].n) continue;
        printf("\n%s:\n", groups[g].title);
        for (size_t i = 0; i < groups[g].n; i++) {
            const opt_def *d = &groups[g].defs[i];
            char left[96];
            if (d->metavar)
                snprintf(left, sizeof left, "--%s %s", d->name, d->metavar);
            else
                snprintf(left, sizeof left, "--%s", d->name);
            /* An integer's accepted range comes from the same table as the check, so it is
             * always stated and always true; texts that already give it are left alone. */
            char max[32], text[2048];
            const char *help = d->help;
            if (d->kind == OPT_INT) {
                snprintf(max, sizeof max, "%lld", d->max);
                int n =
                    snprintf(text, sizeof text, "%s Range: %lld to %lld.", d->help, d->min, d->max);
                if (!strstr(d->help, max) && n > 0 && (size_t)n < sizeof text) help = text;
            }
            print_opt(left, help);
        }
    }
    printf("\n");
    print_opt("-h, --help", "Show this help and exit.");
    if (spec->details) {
        printf("\n");
        fputs(spec->details, stdout);
    }
}
