/* main.c - `ferry` entry point: finds the command in the command table (commands.c) and
 * runs it. Everything else lives in one file per command group (cmd_*.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "exec_job.h"
#include "ferry/ferry.h"
#include "opts.h"

static void print_usage(FILE *f) {
    fprintf(f, "Usage: ferry COMMAND [ARGS...] [OPTIONS]\n\n"
               "BullMQ-compatible background jobs on Redis.\n\nCommands:\n");
    for (const cli_command *c = cli_commands; c->name; c++)
        fprintf(f, "  %-24s %s\n", c->name, c->summary);
    fprintf(f, "  %-24s %s\n", "help [COMMAND]", "Show help for a command or a group.");
    fprintf(f, "  %-24s %s\n", "--version", "Print the version and exit.");
    fprintf(f,
            "\nRun `ferry COMMAND --help` for the options of a command, `ferry GROUP --help`\n"
            "(queue, job, scheduler, outbox, inbox) for the commands of a group.\n"
            "Exit status: 0 success, 1 runtime failure (Redis unreachable, job not found, ...),\n"
            "2 bad arguments.\n");
}

/* Number of argv words the command name spans if argv starts with it, else 0. */
static int match(const char *name, int argc, char **argv) {
    int words = 0;
    const char *p = name;
    while (*p) {
        size_t n = strcspn(p, " ");
        if (words >= argc || strlen(argv[words]) != n || strncmp(argv[words], p, n)) return 0;
        words++;
        p += n;
        while (*p == ' ')
            p++;
    }
    return words;
}

static const cli_command *find(int argc, char **argv, int *words) {
    for (const cli_command *c = cli_commands; c->name; c++)
        if ((*words = match(c->name, argc, argv)) > 0) return c;
    return NULL;
}

/* Is `word` the first word of a multi-word command ("queue" of "queue add")? */
static int is_group(const char *word) {
    size_t n = strlen(word);
    for (const cli_command *c = cli_commands; c->name; c++)
        if (!strncmp(c->name, word, n) && c->name[n] == ' ') return 1;
    return 0;
}

/* `ferry queue --help`, `ferry help queue`: the group's commands, on stdout. */
static int group_help(const char *group) {
    size_t n = strlen(group);
    printf("Usage: ferry %s SUBCOMMAND [ARGS...] [OPTIONS]\n\nSubcommands:\n", group);
    for (const cli_command *c = cli_commands; c->name; c++)
        if (!strncmp(c->name, group, n) && c->name[n] == ' ')
            printf("  %-24s %s\n", c->name, c->summary);
    printf("\nRun `ferry %s SUBCOMMAND --help` for the options of a subcommand.\n", group);
    return CLI_EXIT_OK;
}

/* "ferry queue" alone or "ferry queue bogus": say what is wrong, and where the list is. */
static int group_error(int argc, char **argv) {
    if (!is_group(argv[0])) {
        fprintf(stderr, "ferry: unknown command '%s' (see ferry help)\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (argc < 2)
        fprintf(stderr, "ferry %s: missing subcommand (see ferry %s --help)\n", argv[0], argv[0]);
    else
        fprintf(stderr, "ferry %s: unknown subcommand '%s' (see ferry %s --help)\n", argv[0],
                argv[1], argv[0]);
    return CLI_EXIT_USAGE;
}

/* `ferry help WORDS...` (also `ferry --help WORDS...`). */
static int help_for(int argc, char **argv) {
    if (argc == 0) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc == 1 && is_group(argv[0])) return group_help(argv[0]);
    int words = 0;
    const cli_command *c = find(argc, argv, &words);
    if (!c || words != argc) {
        fprintf(stderr, "ferry help: unknown command '");
        for (int i = 0; i < argc; i++)
            fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
        fprintf(stderr, "' (see ferry help)\n");
        return CLI_EXIT_USAGE;
    }
    char help[] = "--help";
    char *hargv[] = {help, NULL};
    return cli_command_run(c, 1, hargv);
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    /* Not a command: the guard `ferry worker` starts for each job (exec_job.h). */
    if (!strcmp(first, EXEC_GUARD_MODE)) return exec_guard_main(argc - 2, argv + 2);
    if (!strcmp(first, "--version") || !strcmp(first, "version")) {
        if (argc > 2) {
            fprintf(stderr, "ferry %s: unexpected argument '%s' (takes none)\n", first, argv[2]);
            return CLI_EXIT_USAGE;
        }
        printf("ferry %s (library %s, BullMQ %s protocol)\nbuild: %s\n", FERRY_VERSION_STRING,
               ferry_version(), FERRY_BULLMQ_VERSION, FERRY_BUILD_INFO);
        return CLI_EXIT_OK;
    }
    if (!strcmp(first, "-h") || !strcmp(first, "--help") || !strcmp(first, "help"))
        return help_for(argc - 2, argv + 2);
    /* `ferry queue --help` / `ferry queue -h`: the group's subcommands */
    if (argc == 3 && is_group(first) && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))
        return group_help(first);
    int words = 0;
    const cli_command *c = find(argc - 1, argv + 1, &words);
    if (!c) return group_error(argc - 1, argv + 1);
    return cli_command_run(c, argc - 1 - words, argv + 1 + words);
}

int main(int argc, char **argv) {
    int rc = run(argc, argv);
    /* What a command printed (a job id, counts, a delay line) is its result: a failed write
     * (a full disk, a closed pipe) is a failure, not a silent success. A failing status
     * (2, the relay's 3, ...) is kept; success becomes 1. */
    errno = 0;
    int flush_failed = fflush(stdout) != 0;
    int e = errno;
    if (flush_failed || ferror(stdout)) {
        fprintf(stderr, "ferry: error writing standard output: %s\n",
                flush_failed && e ? strerror(e) : "an earlier write failed");
        return rc ? rc : CLI_EXIT_RUNTIME;
    }
    return rc;
}
