/* exec_guard.h - what exec_job.c (the worker's side) and exec_guard.c (the guard process)
 * agree on: the guard's descriptors, the requests on the lifeline, and how a command is
 * spawned (see exec_job.h for the design). */
#ifndef FERRY_CLI_EXEC_GUARD_H
#define FERRY_CLI_EXEC_GUARD_H

#include <spawn.h>

/* The guard's descriptors: the lifeline it reads, the report pipe it writes. */
#define GUARD_LIFELINE_FD 3
#define GUARD_REPORT_FD 4
/* Requests the worker writes on the lifeline. */
#define GUARD_REQ_TERM 'T' /* SIGTERM to the command's process group */
#define GUARD_REQ_KILL 'K' /* SIGKILL to it (the rest is killed when the command is gone) */

/* Fill *at (posix_spawnattr_init) for starting the guard or the command: an empty signal
 * mask; reset to the default the signals the worker catches or ignores itself (SIGPIPE)
 * and what a shell that started it in the background may have left ignored; a process
 * group of its own. */
void exec_spawn_attr_init(posix_spawnattr_t *at);

#endif
