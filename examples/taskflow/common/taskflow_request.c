/* taskflow_request.c - taskflow-api's routes and request bodies (pure: no I/O). */
#include "taskflow_request.h"

#include "taskflow_common.h"

#include "ex_text.h"

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int problem(tf_problem *p, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int problem(tf_problem *p, const char *field, const char *fmt, ...) {
    snprintf(p->field, sizeof p->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->message, sizeof p->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* A member name fit to be shown as a field: printable ASCII that fits, else "". */
static const char *showable(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n >= TF_FIELD_MAX) return "";
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e) return "";
    return name;
}

/* What is wrong with a body jansson refused, in words that never quote it (its own text can). */
static const char *json_problem(const json_error_t *je) {
    switch (json_error_code(je)) {
    case json_error_premature_end_of_input:
        return "it ends before the JSON value does";
    case json_error_end_of_input_expected:
        return "there is text after the JSON value";
    case json_error_invalid_utf8:
        return "it is not valid UTF-8";
    case json_error_null_character: /* a NUL byte, or a \u0000 escape */
        return "it holds a NUL character";
    case json_error_stack_overflow:
        return "it is nested too deep";
    case json_error_duplicate_key:
        return "an object has the same key twice";
    case json_error_numeric_overflow:
        return "a number is too large";
    default:
        return "it is not valid JSON";
    }
}

/* Load body as a JSON object; refuse members outside `known` (NULL-terminated). */
static json_t *load_object(const char *body, size_t len, const char *const *known, tf_problem *p) {
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        /* je.text can quote the input: say where only */
        problem(p, "", "body is not a JSON object: %s (line %d, column %d)", json_problem(&je),
                je.line, je.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        problem(p, "", "body must be a JSON object");
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        int ok = 0;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = !strcmp(key, known[i]);
        if (!ok) {
            const char *f = showable(key);
            problem(p, f, "unknown member%s (this request takes only %s%s%s)",
                    f[0] ? "" : " with an unprintable or long name", known[0],
                    known[1] ? " and " : "", known[1] ? known[1] : "");
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

static int uuid_member(json_t *root, const char *name, char out[37], tf_problem *p) {
    json_t *v = json_object_get(root, name);
    if (!v) return problem(p, name, "%s is required", name);
    if (!json_is_string(v)) return problem(p, name, "%s must be a string (a UUID)", name);
    const char *s = json_string_value(v);
    if (json_string_length(v) != 36 || !ex_uuid_valid(s))
        return problem(p, name, "%s must be a UUID (8-4-4-4-12 hexadecimal digits)", name);
    for (int i = 0; i < 36; i++) /* canonical text: lower case, as PostgreSQL prints it */
        out[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
    out[36] = '\0';
    return 0;
}

/* jansson hands us valid UTF-8 without NUL: count code points, refuse control characters
 * (C0, DEL, C1: a title is one line of text) and blank titles. */
static int title_check(const char *s, size_t n, tf_problem *p) {
    size_t chars = 0;
    int blank = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        if ((b & 0xc0) != 0x80) chars++;
        if (b < 0x20 || b == 0x7f ||
            (b == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
             (unsigned char)s[i + 1] <= 0x9f))
            return problem(p, "title", "title must not contain control characters");
        if (b != ' ') blank = 0;
    }
    if (chars == 0) return problem(p, "title", "title must not be empty");
    if (blank) return problem(p, "title", "title must not be blank");
    if (chars > TF_TITLE_MAX_CHARS)
        return problem(p, "title", "title is %zu characters long, at most %d are allowed", chars,
                       TF_TITLE_MAX_CHARS);
    return 0;
}

int tf_parse_create_task(const char *body, size_t len, tf_create_task *out, tf_problem *p) {
    static const char *const known[] = {"tenantId", "title", NULL};
    json_t *root = load_object(body, len, known, p);
    if (!root) return -1;
    int rc = uuid_member(root, "tenantId", out->tenant_id, p);
    if (rc == 0) {
        json_t *t = json_object_get(root, "title");
        if (!t)
            rc = problem(p, "title", "title is required");
        else if (!json_is_string(t))
            rc = problem(p, "title", "title must be a string");
        else if ((rc = title_check(json_string_value(t), json_string_length(t), p)) == 0)
            memcpy(out->title, json_string_value(t), json_string_length(t) + 1);
    }
    json_decref(root);
    return rc;
}

int tf_parse_assign_task(const char *body, size_t len, tf_assign_task *out, tf_problem *p) {
    static const char *const known[] = {"assigneeId", NULL};
    json_t *root = load_object(body, len, known, p);
    if (!root) return -1;
    int rc = uuid_member(root, "assigneeId", out->assignee_id, p);
    json_decref(root);
    return rc;
}

int tf_route_match(const char *method, const char *path, tf_route *r) {
    memset(r, 0, sizeof *r);
    if (!strcmp(path, "/tasks")) {
        r->allow = "POST";
        if (strcmp(method, "POST")) return 405;
        r->kind = TF_ROUTE_CREATE;
        return 0;
    }
    if (strncmp(path, "/tasks/", 7)) return 404;
    const char *id = path + 7;
    size_t idlen = strcspn(id, "/");
    const char *rest = id + idlen;
    if (idlen == 0) return 404;
    if (!strcmp(rest, "")) {
        r->kind = TF_ROUTE_GET;
        r->allow = "GET";
        if (strcmp(method, "GET")) return 405;
    } else if (!strcmp(rest, "/assign")) {
        r->kind = TF_ROUTE_ASSIGN;
        r->allow = "POST";
        if (strcmp(method, "POST")) return 405;
    } else {
        return 404;
    }
    if (idlen == 36) {
        char tmp[37];
        memcpy(tmp, id, 36);
        tmp[36] = '\0';
        if (ex_uuid_valid(tmp)) {
            for (int i = 0; i < 36; i++)
                r->id[i] = (char)(tmp[i] >= 'A' && tmp[i] <= 'F' ? tmp[i] - 'A' + 'a' : tmp[i]);
            r->id[36] = '\0';
            r->id_valid = 1;
        }
    }
    return 0;
}
