/* fuzz_cron.c - libFuzzer target for the scheduler's parsers: cron expressions (parse and
 * next-run search in several DST zones), POSIX TZ rules and TZif data (src/sched/).
 *
 * Input: byte 0 selects the mode (bits 0-1) and the zone (bits 2-7); bytes 1-8 are the
 * search start (little-endian, folded into the accepted range); the rest is the payload. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/cron.h"
#include "sched/tz.h"

static const char *const ZONES[] = {
    NULL,        "Europe/Berlin",    "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu",
    "utc+05:30", "America/Santiago", "Antarctica/Troll", "Africa/Casablanca"};

static void probe_zone(const ferry__tz *z, long long t) {
    long long probes[] = {t, -t, t * 1000, 0, 4102444800LL, -2208988800LL, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        (void)ferry__tz_offset(z, probes[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 9) return 0;
    uint64_t raw = 0;
    for (int i = 0; i < 8; i++)
        raw |= (uint64_t)data[1 + i] << (8 * i);
    long long after = (long long)(raw % (uint64_t)(FERRY_CRON_MS_MAX + 1));
    const uint8_t *payload = data + 9;
    size_t n = size - 9;
    int mode = data[0] & 3;

    if (mode == 3) { /* TZif bytes */
        ferry__tz *z;
        if (ferry__tz_from_tzif(payload, n, &z, NULL) == 0) {
            probe_zone(z, after / 1000);
            ferry__tz_close(z);
        }
        return 0;
    }
    char *text = malloc(n + 1);
    if (!text) return 0;
    memcpy(text, payload, n);
    text[n] = '\0';
    if (mode == 2) { /* POSIX TZ rule */
        ferry__tz *z;
        if (ferry__tz_from_posix(text, &z, NULL) == 0) {
            probe_zone(z, after / 1000);
            ferry__tz_close(z);
        }
    } else { /* cron expression, then a few chained searches */
        ferry__cron *c;
        ferry_error err;
        if (ferry__cron_parse(text, &c, &err) == 0) {
            const char *zone = ZONES[(data[0] >> 2) % (sizeof ZONES / sizeof ZONES[0])];
            long long cur = after, next;
            for (int i = 0; i < 3 && cur <= FERRY_CRON_MS_MAX; i++) {
                if (ferry__cron_next(c, zone, cur, &next, &err) != 0) break;
                /* Forward, except where cron-parser itself steps back (see docs/cron.md) */
                cur = next > cur ? next : cur + 1000;
            }
            ferry__cron_free(c);
        }
    }
    free(text);
    return 0;
}
