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

#endif
