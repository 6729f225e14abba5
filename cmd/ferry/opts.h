/* opts.h - the CLI's option tables: one table per subcommand (plus shared groups) drives
 * both argument parsing and the generated `--help` text, so the two never disagree
 * (the idea of curl's src/tool_getparam.c + tool_help.c, much smaller).
 *
 * Not thread-safe (parsing happens once, on the main thread, before any other thread
 * exists). Parsed strings point into argv (or are validated copies of it); nothing is
 * allocated except the positional-argument array, which the caller frees with free(). */
#ifndef FERRY_CLI_OPTS_H
#define FERRY_CLI_OPTS_H

#include <stddef.h>

/* Exit codes shared by every subcommand. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_RUNTIME = 1, /* Redis unreachable, job not found, ... */
    CLI_EXIT_USAGE = 2,   /* bad arguments */
};

typedef enum opt_kind {
    OPT_FLAG,        /* no value; stores int 1 */
    OPT_STRING,      /* stores const char * (borrowed from argv) */
    OPT_INT,         /* stores long long, checked against [min, max] */
    OPT_JSON,        /* stores const char *; must parse as any JSON value */
    OPT_JSON_OBJECT, /* stores const char *; must parse as a JSON object */
} opt_kind;

typedef struct opt_def {
    const char *name; /* long name without "--" */
    opt_kind kind;
    const char *metavar; /* shown in help ("MS", "URL"); NULL for flags */
    size_t offset;       /* where the value goes, from the group's base */
    long long min, max;  /* OPT_INT only */
    const char *help;    /* one sentence or two; wrapped when printed */
} opt_def;

/* A set of options that write into one struct (`base`). */
typedef struct opt_group {
    const char *title; /* help section title, e.g. "Connection options" */
    const opt_def *defs;
    size_t n;
    void *base;
} opt_group;

/* What a subcommand accepts. */
typedef struct cmd_spec {
    const char *name;     /* "queue add" (used in messages: "ferry queue add: ...") */
    const char *args;     /* positional synopsis: "QUEUE NAME [DATA|-]" */
    const char *summary;  /* one line */
    const char *details;  /* paragraphs after the options, or NULL; printed verbatim */
    int min_pos, max_pos; /* positional count before `--`; max -1 = unlimited */
    int wants_command;    /* 1: `-- CMD [ARGS...]` required after the positionals */
    int timestamped;      /* 1: a long-running command (worker, relay): its messages, usage
                             errors included, start with a timestamp (logline.h) */
} cmd_spec;

/* Result of parsing: positionals before `--` and the command after it. */
typedef struct opt_result {
    char **pos; /* malloc'd array of borrowed argv strings; caller frees the array */
    int npos;
    char **cmd; /* points into argv after `--` (NULL-terminated as argv is), or NULL */
    int ncmd;
} opt_result;

/* Status of opts_parse beyond the exit codes. */
#define OPTS_HELP_SHOWN (-1)

/* Parse argv[0..argc-1] (argv[0] is the first argument after the subcommand words).
 * Options may come before or after positionals; `--name=value` and `--name value` are
 * both accepted; `--` ends options. `-h`/`--help` prints help to stdout and returns
 * OPTS_HELP_SHOWN. On a bad argument prints one line "ferry <cmd>: <problem>" to stderr
 * and returns CLI_EXIT_USAGE. Returns 0 on success. Option defaults are whatever the
 * caller put in the bases beforehand. */
int opts_parse(const cmd_spec *spec, const opt_group *groups, size_t ngroups, int argc, char **argv,
               opt_result *out);

/* Print the generated help for `spec` to stdout. */
void opts_print_help(const cmd_spec *spec, const opt_group *groups, size_t ngroups);

/* Validate JSON text; on failure write "invalid JSON at line L column C: <reason>" into
 * msg (capacity msgcap) and return -1. Any value (want_object 0, job data) is checked as the
 * library checks job data (ferryx_json_check, nesting up to FERRY_JOB_DATA_DEPTH_MAX);
 * `want_object` requires a top-level object, read as the library reads options (jansson,
 * duplicate keys refused). Returns 0 when valid. Pure. */
int opts_check_json(const char *text, size_t len, int want_object, char *msg, size_t msgcap);

/* Read a decimal integer: an optional '-', then ASCII digits only (no blanks, no '+'),
 * within long long. Returns 0 with *out set, else -1. Pure. */
int opts_parse_ll(const char *text, long long *out);

/* Print "ferry <cmd>: <formatted>" + newline to stderr (as one write); a timestamped
 * command (spec->timestamped) writes it through logline_event instead, so in json mode it is
 * one JSON object: level "warn" from opts_message (a warning), "error" from
 * opts_usage_error. opts_usage_error returns CLI_EXIT_USAGE, opts_message nothing. */
void opts_message(const cmd_spec *spec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int opts_usage_error(const cmd_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
