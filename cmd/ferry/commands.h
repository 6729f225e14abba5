/* commands.h - every ferry command, declared once in one table (commands.c), and the runner
 * that does what the commands have in common.
 *
 * A command is either a body run by cli_command_run, which parses its options and the
 * connection options, checks, resolves the connection, opens the queue named by the first
 * positional and closes it again as the table entry's flags say; or a `main` of its own for
 * the commands whose set-up is their own (a worker, a daemon, a database command, the
 * bench). Main thread only. */
#ifndef FERRY_CLI_COMMANDS_H
#define FERRY_CLI_COMMANDS_H

#include <stddef.h>

#include "cli.h"

/* What a command needs before its body runs (cli_command.needs). */
enum {
    CLI_NEEDS_REDIS = 1 << 0, /* the connection options, resolved (cli_conn_resolve) */
    CLI_NEEDS_QUEUE = 1 << 1, /* + the queue named by the first positional, opened */
    CLI_QUEUE_READS_ONLY = 1 << 2, /* open it with CLI_QUEUE_READS (else CLI_QUEUE_WRITES);
                                      a check hook may change ctx->queue_use */
    CLI_NEEDS_DATABASE = 1 << 3,   /* takes the database options (--database-url ...); such
                                      commands have a main of their own (cmd_outbox.c) */
};

/* What the runner hands a command's hooks. */
typedef struct cli_ctx {
    const cmd_spec *spec;
    void *opts;            /* the command's option struct (its `defs` write into it) */
    opt_result r;          /* positionals */
    cli_conn conn;         /* resolved when CLI_NEEDS_REDIS */
    cli_queue_use queue_use;
    ferry_queue *q;        /* open when CLI_NEEDS_QUEUE */
} cli_ctx;

/* How one command is set up and run. */
typedef struct cli_setup {
    /* a command with a set-up of its own: argv[0..argc) are the words after the command's
     * name; returns the exit code. The fields below are then unused. */
    int (*main)(int argc, char **argv);
    const cmd_spec *spec;
    const opt_def *defs; /* the command's own options ("Options"), or NULL */
    size_t ndefs;
    void *opts;          /* where they are written (a static of the command's file) */
    /* after parsing, before connecting: usage checks; 0 to go on, else the exit code */
    int (*check)(cli_ctx *ctx);
    /* the work; returns the exit code */
    int (*body)(cli_ctx *ctx);
} cli_setup;

typedef struct cli_command {
    const char *name;    /* "queue add": the words that select it */
    const char *summary; /* one line for `ferry help` (the --help text has its own, longer) */
    const cli_setup *setup;
    unsigned needs;      /* CLI_NEEDS_* */
} cli_command;

/* The table, terminated by an entry with name NULL (commands.c). */
extern const cli_command cli_commands[];

/* Run command `c` on argv[0..argc) (the words after its name). Returns the exit code. */
int cli_command_run(const cli_command *c, int argc, char **argv);

/* The set-ups, one per command, from the command group files. */
extern const cli_setup queue_add_cmd, queue_add_bulk_cmd, queue_counts_cmd, queue_pause_cmd,
    queue_resume_cmd, queue_obliterate_cmd, queue_rate_limit_cmd, queue_concurrency_cmd,
    queue_global_rate_limit_cmd, queue_retry_cmd, queue_promote_cmd, queue_clean_cmd,
    queue_drain_cmd, queue_list_cmd, queue_workers_cmd, queue_events_cmd;
extern const cli_setup job_show_cmd, job_remove_cmd, job_retry_cmd, job_promote_cmd, job_list_cmd,
    job_logs_cmd, job_find_cmd;
extern const cli_setup worker_cmd, http_outcome_cmd;
extern const cli_setup scheduler_upsert_cmd, scheduler_list_cmd, scheduler_remove_cmd;
extern const cli_setup migrate_cmd, relay_cmd, outbox_status_cmd, outbox_cleanup_cmd;
extern const cli_setup serve_cmd; /* cmd_serve.c */
extern const cli_setup inbox_status_cmd, inbox_cleanup_cmd;
extern const cli_setup dlq_sync_cmd, dlq_list_cmd, dlq_show_cmd, dlq_redrive_cmd, dlq_purge_cmd;
extern const cli_setup trace_cmd; /* cmd_trace.c */
extern const cli_setup bench_cmd;

#endif
