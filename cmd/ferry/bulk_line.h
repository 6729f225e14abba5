/* bulk_line.h - one line of `ferry queue add-bulk` input: an NDJSON object
 * {"name": "...", "data": <any JSON>, "opts": {...}} taken apart without re-encoding
 * (data and opts are copied as written, so numbers keep every digit). Pure, no I/O. */
#ifndef FERRY_CLI_BULK_LINE_H
#define FERRY_CLI_BULK_LINE_H

#include <stddef.h>

/* Nesting of a line: the job data's 512 levels inside the line's object. */
#define BULK_LINE_MAX_DEPTH 513

typedef struct bulk_line {
    char *name; /* decoded from its JSON string (malloc'd) */
    char *data; /* the data value's text as written (malloc'd); "{}" when absent */
    char *opts; /* the opts object's text as written (malloc'd), NULL when absent or null */
} bulk_line;

enum { BULK_LINE_JOB = 0, BULK_LINE_BLANK = 1, BULK_LINE_BAD = -1 };

/* Parse line[0..len) (without its '\n'; it may hold NUL bytes, which are refused).
 * Returns BULK_LINE_JOB with *out filled (free with bulk_line_free), BULK_LINE_BLANK for a
 * line of blanks only (space, tab, CR), or BULK_LINE_BAD with the reason in msg[0..cap)
 * (user text in it escaped): not JSON, not an object, a key other than name/data/opts
 * (with the nearest one), a key twice, name missing or not a non-empty string, opts not an
 * object or null, data over max_data bytes. Job names, data and opts are checked further by
 * the queue library. Thread-safe; allocates only *out. */
int bulk_line_parse(const char *line, size_t len, size_t max_data, bulk_line *out, char *msg,
                    size_t cap);

/* Free out's strings and empty it. NULL is accepted. */
void bulk_line_free(bulk_line *out);

#endif
