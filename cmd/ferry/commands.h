/* commands.h - the subcommand tables that main.c dispatches on. Each subcommand group
 * (cmd_queue.c, cmd_job.c, cmd_worker.c, cmd_bench.c) exports one table, terminated by an
 * entry with name NULL. */
#ifndef FERRY_CLI_COMMANDS_H
#define FERRY_CLI_COMMANDS_H

typedef struct cli_command {
    const char *name;    /* "queue add": the words that select it */
    const char *summary; /* one line for `ferry help` */
    /* argv[0..argc-1] are the arguments after the command words. Returns the exit code. */
    int (*run)(int argc, char **argv);
} cli_command;

extern const cli_command cmd_queue_table[];
extern const cli_command cmd_job_table[];
extern const cli_command cmd_worker_table[];
extern const cli_command cmd_http_table[];
extern const cli_command cmd_bench_table[];
extern const cli_command cmd_scheduler_table[];
extern const cli_command cmd_outbox_table[];

#endif
