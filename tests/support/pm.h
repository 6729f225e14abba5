/* pm.h - the real `promtool check metrics` (Debian's prometheus package) on a text, for the
 * tests of the Prometheus exposition. Header-only, like the other support helpers. A missing
 * promtool fails the test: the check is never skipped. */
#ifndef FERRY_TEST_PM_H
#define FERRY_TEST_PM_H

#include "th.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* promtool's path (static storage); fails the test when it is not on PATH. */
static inline const char *pm_promtool_path(void) {
    static char path[4096];
    FILE *p = popen("command -v promtool", "r");
    if (!p) fail_msg("popen: %s", strerror(errno));
    if (!fgets(path, sizeof path, p)) path[0] = '\0';
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    if (!path[0])
        fail_msg("promtool not found on PATH: install Debian's prometheus package "
                 "(scripts/install-deps.sh does); this check is never skipped");
    return path;
}

/* `promtool check metrics < text`: any complaint or a non-zero exit fails the test; `what`
 * names the text in the message and in the files kept in th_tmpdir(). */
static inline void pm_promtool_check(const char *text, const char *what) {
    char in[4096], out[4096];
    snprintf(in, sizeof in, "%s/%s.txt", th_tmpdir(), what);
    snprintf(out, sizeof out, "%s/%s.promtool", th_tmpdir(), what);
    th_write_file(in, text, 0600);
    const char *argv[] = {pm_promtool_path(), "check", "metrics", NULL};
    pid_t pid = th_spawn(argv, NULL, in, out, out, 0);
    int status;
    if (waitpid(pid, &status, 0) != pid) fail_msg("waitpid: %s", strerror(errno));
    char *said = th_slurp(out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || said[0])
        fail_msg("promtool check metrics on %s (status %d) said:\n%s\nof:\n%s", what, status, said,
                 text);
    free(said);
}

#endif
