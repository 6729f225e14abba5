/* ex_text.c - pure text checks shared by the examples. */
#include "ex_text.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int ex_uuid_valid(const char *s) {
    if (!s || strlen(s) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return 0;
        } else if (!isxdigit((unsigned char)s[i])) {
            return 0;
        }
    }
    return 1;
}

const char *ex_url_display(const char *url, char *out, size_t cap) {
    const char *rest = NULL;
    size_t scheme = 0;
    if (url && !strncmp(url, "http://", 7)) rest = url + 7, scheme = 7;
    if (url && !strncmp(url, "https://", 8)) rest = url + 8, scheme = 8;
    if (!rest) {
        snprintf(out, cap, "(a URL that is not http:// or https://)");
        return out;
    }
    size_t auth = strcspn(rest, "/?#"); /* the authority: [userinfo@]host[:port] */
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
        if (rest[i] == '@') at = rest + i;
    const char *host = at ? at + 1 : rest;
    size_t hostlen = auth - (size_t)(host - rest);
    size_t path = strcspn(rest + auth, "?#");
    int more = rest[auth + path] != '\0';
    snprintf(out, cap, "%.*s%s%.*s%.*s%s", (int)scheme, url, at ? "***@" : "", (int)hostlen, host,
             (int)path, rest + auth, more ? "?..." : "");
    return out;
}
