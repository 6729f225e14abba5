/* api_schedulers.c - GET /api/queues/{queue}/schedulers: the queue's job schedulers
 * (ferry's and Node BullMQ's) with every stored field, and the next run both in UTC and as
 * local time in the scheduler's own time zone with its offset ("2026-12-04T03:00:00+07:00"
 * for Asia/Ho_Chi_Minh), the zone resolved as the scheduler itself resolves it (src/sched's
 * tz.h, luxon's rules). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/api_json.h"
#include "ferry/scheduler.h"
#include "sched/tz.h"

/* ms as local time in zone tz ("2026-12-04T03:00:00.000+07:00") into buf; NULL when the
 * zone cannot be resolved (its error in *err). */
static const char *local_text(long long ms, const char *tz, char *buf, size_t cap,
                              ferry_error *err) {
    ferry__tz *z = NULL;
    if (ferry__tz_open(tz, &z, err)) return NULL;
    long long secs = ms >= 0 ? ms / 1000 : 0;
    long off = ferry__tz_offset(z, secs);
    ferry__tz_close(z);
    time_t t = (time_t)(secs + off);
    struct tm tm;
    char day[40] = "?";
    if (gmtime_r(&t, &tm)) strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    long a = off < 0 ? -off : off;
    snprintf(buf, cap, "%s.%03lld%c%02ld:%02ld", day, ms >= 0 ? ms % 1000 : 0, off < 0 ? '-' : '+',
             a / 3600, (a % 3600) / 60);
    return buf;
}

static json_t *scheduler_json(const ferry_scheduler_info *i) {
    json_t *o = json_object();
    json_object_set_new(o, "key", ferry__api_str(i->id));
    json_object_set_new(o, "name", ferry__api_str(i->name));
    ferry__api_set_time(o, "next", i->next_ms, 0);
    const char *tz = i->tz && *i->tz ? i->tz : "UTC";
    char local[64];
    ferry_error err = {0};
    if (local_text(i->next_ms, tz, local, sizeof local, &err)) {
        json_object_set_new(o, "nextLocal", json_string(local));
    } else {
        json_object_set_new(o, "nextLocal", json_null());
        json_object_set_new(o, "tzError", ferry__api_str(err.message));
    }
    json_object_set_new(o, "tz", ferry__api_str(i->tz));
    json_object_set_new(o, "pattern", ferry__api_str(i->pattern));
    json_object_set_new(o, "every", i->every_ms ? json_integer(i->every_ms) : json_null());
    json_object_set_new(o, "offset", i->offset_ms >= 0 ? json_integer(i->offset_ms) : json_null());
    json_object_set_new(o, "iterationCount", json_integer(i->iteration_count));
    json_object_set_new(o, "limit", i->limit ? json_integer(i->limit) : json_null());
    ferry__api_set_time(o, "startDate", i->start_date_ms, 1);
    ferry__api_set_time(o, "endDate", i->end_date_ms, 1);
    json_t *t = json_object();
    json_object_set_new(t, "data",
                        i->data_json ? ferry__api_stored_json(i->data_json) : json_object());
    json_object_set_new(t, "opts",
                        i->opts_json ? ferry__api_stored_opts(i->opts_json) : json_object());
    json_object_set_new(o, "template", t);
    return o;
}

/* GET /api/queues/{queue}/schedulers?start=&limit= (soonest next run first) */
static int schedulers_list(ferry__admin_req *r, ferry__admin_resp *out) {
    long long start, limit;
    if (ferry__api_query_ll(r, out, "start", 0, 1000000000LL, 0, &start) ||
        ferry__api_query_ll(r, out, "limit", 1, FERRY_SCHEDULER_LIST_MAX, FERRY_SCHEDULER_LIST_MAX,
                            &limit))
        return -1;
    ferry_queue *q;
    if (ferry__api_queue(r, out, &q)) return -1;
    ferry_error err = {0};
    ferry_scheduler_info *items = NULL;
    size_t n = 0;
    long long total = 0;
    if (ferry_scheduler_count(q, &total, &err) ||
        ferry_scheduler_list(q, start, (size_t)limit, 1, &items, &n, &err)) {
        ferry__admin_queue_release(r, q);
        return ferry__admin_fail_err(out, &err);
    }
    ferry__admin_queue_release(r, q);
    json_t *list = json_array();
    for (size_t k = 0; k < n; k++)
        json_array_append_new(list, scheduler_json(&items[k]));
    ferry_scheduler_list_free(items, n);
    out->json = json_pack("{s:o, s:I}", "schedulers", list, "total", (json_int_t)total);
    return 0;
}

const ferry__admin_route ferry__admin_routes_schedulers[] = {
    {"GET", "/api/queues/{}/schedulers", FERRY__ADMIN_SCOPE_READ, schedulers_list},
    {NULL, NULL, 0, NULL},
};
