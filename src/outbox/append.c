/* append.c - ferry_outbox_append: one event row written inside the caller's transaction.
 * Everything that can be checked locally is checked before the server sees anything, so a
 * bad event is a clear error and never an aborted application transaction. */
#include <stdio.h>
#include <string.h>

#include "ferry/outbox.h"
#include "pg/pg.h"
#include "outbox/routes.h"
#include "envelope/trace.h"
#include "util/uuid7.h"
#include "util/json_text.h"
#include "util/error.h"

/* The envelope nests the payload one level deeper, and queues accept 512 levels. */
#define PAYLOAD_MAX_DEPTH 511

int ferry__topic_check(const char *topic, ferry_error *err) {
    if (!topic) return ferry__err(err, FERRY_EINVAL, "topic is missing");
    size_t n = strnlen(topic, FERRY_OUTBOX_TOPIC_MAX + 1);
    if (n == 0) return ferry__err(err, FERRY_EINVAL, "topic is empty");
    if (n > FERRY_OUTBOX_TOPIC_MAX)
        return ferry__err(err, FERRY_EINVAL, "topic is longer than %d bytes",
                          FERRY_OUTBOX_TOPIC_MAX);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)topic[i];
        if (c <= 0x20 || c == 0x7f || c == '#')
            return ferry__err(err, FERRY_EINVAL,
                              "topic: byte %zu is a blank, control character or '#' (a routes "
                              "file could not name it)",
                              i);
    }
    if (!ferryx_utf8_valid(topic, n))
        return ferry__err(err, FERRY_EINVAL, "topic is not valid UTF-8");
    return 0;
}

static int check_event(const ferry_outbox_event *ev, size_t max_payload, ferry_error *err) {
    int rc = ferry__topic_check(ev->topic, err);
    if (rc) return rc;
    if (!ev->aggregate_id) return ferry__err(err, FERRY_EINVAL, "aggregate_id is missing");
    if (!ferry__uuid_text_valid(ev->aggregate_id, strnlen(ev->aggregate_id, FERRY_UUID_STRLEN + 1)))
        return ferry__err(err, FERRY_EINVAL,
                          "aggregate_id is not a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
    if (!ev->payload_json) return ferry__err(err, FERRY_EINVAL, "payload is missing");
    size_t n = strnlen(ev->payload_json, max_payload + 1);
    if (n > max_payload)
        return ferry__err(err, FERRY_ETOOBIG, "payload is %zu bytes, limit %zu",
                          strlen(ev->payload_json), max_payload);
    ferryx_json_check_error je;
    if (ferryx_json_check(ev->payload_json, n, PAYLOAD_MAX_DEPTH, &je))
        return ferry__err(err, FERRY_EINVAL, "payload: invalid JSON at byte %zu: %s%s", je.offset,
                          je.reason,
                          strcmp(je.reason, "nested too deeply") ? "" : " (limit 511 levels)");
    /* What jsonb refuses beyond JSON itself (\u0000, lone surrogates, numbers out of
     * numeric's range): the INSERT would fail and abort the caller's transaction. */
    if (ferryx_jsonb_check(ev->payload_json, n, &je))
        return ferry__err(err, FERRY_EINVAL, "payload: at byte %zu: %s", je.offset, je.reason);
    rc = ferry__trace_id_check(ev->trace_id, err);
    return rc;
}

void ferry_outbox_options_init(ferry_outbox_options *o) {
    if (o) memset(o, 0, sizeof *o);
}

int ferry_outbox_append(PGconn *conn, const ferry_outbox_options *opts,
                        const ferry_outbox_event *ev, char id_out[FERRY_UUID_STRLEN + 1],
                        ferry_error *err) {
    if (id_out) id_out[0] = '\0';
    if (!conn || !ev) return ferry__err(err, FERRY_EINVAL, "ferry_outbox_append: NULL argument");
    size_t max_payload = opts && opts->max_payload_bytes ? opts->max_payload_bytes
                                                         : FERRY_OUTBOX_DEFAULT_MAX_PAYLOAD;
    if (max_payload > FERRY_OUTBOX_MAX_PAYLOAD_LIMIT)
        return ferry__err(err, FERRY_EINVAL, "max_payload_bytes %zu is over the limit %u",
                          max_payload, FERRY_OUTBOX_MAX_PAYLOAD_LIMIT);
    char qs[FERRY__QSCHEMA_MAX];
    int rc = ferry__pg_quote_schema(opts ? opts->schema : NULL, qs, err);
    if (!rc) rc = check_event(ev, max_payload, err);
    if (rc) return rc;
    switch (PQtransactionStatus(conn)) {
    case PQTRANS_INTRANS:
        break;
    case PQTRANS_IDLE:
        return ferry__err(err, FERRY_ESTATE,
                          "outbox append needs an open transaction (BEGIN first): "
                          "the event must commit or roll back with the application's rows");
    case PQTRANS_INERROR:
        return ferry__err(err, FERRY_ESTATE,
                          "outbox append: the transaction has failed; roll it back");
    default:
        return ferry__err(err, FERRY_ESTATE, "outbox append: connection is busy or broken");
    }
    char id[FERRY_UUID_STRLEN + 1];
    if (ferry_uuid7(id))
        return ferry__err(err, FERRY_EIO, "outbox append: no random bytes for the id");
    char sql[FERRY__QSCHEMA_MAX + 128];
    snprintf(sql, sizeof sql,
             "INSERT INTO %s.outbox_events (id, topic, aggregate_id, payload, trace_id) "
             "VALUES ($1, $2, $3, $4, $5)",
             qs);
    const char *params[] = {id, ev->topic, ev->aggregate_id, ev->payload_json, ev->trace_id};
    rc = ferry__pg_run(conn, "outbox append", sql, 5, params, NULL, err);
    if (rc) return rc;
    if (id_out) memcpy(id_out, id, sizeof id);
    return 0;
}
