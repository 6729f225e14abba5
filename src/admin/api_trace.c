/* api_trace.c - GET /api/trace/{eventId}: everything known about one outbox event
 * (ferry/trace.h over the server's PostgreSQL pool, its Redis and its routes): the outbox
 * row, the route targets, the jobs, the inbox markers, the dead letters and their redrives.
 * 400 for an id that is not a UUID, 404 when nothing knows it, 503 without a database. */
#include <stdlib.h>
#include <string.h>

#include "admin/api_json.h"
#include "ferry/trace.h"
#include "util/uuid7.h"

/* GET /api/trace/{eventId} */
static int trace_get(ferry__admin_req *r, ferry__admin_resp *out) {
    const char *id = r->params[0];
    ferry_trace_options o;
    ferry_trace_options_init(&o);
    o.schema = r->cfg->schema;
    o.redis = r->cfg->redis;
    o.prefix = r->cfg->prefix;
    o.routes = r->cfg->routes;
    o.max_queues = 200; /* as the overview: a request stays short */
    /* the id's form first: a bad one is the caller's mistake whatever the server has */
    if (strlen(id) != FERRY_UUID_STRLEN || !ferry__uuid_text_valid(id, FERRY_UUID_STRLEN))
        return ferry__admin_fail(out, 400,
                                 "event id: not a UUID (an outbox event id looks like "
                                 "0190a5c4-7b1e-7c3d-9f00-1234567890ab)");
    ferry_trace *t = NULL;
    ferry_error err = {0};
    if (!r->cfg->has_database)
        return ferry__admin_fail(out, 503, "no database configured (ferry serve --database)");
    PGconn *conn;
    if (ferry__admin_pg(r, &conn, &err)) return ferry__admin_fail_err(out, &err);
    int rc = ferry_trace_get(conn, &o, id, &t, &err);
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    if (rc) return ferry__admin_fail_err(out, &err);
    out->json = ferry__trace_json(t);
    ferry_trace_free(t);
    return 0;
}

const ferry__admin_route ferry__admin_routes_trace[] = {
    {"GET", "/api/trace/{}", FERRY__ADMIN_SCOPE_READ, trace_get},
    {NULL, NULL, 0, NULL},
};
