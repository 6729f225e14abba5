/* commands.c - the one command table and the runner of what commands share: parse the
 * command's options with the connection options, check, resolve the connection, open the
 * queue, run the body, close the queue (see commands.h). */
#include "commands.h"

#include <stdlib.h>

/* The order is the order of `ferry help`. */
const cli_command cli_commands[] = {
    {"queue add", "Add a job and print its id.", &queue_add_cmd, CLI_NEEDS_REDIS},
    {"queue add-bulk", "Add jobs from NDJSON lines and print their ids.", &queue_add_bulk_cmd,
     CLI_NEEDS_REDIS},
    {"queue list", "List the queues under a prefix, with their counts.", &queue_list_cmd,
     CLI_NEEDS_REDIS},
    {"queue counts", "Show job counts by state.", &queue_counts_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue pause", "Pause a queue for all workers.", &queue_pause_cmd, CLI_NEEDS_QUEUE},
    {"queue resume", "Resume a paused queue.", &queue_resume_cmd, CLI_NEEDS_QUEUE},
    {"queue obliterate", "Delete a queue and all its jobs.", &queue_obliterate_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue rate-limit", "Rate-limit a queue for some ms, clear or show it.",
     &queue_rate_limit_cmd, CLI_NEEDS_QUEUE},
    {"queue concurrency", "Set, remove or show a queue's global concurrency.",
     &queue_concurrency_cmd, CLI_NEEDS_QUEUE},
    {"queue global-rate-limit", "Set, remove or show a queue's global rate limit.",
     &queue_global_rate_limit_cmd, CLI_NEEDS_QUEUE},
    /* READS for retry / promote (here and under job): they write only when a job moves
     * (then the events and their cap, as Node's scripts), so naming a queue that does not
     * exist creates no key */
    {"queue retry", "Retry the failed (or completed) jobs of a queue.", &queue_retry_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue promote", "Promote a queue's delayed jobs to run now.", &queue_promote_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    /* READS: clean writes only its `cleaned` events, drain nothing but deletions */
    {"queue clean", "Delete a queue's jobs in one state older than a grace period.",
     &queue_clean_cmd, CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue drain", "Delete every waiting (and optionally delayed) job of a queue.",
     &queue_drain_cmd, CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue workers", "List the workers of a queue (Node's and ferry's).", &queue_workers_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"queue events", "Print a queue's events (as QueueEvents), optionally following them.",
     &queue_events_cmd, CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job show", "Show one job (all fields).", &job_show_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job list", "List a page of the jobs in one state.", &job_list_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job logs", "Print the log lines of one job.", &job_logs_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job find", "Find jobs by name or data text (a bounded scan).", &job_find_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    /* READS: removing writes no meta, and works on any queue that exists (Node may have made
     * one whose name ferry would not add jobs to) */
    {"job remove", "Remove one job.", &job_remove_cmd, CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job retry", "Retry one failed or completed job.", &job_retry_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"job promote", "Promote one delayed job to run now.", &job_promote_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"worker", "Run a command for each job of a queue (exec worker).", &worker_cmd,
     CLI_NEEDS_REDIS},
    {"http-outcome", "Map an HTTP status (+ Retry-After) to a worker exit code.",
     &http_outcome_cmd, 0},
    {"scheduler upsert", "Create or replace a job scheduler (cron or interval).",
     &scheduler_upsert_cmd, CLI_NEEDS_QUEUE},
    {"scheduler list", "List the job schedulers of a queue.", &scheduler_list_cmd,
     CLI_NEEDS_QUEUE | CLI_QUEUE_READS_ONLY},
    {"scheduler remove", "Remove a job scheduler and its pending iteration.",
     &scheduler_remove_cmd, CLI_NEEDS_QUEUE},
    {"migrate", "Create or upgrade ferry's PostgreSQL tables.", &migrate_cmd, CLI_NEEDS_DATABASE},
    {"relay", "Publish outbox events to queues (daemon).", &relay_cmd,
     CLI_NEEDS_DATABASE | CLI_NEEDS_REDIS},
    {"outbox status", "Show the outbox backlog.", &outbox_status_cmd, CLI_NEEDS_DATABASE},
    {"outbox cleanup", "Delete old published outbox rows.", &outbox_cleanup_cmd,
     CLI_NEEDS_DATABASE},
    {"inbox status", "Show idempotent-consumer markers per consumer.", &inbox_status_cmd,
     CLI_NEEDS_DATABASE},
    {"inbox cleanup", "Delete old idempotent-consumer markers.", &inbox_cleanup_cmd,
     CLI_NEEDS_DATABASE},
    {"dlq sync", "Record a queue's failed jobs as dead letters.", &dlq_sync_cmd,
     CLI_NEEDS_DATABASE | CLI_NEEDS_REDIS},
    {"dlq list", "List dead letters (filtered).", &dlq_list_cmd, CLI_NEEDS_DATABASE},
    {"dlq show", "Show one dead letter.", &dlq_show_cmd, CLI_NEEDS_DATABASE},
    {"dlq redrive", "Re-enqueue dead letters (dry run unless --execute).", &dlq_redrive_cmd,
     CLI_NEEDS_DATABASE | CLI_NEEDS_REDIS},
    {"dlq purge", "Delete dead letters (dry run unless --execute).", &dlq_purge_cmd,
     CLI_NEEDS_DATABASE},
    {"trace", "Show everything known about one outbox event, hop by hop.", &trace_cmd,
     CLI_NEEDS_DATABASE | CLI_NEEDS_REDIS},
    {"serve", "Serve the admin API, /metrics, /healthz and /readyz (daemon).", &serve_cmd,
     CLI_NEEDS_DATABASE | CLI_NEEDS_REDIS},
    {"bench", "Measure throughput and latency against a Redis server.", &bench_cmd,
     CLI_NEEDS_REDIS},
    {NULL, NULL, NULL, 0},
};

int cli_command_run(const cli_command *c, int argc, char **argv) {
    const cli_setup *s = c->setup;
    if (s->main) return s->main(argc, argv);
    cli_ctx ctx = {.spec = s->spec,
                   .opts = s->opts,
                   .queue_use = c->needs & CLI_QUEUE_READS_ONLY ? CLI_QUEUE_READS
                                                                : CLI_QUEUE_WRITES};
    opt_group groups[2];
    size_t ngroups = 0;
    if (s->defs) groups[ngroups++] = (opt_group){"Options", s->defs, s->ndefs, s->opts};
    int redis = (c->needs & (CLI_NEEDS_REDIS | CLI_NEEDS_QUEUE)) != 0; /* a queue is on Redis */
    if (redis) groups[ngroups++] = cli_conn_group(&ctx.conn, 0);
    int rc = opts_parse(s->spec, groups, ngroups, argc, argv, &ctx.r);
    if (rc) return rc == OPTS_HELP_SHOWN ? CLI_EXIT_OK : rc;
    if (s->check && (rc = s->check(&ctx))) goto out;
    if (redis && (rc = cli_conn_resolve(s->spec, &ctx.conn))) goto out;
    if ((c->needs & CLI_NEEDS_QUEUE) &&
        (rc = cli_open_queue(s->spec, &ctx.conn, ctx.r.pos[0], ctx.queue_use, &ctx.q)))
        goto out;
    rc = s->body(&ctx);
out:
    ferry_queue_close(ctx.q);
    free(ctx.r.pos);
    return rc;
}
