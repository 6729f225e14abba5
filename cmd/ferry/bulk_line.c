/* bulk_line.c - see bulk_line.h. The line is checked as JSON once (syntax, UTF-8, depth),
 * then walked at its top level with ferryx_json_value_end, taking each member's value text
 * as it stands. */
#include "bulk_line.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"
#include "util/nearest_name.h"
#include "util/printable.h"

static const char *const KEYS[] = {"name", "data", "opts"};

static int is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static size_t skip_blanks(const char *s, size_t n, size_t i) {
    while (i < n && is_blank(s[i]))
        i++;
    return i;
}

void bulk_line_free(bulk_line *out) {
    if (!out) return;
    free(out->name);
    free(out->data);
    free(out->opts);
    memset(out, 0, sizeof *out);
}

static int fail(bulk_line *out, char *msg, size_t cap, const char *why) {
    bulk_line_free(out);
    snprintf(msg, cap, "%s", why);
    return BULK_LINE_BAD;
}

int bulk_line_parse(const char *line, size_t len, size_t max_data, bulk_line *out, char *msg,
                    size_t cap) {
    memset(out, 0, sizeof *out);
    if (cap) msg[0] = 0;
    if (skip_blanks(line, len, 0) == len) return BULK_LINE_BLANK;
    if (memchr(line, 0, len)) return fail(out, msg, cap, "contains a NUL byte");
    ferryx_json_check_error je;
    if (ferryx_json_check(line, len, BULK_LINE_MAX_DEPTH, &je)) {
        char why[160];
        snprintf(why, sizeof why, "not JSON: %s at byte %zu%s", je.reason, je.offset,
                 strcmp(je.reason, "nested too deeply") ? "" : " (data: 512 levels at most)");
        return fail(out, msg, cap, why);
    }
    size_t i = skip_blanks(line, len, 0);
    if (line[i] != '{')
        return fail(out, msg, cap, "not a JSON object (expected {\"name\", \"data\", \"opts\"})");
    int seen[3] = {0, 0, 0};
    i = skip_blanks(line, len, i + 1);
    while (i < len && line[i] != '}') {
        /* key: a string (the check above guarantees the shape) */
        size_t kend = ferryx_json_value_end(line, len, i);
        json_t *k = json_loadb(line + i, kend - i, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        if (!json_is_string(k)) {
            json_decref(k);
            return fail(out, msg, cap, "cannot read an object key");
        }
        char key[64] = "";
        int which = -1;
        if (json_string_length(k) < sizeof key) {
            memcpy(key, json_string_value(k), json_string_length(k) + 1);
            for (int j = 0; j < 3; j++)
                if (strlen(key) == json_string_length(k) && !strcmp(key, KEYS[j])) which = j;
        }
        if (which < 0) {
            char shown[96], why[200];
            ferryx_printable(json_string_value(k), shown, sizeof shown);
            const char *near = ferryx_nearest_name(json_string_value(k), KEYS, 3);
            if (near)
                snprintf(why, sizeof why, "unknown key \"%s\" (did you mean \"%s\"?)", shown, near);
            else
                snprintf(why, sizeof why, "unknown key \"%s\" (expected name, data, opts)", shown);
            json_decref(k);
            return fail(out, msg, cap, why);
        }
        json_decref(k);
        if (seen[which]++) {
            char why[64];
            snprintf(why, sizeof why, "key \"%s\" given twice", KEYS[which]);
            return fail(out, msg, cap, why);
        }
        i = skip_blanks(line, len, kend) + 1; /* past ':' */
        size_t vstart = skip_blanks(line, len, i), vend = ferryx_json_value_end(line, len, vstart);
        const char *v = line + vstart;
        size_t vlen = vend - vstart;
        if (which == 0) {
            json_t *n = json_loadb(v, vlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            if (!json_is_string(n) || json_string_length(n) == 0 ||
                strlen(json_string_value(n)) != json_string_length(n)) {
                json_decref(n);
                return fail(out, msg, cap,
                            "\"name\" must be a non-empty string without NUL characters");
            }
            out->name = strdup(json_string_value(n));
            json_decref(n);
            if (!out->name) return fail(out, msg, cap, "out of memory");
        } else if (which == 1) {
            if (vlen > max_data) {
                char why[160];
                snprintf(why, sizeof why,
                         "\"data\" is %zu bytes, over the payload limit of %zu (see "
                         "--max-payload)",
                         vlen, max_data);
                return fail(out, msg, cap, why);
            }
            if (!(out->data = strndup(v, vlen))) return fail(out, msg, cap, "out of memory");
        } else {
            if (vlen == 4 && !memcmp(v, "null", 4)) {
                /* null = no options */
            } else if (*v != '{') {
                return fail(out, msg, cap, "\"opts\" must be a JSON object (BullMQ JobsOptions)");
            } else if (!(out->opts = strndup(v, vlen))) {
                return fail(out, msg, cap, "out of memory");
            }
        }
        i = skip_blanks(line, len, vend);
        if (i < len && line[i] == ',') i = skip_blanks(line, len, i + 1);
    }
    if (!out->name) return fail(out, msg, cap, "missing \"name\" (the job name)");
    if (!out->data && !(out->data = strdup("{}"))) return fail(out, msg, cap, "out of memory");
    return BULK_LINE_JOB;
}
