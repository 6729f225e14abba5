/* outbox_consumer.c - an outside program using the outbox API against an installed ferry
 * (tests/install/check.sh). Built as C99 with -Wpedantic -Werror: libpq's header and ferry's
 * together must be valid C99 (ferry/outbox.h once repeated libpq's PGconn typedef, a C11
 * feature), and ferry.pc / ferry::ferry must carry libpq's include directory and library.
 * Needs no server: the connection is refused at once (a socket directory that does not exist). */
#include <ferry/ferry.h>
#include <libpq-fe.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    PGconn *conn = PQconnectdb("host=/nonexistent/ferry-install-check dbname=x connect_timeout=2");
    if (!conn || PQstatus(conn) != CONNECTION_BAD) {
        fprintf(stderr, "outbox consumer: expected a refused connection\n");
        PQfinish(conn);
        return 1;
    }
    ferry_outbox_event ev;
    memset(&ev, 0, sizeof ev);
    ev.topic = "order.placed";
    ev.aggregate_id = "0190a6e0-0000-7000-8000-000000000001";
    ev.payload_json = "{\"id\":1}";
    ferry_error err;
    memset(&err, 0, sizeof err);
    char id[FERRY_UUID_STRLEN + 1];
    /* outside a transaction (here: no connection at all) an append is refused, sending nothing */
    int rc = ferry_outbox_append(conn, NULL, &ev, id, &err);
    PQfinish(conn);
    if (rc != FERRY_ESTATE) {
        fprintf(stderr, "outbox consumer: append returned %d (%s), want FERRY_ESTATE\n", rc,
                err.message);
        return 1;
    }
    if (ferry_outbox_schema_version() < 1) {
        fprintf(stderr, "outbox consumer: no schema version\n");
        return 1;
    }
    puts("outbox consumer OK");
    return 0;
}
