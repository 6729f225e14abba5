/* envelope.h - the job data the relay writes for an outbox event, the shape Node consumers expect:
 *     {"eventId":"<id>","traceId":"<trace>","payload":<payload>}
 * (traceId left out when the row has none, as JSON.stringify drops undefined). Pure,
 * thread-safe. */
#ifndef FERRY_ENVELOPE_ENVELOPE_H
#define FERRY_ENVELOPE_ENVELOPE_H

#include <stddef.h>

/* Bytes the envelope of these fields takes at most (without the NUL). trace_id may be NULL. */
size_t ferry__envelope_size(const char *event_id, size_t event_id_len, const char *trace_id,
                            size_t trace_len, size_t payload_len);

/* Write the envelope into out (capacity cap, at least ferry__envelope_size(...) + 1) and
 * NUL-terminate it. The payload (JSON text from the database) is copied without the blanks
 * outside its strings; the ids are escaped as JSON strings. Returns the length written
 * (<= the size), or 0 when cap is too small. */
size_t ferry__envelope_write(char *out, size_t cap, const char *event_id, size_t event_id_len,
                             const char *trace_id, size_t trace_len, const char *payload,
                             size_t payload_len);

/* The envelope read back from job data (the one decoder: the worker's accessors, its job log
 * and the exec worker use it). Spans point into the data given to ferry__envelope_parse. */
typedef struct ferry__envelope_view {
    int is_envelope; /* a JSON object with a string "eventId" and a "payload" member */
    /* Of any JSON object (envelope or not), NUL-terminated, "" when absent or unusable: */
    char event_id[37];  /* "eventId" when a canonical UUID (8-4-4-4-12 hex digits, either
                           case, any version) */
    char trace_id[129]; /* "traceId" when a string ferry__trace_id_valid accepts */
    size_t payload_off, payload_len; /* an envelope's "payload" value, as written; else 0 */
} ferry__envelope_view;

/* Decide whether data[0..n) is an envelope and fill *v (always: zeroed first). Takes what
 * JSON.parse would take: a member named with escapes ("\u0065ventId") counts, and of
 * duplicate members the last one wins. The data must be one JSON value as
 * ferryx_json_check accepts it (nesting up to max_depth), else it is not an envelope; the
 * eventId and traceId strings are decoded (escapes included) before they are checked. Pure,
 * thread-safe, no allocation; linear in n. Returns v->is_envelope. */
int ferry__envelope_parse(const char *data, size_t n, int max_depth, ferry__envelope_view *v);

/* Copy the JSON text s[0..n) into out (capacity >= n + 1) without the blanks outside its
 * strings, NUL-terminated. Returns the length written. Pure. */
size_t ferry__json_compact_copy(const char *s, size_t n, char *out);

#endif
