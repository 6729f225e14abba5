/* logline.c - timestamped log lines of the long-running subcommands (see logline.h). */
#include "logline.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *logline_time(char *out, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    return out;
}

void logline(const char *prog, const char *fmt, ...) {
    char buf[2048], *text = buf, *heap = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf && (heap = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, fmt);
        vsnprintf(heap, (size_t)n + 1, fmt, ap);
        va_end(ap);
        text = heap;
    } /* else (no memory) the line is cut: losing a log line is worse */
    char t[LOGLINE_TIME_MAX];
    fprintf(stderr, "%s ferry %s: %s\n", logline_time(t, sizeof t), prog, text);
    free(heap);
}

void logline_json(const char *obj) {
    char t[LOGLINE_TIME_MAX];
    if (obj[0] != '{') {
        fprintf(stderr, "%s\n", obj);
        return;
    }
    const char *rest = obj + 1;
    while (*rest == ' ')
        rest++;
    fprintf(stderr, "{\"time\":\"%s\"%s%s\n", logline_time(t, sizeof t), *rest == '}' ? "" : ",",
            rest);
}
