/* taskflow_request.h - taskflow-api's routes and request bodies, parsed without I/O (so
 * they can be tested and fuzzed alone).
 *
 * Bodies are JSON objects read with jansson (duplicate members refused, no NUL in strings);
 * a member the request does not define is refused by name, so a misspelt "asigneeId" is a
 * 400 naming it rather than a task silently left unassigned. A problem names the field and
 * says what is wrong, without quoting the value. */
#ifndef TASKFLOW_REQUEST_H
#define TASKFLOW_REQUEST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TF_TITLE_MAX_CHARS 200                      /* a title's length in code points */
#define TF_TITLE_MAX_BYTES (TF_TITLE_MAX_CHARS * 4) /* the same in UTF-8 bytes, at most */
#define TF_FIELD_MAX 64                             /* a problem's field name, NUL included */

/* What is wrong with a request: field is the JSON member ("" for the body as a whole). */
typedef struct tf_problem {
    char field[TF_FIELD_MAX];
    char message[200];
} tf_problem;

/* POST /tasks {"tenantId": uuid, "title": string of 1..200 code points, no control
 * characters, not blank}. */
typedef struct tf_create_task {
    char tenant_id[37];
    char title[TF_TITLE_MAX_BYTES + 1];
} tf_create_task;

/* POST /tasks/{id}/assign {"assigneeId": uuid}. */
typedef struct tf_assign_task {
    char assignee_id[37];
} tf_assign_task;

/* Parse the body body[0..len) of POST /tasks into *out.
 * Returns: 0, or -1 with *p filled (the body is not a JSON object, a member is missing, of
 *   the wrong type or out of range, an unknown member). Pure; threads: any. */
int tf_parse_create_task(const char *body, size_t len, tf_create_task *out, tf_problem *p);

/* Parse the body of POST /tasks/{id}/assign into *out. Returns: as tf_parse_create_task. */
int tf_parse_assign_task(const char *body, size_t len, tf_assign_task *out, tf_problem *p);

typedef enum tf_route_kind {
    TF_ROUTE_CREATE = 1, /* POST /tasks */
    TF_ROUTE_GET = 2,    /* GET /tasks/{id} */
    TF_ROUTE_ASSIGN = 3, /* POST /tasks/{id}/assign */
} tf_route_kind;

typedef struct tf_route {
    tf_route_kind kind;
    char id[37];       /* the {id} of the path when id_valid, else "" */
    int id_valid;      /* 1 when the path's {id} is a UUID (GET, ASSIGN) */
    const char *allow; /* for 405: the methods the path takes (a static string) */
} tf_route;

/* Match method + path (as decoded by the server, without the query) against the routes.
 * Returns: 0 with *r filled (r->id_valid 0 means the {id} segment is not a UUID: a 400
 *   naming "id"); 404 when no route has this path; 405 when the path exists but not for
 *   this method (r->allow says which). Pure; threads: any. */
int tf_route_match(const char *method, const char *path, tf_route *r);

#ifdef __cplusplus
}
#endif

#endif
