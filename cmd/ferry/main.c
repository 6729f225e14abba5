/* main.c - `ferry` entry point: finds the subcommand in the group tables and runs it.
 * Everything else lives in one file per subcommand group (cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ferry/ferry.h"
#include "opts.h"

static const cli_command *const groups[] = {cmd_queue_table, cmd_job_table,       cmd_worker_table,
                                            cmd_http_table,  cmd_scheduler_table, cmd_outbox_table,
                                            cmd_bench_table};
#define NGROUPS (sizeof groups / sizeof groups[0])

static void print_usage(FILE *f) {
    fprintf(f, "Usage: ferry COMMAND [ARGS...] [OPTIONS]\n\n"
               "BullMQ-compatible background jobs on Redis.\n\nCommands:\n");
    for (size_t g = 0; g < NGROUPS; g++)
        for (const cli_command *c = groups[g]; c->name; c++)
            fprintf(f, "  %-24s %s\n", c->name, c->summary);
    fprintf(f, "  %-24s %s\n", "help [COMMAND]", "Show help for a command.");
    fprintf(f, "  %-24s %s\n", "--version", "Print the version and exit.");
    fprintf(f,
            "\nRun `ferry COMMAND --help` for the options of a command.\n"
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
    for (size_t g = 0; g < NGROUPS; g++)
        for (const cli_command *c = groups[g]; c->name; c++)
            if ((*words = match(c->name, argc, argv)) > 0) return c;
    return NULL;
}

/* "ferry queue" alone or "ferry queue bogus": list what the group has. */
static int group_error(int argc, char **argv) {
    int known = 0;
    for (size_t g = 0; g < NGROUPS; g++)
        for (const cli_command *c = groups[g]; c->name; c++)
            if (!strncmp(c->name, argv[0], strlen(argv[0])) && c->name[strlen(argv[0])] == ' ')
                known = 1;
    if (!known) {
        fprintf(stderr, "ferry: unknown command '%s' (see ferry help)\n", argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (argc < 2)
        fprintf(stderr, "ferry %s: missing subcommand (see ferry help)\n", argv[0]);
    else
        fprintf(stderr, "ferry %s: unknown subcommand '%s' (see ferry help)\n", argv[0], argv[1]);
    return CLI_EXIT_USAGE;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (!strcmp(first, "--version") || !strcmp(first, "version")) {
        printf("ferry %s (library %s, BullMQ %s protocol)\n", FERRY_VERSION_STRING, ferry_version(),
               FERRY_BULLMQ_VERSION);
        return CLI_EXIT_OK;
    }
    if (!strcmp(first, "-h") || !strcmp(first, "--help") || (!strcmp(first, "help") && argc == 2)) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(first, "help")) {
        int words = 0;
        const cli_command *c = find(argc - 2, argv + 2, &words);
        if (!c || words != argc - 2) {
            fprintf(stderr, "ferry help: unknown command '%s'\n", argv[2]);
            return CLI_EXIT_USAGE;
        }
        char help[] = "--help";
        char *hargv[] = {help, NULL};
        return c->run(1, hargv);
    }
    int words = 0;
    const cli_command *c = find(argc - 1, argv + 1, &words);
    if (!c) return group_error(argc - 1, argv + 1);
    return c->run(argc - 1 - words, argv + 1 + words);
}
