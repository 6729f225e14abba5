/* api_outbox.c - GET /api/outbox: the outbox's state (ferry_outbox_status_get with the
 * server's routes, when it was given some): unpublished rows, the oldest one's age, rows with
 * errors, quarantined rows, rows of topics without a route, and the same by topic. 503
 * without a database. */
#include "admin/api_json.h"
#include "ferry/outbox.h"

static int outbox_status(ferry__admin_req *r, ferry__admin_resp *out) {
    if (!r->cfg->has_database)
        return ferry__admin_fail(out, 503, "no database configured (ferry serve --database)");
    ferry_error err = {0};
    PGconn *conn = NULL;
    if (ferry__admin_pg(r, &conn, &err)) return ferry__admin_fail_err(out, &err);
    ferry_outbox_options oo;
    ferry_outbox_options_init(&oo);
    oo.schema = r->cfg->schema;
    ferry_outbox_status *s = NULL;
    int rc = ferry_outbox_status_get(conn, &oo, r->cfg->routes, &s, &err);
    ferry__admin_pg_release(r, conn, rc == FERRY_EIO);
    if (rc) return ferry__admin_fail_err(out, &err);
    json_t *topics = json_array();
    for (size_t i = 0; i < s->ntopics; i++) {
        const ferry_outbox_topic_status *t = &s->topics[i];
        json_array_append_new(
            topics, json_pack("{s:o, s:I, s:I, s:I, s:f, s:o}", "topic", ferry__api_str(t->topic),
                              "unpublished", (json_int_t)t->unpublished, "withErrors",
                              (json_int_t)t->with_errors, "quarantined", (json_int_t)t->quarantined,
                              "oldestAgeSeconds", t->oldest_age_s, "routed",
                              t->known < 0 ? json_null() : json_boolean(t->known)));
    }
    out->json = json_object();
    json_object_set_new(out->json, "schemaVersion", json_integer(s->schema_version));
    json_object_set_new(out->json, "unpublished", json_integer(s->unpublished));
    json_object_set_new(out->json, "oldestUnpublishedAgeSeconds", json_real(s->oldest_age_s));
    json_object_set_new(out->json, "withErrors", json_integer(s->with_errors));
    json_object_set_new(out->json, "quarantined", json_integer(s->quarantined));
    json_object_set_new(out->json, "routesGiven", json_boolean(r->cfg->routes != NULL));
    json_object_set_new(out->json, "unroutedRows", json_integer(s->unknown_rows));
    json_object_set_new(out->json, "topics", topics);
    json_object_set_new(out->json, "topicsTruncated", json_boolean(s->topics_truncated));
    ferry_outbox_status_free(s);
    return 0;
}

const ferry__admin_route ferry__admin_routes_outbox[] = {
    {"GET", "/api/outbox", FERRY__ADMIN_SCOPE_READ, outbox_status},
    {NULL, NULL, 0, NULL},
};
