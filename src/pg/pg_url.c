/* pg_url.c - database URLs and conninfo strings as ferry checks and shows them. They hold
 * passwords, so nothing here ever quotes the input: libpq's parse errors quote the token
 * they stop at (often the password), and a URL cut at its first '/', '?' or '#' shows the
 * password when it holds one of them. The shown form is built from what libpq parsed (user,
 * host, port, database); errors say what is wrong in ferry's own words; and texts that come
 * from libpq or the server are masked for the password as a last line of defence. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg/pg.h"
#include "util/error.h"
#include "util/printable.h"

/* libpq's PQconninfoParse messages (fe-connect.c), each quoting part of the input, and what
 * ferry says instead. First match wins. */
static const struct {
    const char *libpq, *ours;
} parse_errors[] = {
    {"invalid percent-encoded token", "a '%' not followed by two hex digits (write '%' as %25)"},
    {"forbidden value %00", "%00 (a NUL byte) is not allowed"},
    {"missing \"=\" after", "a word without '=' (quote values that hold spaces: key='a b')"},
    {"unterminated quoted string", "a quoted value without its closing quote"},
    {"invalid connection option", "invalid connection option (a key libpq does not know)"},
    {"IPv6", "a bad [IPv6] host address"},
    {"unexpected character", "an unexpected character after the host name"},
    {"key/value separator", "a query parameter that is not key=value"},
    {"invalid URI query parameter", "an unknown query parameter"},
};

static int is_uri(const char *url) {
    return !strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11);
}

/* The part after "://" of a URI. */
static const char *uri_rest(const char *url) {
    return strstr(url, "://") + 3;
}

/* A URI's '@' where libpq does not take the text before it as user and password: after a
 * '/' (libpq ends the authority there, so the password's tail becomes the database name)
 * or a second one (libpq ends the password at the first, the rest becomes the host). */
static int misplaced_at(const char *url) {
    const char *rest = uri_rest(url), *at = strchr(rest, '@');
    if (!at) return 0;
    return memchr(rest, '/', (size_t)(at - rest)) != NULL || strchr(at + 1, '@') != NULL;
}

/* Each comma-separated port is empty or digits. */
static int ports_ok(const char *port) {
    for (const char *p = port; p && *p; p++)
        if (*p != ',' && !isdigit((unsigned char)*p)) return 0;
    return 1;
}

static const char *option(const PQconninfoOption *o, const char *key) {
    for (; o && o->keyword; o++)
        if (!strcmp(o->keyword, key)) return o->val && *o->val ? o->val : NULL;
    return NULL;
}

int ferry_outbox_database_url_check(const char *url, ferry_error *err) {
    if (!url || !*url) return 0;
    int uri = is_uri(url);
    if (!uri && !strchr(url, '='))
        return ferry__err(err, FERRY_EINVAL,
                          "database: not a postgresql:// URL or key=value conninfo (libpq "
                          "would take it as a database name on the default server)");
    if (uri && misplaced_at(url))
        return ferry__err(err, FERRY_EINVAL,
                          "database: the URL has an '@' after a '/' or a second '@', which libpq "
                          "would misread: write '/', '@' and '%%' in the user name and password "
                          "percent-encoded (%%2F, %%40, %%25)");
    char *msg = NULL;
    PQconninfoOption *o = PQconninfoParse(url, &msg);
    if (!o) {
        if (!msg) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        const char *why = "libpq cannot parse it";
        for (size_t i = 0; i < sizeof parse_errors / sizeof parse_errors[0]; i++)
            if (strstr(msg, parse_errors[i].libpq)) {
                why = parse_errors[i].ours;
                break;
            }
        PQfreemem(msg);
        return ferry__err(err, FERRY_EINVAL, "database: bad %s: %s", uri ? "URL" : "conninfo", why);
    }
    int ports = ports_ok(option(o, "port"));
    PQconninfoFree(o);
    if (!ports)
        return ferry__err(err, FERRY_EINVAL, "database: the port is not a number%s",
                          uri ? " (a '/' in a password must be written %2F)" : "");
    return 0;
}

/* Append printable(s) to out[*k..cap). */
static void put(char *out, size_t cap, size_t *k, const char *s) {
    char shown[256];
    ferryx_printable(s, shown, sizeof shown);
    int n = snprintf(out + *k, cap - *k, "%s", shown);
    if (n > 0) *k = *k + (size_t)n < cap ? *k + (size_t)n : cap - 1;
}

const char *ferry__pg_url_display(const char *url, char *out, size_t cap) {
    if (!out || cap == 0) return out; /* nowhere to write */
    if (!url || !*url) {
        snprintf(out, cap, "(libpq defaults)");
        return out;
    }
    PQconninfoOption *o = PQconninfoParse(url, NULL);
    if (!o) {
        snprintf(out, cap, "(not parsable)");
        return out;
    }
    const char *user = option(o, "user"), *host = option(o, "host"), *port = option(o, "port");
    const char *dbname = option(o, "dbname");
    if (!host) host = option(o, "hostaddr");
    /* a dbname that is itself a URL or conninfo may hold a password of its own */
    if (dbname && (strchr(dbname, '=') || strstr(dbname, "://"))) dbname = "(conninfo)";
    size_t k = 0;
    out[0] = '\0';
    if (user) {
        put(out, cap, &k, user);
        put(out, cap, &k, "@");
    }
    put(out, cap, &k, host ? host : "(default host)");
    if (port) {
        put(out, cap, &k, ":");
        put(out, cap, &k, port);
    }
    if (dbname) {
        put(out, cap, &k, "/");
        put(out, cap, &k, dbname);
    }
    PQconninfoFree(o);
    return out;
}

/* Replace every occurrence of secret[0..n) in msg with "***" (never longer: n >= 3). The
 * search goes on after each replacement, never through it: a secret that is itself "***"
 * (or that the replacement would complete again) cannot make it loop. */
static void mask(char *msg, const char *secret, size_t n) {
    if (n < 3) return; /* masking one or two bytes would garble every message */
    char *p = msg;
    while ((p = strstr(p, secret)) != NULL) {
        memcpy(p, "***", 3);
        memmove(p + 3, p + n, strlen(p + n) + 1);
        p += 3;
    }
}

/* Mask one secret in every form a message may carry it: as is, with its line breaks and
 * tabs flattened to spaces (callers keep messages on one line) and as ferryx_printable
 * shows it. */
static void mask_forms(char *msg, const char *secret, size_t n) {
    char piece[1024], shown[4 * sizeof piece + 8];
    if (n >= sizeof piece) n = sizeof piece - 1;
    memcpy(piece, secret, n);
    piece[n] = '\0';
    mask(msg, piece, n);
    for (char *c = piece; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
    mask(msg, piece, n);
    memcpy(piece, secret, n);
    ferryx_printable(piece, shown, sizeof shown);
    mask(msg, shown, strlen(shown));
}

static int is_secret_key(const char *k, size_t n) {
    return (n == 8 && !memcmp(k, "password", 8)) || (n == 11 && !memcmp(k, "sslpassword", 11));
}

static int hexdig(int c) {
    return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* Mask v[0..n) as written and percent-decoded. */
static void mask_pct(char *msg, const char *v, size_t n) {
    char dec[1024];
    size_t k = 0;
    mask_forms(msg, v, n);
    for (size_t i = 0; i < n && k < sizeof dec - 1; i++) {
        int hi = i + 2 < n && v[i] == '%' ? hexdig((unsigned char)v[i + 1]) : -1;
        int lo = hi >= 0 ? hexdig((unsigned char)v[i + 2]) : -1;
        if (hi >= 0 && lo >= 0) {
            dec[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            dec[k++] = v[i];
        }
    }
    mask_forms(msg, dec, k);
}

/* Every password= and sslpassword= of a URI's query (all of them, not only the one libpq
 * keeps). */
static void mask_uri_query(char *msg, const char *url) {
    const char *q = strchr(url, '?');
    while (q && *q) {
        q++;
        size_t plen = strcspn(q, "&#");
        const char *eq = memchr(q, '=', plen);
        if (eq && is_secret_key(q, (size_t)(eq - q)))
            mask_pct(msg, eq + 1, plen - (size_t)(eq + 1 - q));
        q += plen;
        if (*q != '&') break;
    }
}

/* Every password= and sslpassword= of a key=value conninfo, unquoted as libpq does
 * (conninfo_parse in fe-connect.c): libpq keeps the last of two, the first must not leak
 * either. */
static void mask_conninfo(char *msg, const char *ci) {
    const char *p = ci;
    char val[1024];
    while (*p) {
        while (isspace((unsigned char)*p))
            p++;
        const char *key = p;
        while (*p && *p != '=' && !isspace((unsigned char)*p))
            p++;
        size_t klen = (size_t)(p - key);
        while (isspace((unsigned char)*p))
            p++;
        if (*p != '=') return; /* not a conninfo libpq takes; libpq's own pass masks */
        p++;
        while (isspace((unsigned char)*p))
            p++;
        size_t k = 0;
        int quoted = *p == '\'';
        if (quoted) p++;
        while (*p && (quoted ? *p != '\'' : !isspace((unsigned char)*p))) {
            if (*p == '\\' && p[1]) p++;
            if (k < sizeof val - 1) val[k++] = *p;
            p++;
        }
        if (quoted && *p) p++;
        if (is_secret_key(key, klen)) mask_forms(msg, val, k);
    }
}

void ferry__pg_url_mask(const char *url, char *msg) {
    if (!msg) return;
    const char *env = getenv("PGPASSWORD"); /* libpq's password when the URL has none */
    if (env) mask_forms(msg, env, strlen(env));
    if (!url || !*url) return;
    PQconninfoOption *o = PQconninfoParse(url, NULL);
    const char *pw = o ? option(o, "password") : NULL, *sslpw = o ? option(o, "sslpassword") : NULL;
    if (pw) mask_forms(msg, pw, strlen(pw));
    if (sslpw) mask_forms(msg, sslpw, strlen(sslpw));
    PQconninfoFree(o);
    if (is_uri(url)) { /* the password as written, percent-encoded, and any in the query */
        const char *rest = uri_rest(url), *at = strchr(rest, '@');
        const char *colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
        if (colon) mask_pct(msg, colon + 1, (size_t)(at - colon - 1));
        mask_uri_query(msg, url);
    } else {
        mask_conninfo(msg, url);
    }
}
