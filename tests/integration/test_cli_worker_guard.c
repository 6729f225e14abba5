/* test_cli_worker_guard.c - a job's command, and everything it started, does not outlive
 * `ferry worker`: after a SIGKILL of the worker, after the time limit, and when the command
 * exits leaving processes behind (a background child, one that called setsid, one that
 * double-forked). Also: the command has no descriptor but 0/1/2, and the guard's hidden
 * mode is not a command; a command that stops its guard defeats neither the time limit nor
 * the stop escalation. Real binary, real processes, the fixture's Redis. */
#include <errno.h>

#include "support/cli.h"

/* The job command: the job name chooses what it leaves running. Each process it starts
 * appends its own pid to $CLITEST_DIR/pids-<job id>, the command last ("cmd <pid>"). */
static const char guard_script[] =
    "#!/bin/sh\n"
    "cat > /dev/null\n"
    "pids=\"$CLITEST_DIR/pids-$FERRY_JOB_ID\"\n"
    "case \"$FERRY_JOB_NAME\" in\n"
    "  tree|leave)\n"
    "    sleep 300 & echo \"bg $!\" >> \"$pids\"\n"
    "    setsid sh -c 'echo \"sid $$\" >> \"$1\"; exec sleep 301' sh \"$pids\" &\n"
    "    ( sh -c 'echo \"orphan $$\" >> \"$1\"; exec sleep 302' sh \"$pids\" & )\n"
    "    while [ \"$(wc -l < \"$pids\")\" -lt 3 ]; do sleep 0.02; done\n"
    "    echo \"cmd $$\" >> \"$pids\"\n"
    "    [ \"$FERRY_JOB_NAME\" = leave ] && { echo '\"left\"'; exit 0; }\n"
    "    sleep 303 ;;\n"
    "  fds) exec ls /proc/self/fd ;;\n"
    "esac\n";

static const char *guard_script_path(void) {
    static char path[128];
    if (!path[0]) {
        snprintf(path, sizeof path, "%s/guard-job.sh", th_tmpdir());
        th_write_file(path, guard_script, 0755);
    }
    return path;
}

static pid_t start_guard_worker(const char *p, const char *q, const char *const *extra,
                                char *err_path, size_t cap) {
    return cli_worker_start_cmd(p, q, extra, guard_script_path(), err_path, cap);
}

/* ---- the processes a job left ----------------------------------------------------------- */

#define TREE_MAX 8

typedef struct tree {
    char path[200];
    int n;
    char role[TREE_MAX][8];
    pid_t pid[TREE_MAX];
} tree;

/* Read the pids file; 1 once the command wrote its own line (all four are there). */
static int tree_read(void *arg) {
    tree *t = arg;
    FILE *f = fopen(t->path, "r");
    if (!f) return 0;
    t->n = 0;
    int pid, done = 0;
    char role[8];
    while (t->n < TREE_MAX && fscanf(f, "%7s %d", role, &pid) == 2) {
        snprintf(t->role[t->n], sizeof t->role[t->n], "%s", role);
        t->pid[t->n++] = (pid_t)pid;
        if (!strcmp(role, "cmd")) done = 1;
    }
    fclose(f);
    return done && t->n == 4;
}

/* /proc/PID/stat fields after "(comm)": state, ppid, pgrp, session. 0 when not running
 * (gone, or a zombie: dead, only not reaped yet by whoever inherited it). */
static int proc_stat(pid_t pid, int *pgrp, int *session) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    char state;
    int ppid, pg, sid;
    if (!rp || sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pg, &sid) != 4) return 0;
    if (state == 'Z' || state == 'X') return 0;
    if (pgrp) *pgrp = pg;
    if (session) *session = sid;
    return 1;
}

static int tree_alive(const tree *t) {
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += proc_stat(t->pid[i], NULL, NULL);
    return n;
}

static int tree_gone(void *arg) {
    return tree_alive(arg) == 0;
}

/* On failure: say which processes survive, and kill them so no sleep outlives the test. */
static void tree_expect_gone(tree *t, const char *after, const char *log) {
    if (th_wait_until(tree_gone, t, 5000)) return;
    char alive[256] = "";
    for (int i = 0; i < t->n; i++)
        if (proc_stat(t->pid[i], NULL, NULL)) {
            size_t l = strlen(alive);
            snprintf(alive + l, sizeof alive - l, " %s=%d", t->role[i], (int)t->pid[i]);
            kill(t->pid[i], SIGKILL);
        }
    /* and the command's foreground child: the command leads its process group */
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->role[i], "cmd")) kill(-t->pid[i], SIGKILL);
    fail_msg("5 s after %s, still running:%s\nworker log:\n%s", after, alive, log ? log : "");
}

/* The test means what it says: one process is in the command's group, one in a session of
 * its own, one orphaned by its parent (no longer the command's child). */
static void tree_check_shape(const tree *t) {
    int cmd_pg = -1, pg, sid;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->role[i], "cmd") && !proc_stat(t->pid[i], &cmd_pg, NULL))
            fail_msg("the command is not running");
    for (int i = 0; i < t->n; i++) {
        if (!proc_stat(t->pid[i], &pg, &sid)) fail_msg("%s is not running", t->role[i]);
        if (!strcmp(t->role[i], "bg") && pg != cmd_pg) fail_msg("bg is not in the group");
        if (!strcmp(t->role[i], "sid") && sid != t->pid[i]) fail_msg("sid has no own session");
    }
}

static void start_tree_job(const char *p, const char *q, const char *name, char *id, size_t cap,
                           tree *t) {
    cli_add_job(p, q, name, "{}", "{}", id, cap);
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s/pids-%s", th_tmpdir(), id);
    unlink(t->path);
}

/* ---- tests ---------------------------------------------------------------------------- */

/* The reproduction of the audit: the worker is SIGKILLed while its command runs (with a
 * time limit that the dead worker can no longer enforce). Everything the command started
 * must go with the worker, at once, not after the command's own 300 s. */
static void test_sigkill_of_worker_kills_the_job(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-kill";
    char id[64], errp[160];
    tree t;
    start_tree_job(p, q, "tree", id, sizeof id, &t);
    pid_t w = start_guard_worker(p, q, CLI_ARGV("--job-timeout", "60000"), errp, sizeof errp);
    if (!th_wait_until(tree_read, &t, 30000)) {
        kill(w, SIGKILL);
        cli_wait(w, 10000);
        fail_msg("the job never started its processes; log:\n%s", th_slurp(errp));
    }
    tree_check_shape(&t);
    kill(w, SIGKILL);
    cli_wait(w, 10000);
    char *log = th_slurp(errp);
    tree_expect_gone(&t, "the worker's SIGKILL", log);
    free(log);
}

/* The time limit stops the command's group with SIGTERM; what escaped the group goes too,
 * while the worker lives on. */
static void test_timeout_kills_the_whole_job(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-timeout";
    char id[64], errp[160];
    tree t;
    start_tree_job(p, q, "tree", id, sizeof id, &t);
    pid_t w = start_guard_worker(p, q, CLI_ARGV("--job-timeout", "2000", "--kill-grace", "500"),
                                 errp, sizeof errp);
    int started = th_wait_until(tree_read, &t, 30000);
    cli_finished_arg fa = {p, q, 1};
    int finished = started && th_wait_until(cli_all_finished, &fa, 30000);
    if (started) tree_expect_gone(&t, "the time limit", NULL);
    kill(w, SIGTERM);
    int code = cli_wait(w, 30000);
    char *log = th_slurp(errp);
    if (!started || !finished || code != 0)
        fail_msg("started %d finished %d exit %d; log:\n%s", started, finished, code, log);
    free(log);
    cli_expect_state(p, q, id, "failed");
    cli_expect_field(p, q, id, "failedReason", "timeout after 2000 ms");
}

/* A command that exits 0 leaving processes behind: its job completes with its stdout, and
 * what it left is killed (the job's processes end with the job), even those that are no
 * longer in its group or its children. */
static void test_leftovers_end_with_the_command(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-leave";
    char id[64], errp[160];
    tree t;
    start_tree_job(p, q, "leave", id, sizeof id, &t);
    pid_t w = start_guard_worker(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    int code = cli_wait(w, 60000);
    char *log = th_slurp(errp);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, log);
    if (!tree_read(&t)) fail_msg("the job did not record its processes; log:\n%s", log);
    tree_expect_gone(&t, "the command's exit", log);
    free(log);
    cli_expect_state(p, q, id, "completed");
    cli_expect_field(p, q, id, "returnvalue", "\"left\"");
}

/* The command sees 0, 1 and 2 only (`ls` adds its own directory descriptor, 3), although the
 * worker was started with more open (this test process's are inherited by it). */
static void test_command_has_only_std_fds(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-fds";
    int extra = open("/dev/null", O_RDONLY); /* not close-on-exec: the worker inherits it */
    char id[64], errp[160];
    cli_add_job(p, q, "fds", "{}", "{}", id, sizeof id);
    pid_t w = start_guard_worker(p, q, CLI_ARGV("--max-jobs", "1"), errp, sizeof errp);
    int code = cli_wait(w, 60000);
    close(extra);
    if (code != 0) fail_msg("worker exit %d; log:\n%s", code, th_slurp(errp));
    cli_expect_state(p, q, id, "completed");
    cli_expect_field(p, q, id, "returnvalue", "\"0\\n1\\n2\\n3\"");
}

/* A command removed while the worker runs: the guard cannot start it and says why, and the
 * job fails (transient) with that reason, as when the worker started commands itself. */
static void test_command_that_cannot_start(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-gone";
    char path[200], errp[160], id[64];
    snprintf(path, sizeof path, "%s/vanishing.sh", th_tmpdir());
    th_write_file(path, "#!/bin/sh\nexit 0\n", 0755);
    char outp[160];
    snprintf(errp, sizeof errp, "%s/gone.err", th_tmpdir());
    snprintf(outp, sizeof outp, "%s/gone.out", th_tmpdir());
    pid_t w = cli_start(CLI_ARGV("worker", q, "--redis", cli_url(), "--prefix", p, "--", path),
                        NULL, NULL, outp, errp);
    th_log_arg started = {errp, " started"};
    int ok = th_wait_until(th_log_has, &started, 30000);
    unlink(path);
    cli_add_job(p, q, "x", "{}", "{}", id, sizeof id);
    cli_finished_arg fa = {p, q, 1};
    ok = ok && th_wait_until(cli_all_finished, &fa, 30000);
    kill(w, SIGTERM);
    int code = cli_wait(w, 30000);
    char *log = th_slurp(errp);
    if (!ok || code != 0) fail_msg("exit %d; log:\n%s", code, log);
    free(log);
    cli_expect_state(p, q, id, "failed");
    char want[300];
    snprintf(want, sizeof want, "cannot run %s: %s", path, strerror(ENOENT));
    cli_expect_field(p, q, id, "failedReason", want);
}

/* A command that stops its guard (SIGSTOP cannot be blocked) and then runs on. The guard
 * reads the worker's requests, so a stopped one used to defeat the time limit and the stop
 * escalation: the job stayed active. The command records its pid; `trap '' TERM` makes
 * only the SIGKILL stage end it. */
static const char stopper_script[] = "#!/bin/bash\n"
                                     "cat > /dev/null\n"
                                     "trap '' TERM\n"
                                     "echo \"cmd $$\" > \"$CLITEST_DIR/stopper-$FERRY_JOB_ID\"\n"
                                     "kill -STOP $PPID\n"
                                     "sleep 300\n";

static pid_t start_stopper_worker(const char *p, const char *q, const char *const *extra,
                                  char *err_path, size_t cap) {
    static char script[160];
    snprintf(script, sizeof script, "%s/stopper.sh", th_tmpdir());
    th_write_file(script, stopper_script, 0755);
    return cli_worker_start_cmd(p, q, extra, script, err_path, cap);
}

typedef struct stopper {
    char path[200];
    pid_t cmd;
} stopper;

/* 1 once the command wrote its pid and its guard (its parent) is stopped. */
static int stopper_ready(void *arg) {
    stopper *s = arg;
    FILE *f = fopen(s->path, "r");
    if (!f) return 0;
    int pid = 0;
    int ok = fscanf(f, "cmd %d", &pid) == 1;
    fclose(f);
    if (!ok) return 0;
    s->cmd = (pid_t)pid;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')'), state;
    int ppid;
    if (!rp || sscanf(rp + 1, " %c %d", &state, &ppid) != 2) return 0;
    snprintf(path, sizeof path, "/proc/%d/stat", ppid);
    f = fopen(path, "r");
    if (!f) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    rp = strrchr(buf, ')');
    return rp && sscanf(rp + 1, " %c", &state) == 1 && state == 'T';
}

static int stopper_cmd_gone(void *arg) {
    const stopper *s = arg;
    return s->cmd <= 0 || !proc_stat(s->cmd, NULL, NULL);
}

static void stopper_cleanup(const stopper *s) {
    if (s->cmd > 0) kill(-s->cmd, SIGKILL);
}

/* The worker's exit code, or -1 when it still runs after timeout_ms (then it is killed, as
 * is the command, so that nothing outlives the test before it fails). */
static int stopper_wait(pid_t w, const stopper *s, int timeout_ms) {
    long long deadline = th_mono_ms() + timeout_ms;
    int st;
    while (waitpid(w, &st, WNOHANG) != w) {
        if (th_mono_ms() > deadline) {
            kill(w, SIGKILL);
            waitpid(w, &st, 0);
            stopper_cleanup(s);
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The time limit ends the job although the command stopped its guard. */
static void test_stopped_guard_timeout(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-stopped-timeout";
    char id[64], errp[160];
    cli_add_job(p, q, "x", "{}", "{}", id, sizeof id);
    stopper s = {.cmd = 0};
    snprintf(s.path, sizeof s.path, "%s/stopper-%s", th_tmpdir(), id);
    pid_t w = start_stopper_worker(
        p, q, CLI_ARGV("--max-jobs", "1", "--job-timeout", "2000", "--kill-grace", "500"), errp,
        sizeof errp);
    int ready = th_wait_until(stopper_ready, &s, 30000);
    cli_finished_arg fa = {p, q, 1};
    int finished = ready && th_wait_until(cli_all_finished, &fa, 10000);
    int code = stopper_wait(w, &s, finished ? 30000 : 0);
    int cmd_alive = !th_wait_until(stopper_cmd_gone, &s, 5000);
    stopper_cleanup(&s);
    char *log = th_slurp(errp);
    if (!ready || !finished || code != 0 || cmd_alive)
        fail_msg("guard stopped %d, job finished %d, exit %d, command alive %d; log:\n%s", ready,
                 finished, code, cmd_alive, log);
    free(log);
    cli_expect_state(p, q, id, "failed");
    cli_expect_field(p, q, id, "failedReason", "timeout after 2000 ms");
}

/* Three SIGTERMs (drain, SIGTERM to the command, SIGKILL to it) end the worker long before
 * its shutdown timeout, although the command stopped its guard and ignores SIGTERM. */
static void test_stopped_guard_stop_escalation(void **state) {
    (void)state;
    const char *p = th_prefix(), *q = "guard-stopped-stop";
    char id[64], errp[160];
    cli_add_job(p, q, "x", "{}", "{}", id, sizeof id);
    stopper s = {.cmd = 0};
    snprintf(s.path, sizeof s.path, "%s/stopper-%s", th_tmpdir(), id);
    pid_t w =
        start_stopper_worker(p, q, CLI_ARGV("--shutdown-timeout", "120000"), errp, sizeof errp);
    int ready = th_wait_until(stopper_ready, &s, 30000);
    for (int i = 0; ready && i < 3; i++) {
        kill(w, SIGTERM);
        struct timespec ts = {0, 300 * 1000 * 1000}; /* one signal at a time */
        nanosleep(&ts, NULL);
    }
    int code = stopper_wait(w, &s, 20000);
    int cmd_alive = !th_wait_until(stopper_cmd_gone, &s, 5000);
    stopper_cleanup(&s);
    char *log = th_slurp(errp);
    if (!ready || code == -1 || cmd_alive)
        fail_msg("guard stopped %d, worker exit %d, command alive %d; log:\n%s", ready, code,
                 cmd_alive, log);
    free(log);
}

/* The guard's mode is no command: refused without its descriptors, not listed in help. */
static void test_guard_mode_is_hidden(void **state) {
    (void)state;
    cli_run r;
    CLI(r, "internal:exec-guard", "/bin/true");
    CLI_EXPECT(r, 2);
    if (!strstr(r.err, "not a command") || cli_lines(r.err) != 1) fail_msg("stderr: %s", r.err);
    cli_run_free(&r);
    CLI(r, "--help");
    CLI_EXPECT(r, 0);
    if (strstr(r.out, "guard")) fail_msg("help lists the guard:\n%s", r.out);
    cli_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_of_worker_kills_the_job),
        cmocka_unit_test(test_timeout_kills_the_whole_job),
        cmocka_unit_test(test_leftovers_end_with_the_command),
        cmocka_unit_test(test_command_has_only_std_fds),
        cmocka_unit_test(test_command_that_cannot_start),
        cmocka_unit_test(test_guard_mode_is_hidden),
        cmocka_unit_test(test_stopped_guard_timeout),
        cmocka_unit_test(test_stopped_guard_stop_escalation),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    th_tmpdir_remove();
    return failed;
}
