/* url.c - Redis URL parser: redis://, rediss:// and unix:// into a ferry_redis_url.
 *
 * Pure (no I/O), so it is unit-tested and fuzzed alone. Error messages name the offending
 * part of the URL but never contain the credentials: the userinfo is located first and
 * nothing from it (or from anywhere a mistyped password could have leaked to, such as the
 * query string or fragment) is echoed. */
#include "redis/url.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "util/error.h"
#include "util/printable.h"

#define URL_MAX 4096 /* whole URL, bytes */
#define HOST_MAX 255 /* DNS name or address literal */
#define ECHO_MAX 40  /* longest URL fragment quoted in an error message */
#define DEFAULT_PORT 6379

/* sun_path is fixed-size and must hold the terminating NUL. */
#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

static const char *const want_schemes = "want redis://, rediss:// or unix://";

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* Free a string that may hold a password, wiped first: credentials must not linger in
 * freed heap memory. */
static void free_wiped(char *d, size_t len) {
    if (!d) return;
    explicit_bzero(d, len);
    free(d);
}

/* Percent-decode s[0..len) into a new string. `what` names the field in errors; the
 * field's value is never quoted (it may be a password), and a partly decoded copy is
 * wiped before it is freed. */
static int pct_decode(const char *s, size_t len, const char *what, char **out, ferry_error *err) {
    char *d = malloc(len + 1);
    if (!d) return ferry__err(err, FERRY_ENOMEM, "redis URL: out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '%') {
            d[n++] = s[i];
            continue;
        }
        int hi = i + 1 < len ? hexval((unsigned char)s[i + 1]) : -1;
        int lo = i + 2 < len ? hexval((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            free_wiped(d, n);
            return ferry__err(
                err, FERRY_EINVAL,
                "redis URL: bad percent-encoding in %s (want %%XX with two hex digits)", what);
        }
        if (hi == 0 && lo == 0) {
            free_wiped(d, n);
            return ferry__err(err, FERRY_EINVAL, "redis URL: %s contains %%00", what);
        }
        d[n++] = (char)(hi * 16 + lo);
        i += 2;
    }
    d[n] = '\0';
    *out = d;
    return 0;
}

static int all_digits(const char *s, size_t len) {
    if (len == 0) return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* Parse a decimal integer in [lo, hi] (hi < 10^12) from s[0..len). Digits only: no sign,
 * no spaces; leading zeros allowed. 0, -1 when not a number, -2 when out of range. */
static int parse_uint(const char *s, size_t len, long lo, long hi, long *out) {
    if (!all_digits(s, len)) return -1;
    while (len > 1 && s[0] == '0')
        s++, len--;
    if (len > 12) return -2; /* more significant digits than any limit here: no overflow */
    long v = 0;
    for (size_t i = 0; i < len; i++)
        v = v * 10 + (s[i] - '0');
    if (v < lo || v > hi) return -2;
    *out = v;
    return 0;
}

/* A fragment of the URL quoted in an error message: at most ECHO_MAX bytes of it, made
 * printable (control characters and invalid UTF-8 escaped, as ferryx_printable does), with
 * "..." when it was longer. Returns out. */
#define ECHO_SHOWN (4 * ECHO_MAX + 8)
static const char *echo(char out[ECHO_SHOWN], const char *s, size_t len) {
    char raw[ECHO_MAX + 1];
    size_t n = len > ECHO_MAX ? ECHO_MAX : len;
    memcpy(raw, s, n);
    raw[n] = '\0';
    ferryx_printable(raw, out, ECHO_SHOWN - 3);
    if (len > ECHO_MAX) strcat(out, "...");
    return out;
}

/* userinfo = [user][:password], both percent-decoded; empty parts count as absent. */
static int parse_userinfo(const char *s, size_t len, ferry_redis_url *u, ferry_error *err) {
    const char *colon = memchr(s, ':', len);
    size_t ulen = colon ? (size_t)(colon - s) : len;
    int rc;
    if (ulen > 0 && (rc = pct_decode(s, ulen, "user name", &u->user, err)) != 0) return rc;
    if (colon && len - ulen - 1 > 0 &&
        (rc = pct_decode(colon + 1, len - ulen - 1, "password", &u->password, err)) != 0)
        return rc;
    return 0;
}

static int host_char_ok(int ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_';
}

/* hostport = host[:port] | [v6][:port]. `quote`: the port may be quoted in errors. It must
 * not be when the URL has no '@': in "redis://user:password" (host forgotten) the
 * password is what sits where the port goes. */
static int parse_hostport(const char *s, size_t len, int quote, ferry_redis_url *u,
                          ferry_error *err) {
    char shown[ECHO_SHOWN], ch[ECHO_SHOWN];
    const char *host = s, *port = NULL;
    size_t hlen, plen = 0;
    int has_port = 0;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close) return ferry__err(err, FERRY_EINVAL, "redis URL: unterminated '[' in host");
        host = s + 1;
        hlen = (size_t)(close - host);
        size_t rest = len - (size_t)(close + 1 - s);
        if (rest > 0) {
            if (close[1] != ':')
                return ferry__err(err, FERRY_EINVAL, "redis URL: unexpected '%s' after ']' in host",
                                  echo(shown, close + 1, rest));
            has_port = 1;
            port = close + 2;
            plen = rest - 1;
        }
        char buf[INET6_ADDRSTRLEN + 1];
        struct in6_addr a6;
        if (hlen == 0 || hlen >= sizeof buf)
            return ferry__err(err, FERRY_EINVAL, "redis URL: invalid IPv6 address '[%s]'",
                              echo(shown, host, hlen));
        memcpy(buf, host, hlen);
        buf[hlen] = '\0';
        if (inet_pton(AF_INET6, buf, &a6) != 1)
            return ferry__err(err, FERRY_EINVAL, "redis URL: invalid IPv6 address '[%s]'",
                              echo(shown, host, hlen));
    } else {
        const char *colon = memchr(s, ':', len);
        hlen = colon ? (size_t)(colon - s) : len;
        if (colon) {
            has_port = 1;
            port = colon + 1;
            plen = len - hlen - 1;
        }
        if (colon && memchr(colon + 1, ':', plen))
            return ferry__err(err, FERRY_EINVAL, "redis URL: IPv6 address needs brackets ([::1])");
        if (hlen == 0) return ferry__err(err, FERRY_EINVAL, "redis URL: missing host");
        for (size_t i = 0; i < hlen; i++)
            if (!host_char_ok((unsigned char)host[i]))
                return ferry__err(err, FERRY_EINVAL,
                                  "redis URL: invalid character '%s' in host '%s'",
                                  echo(ch, host + i, 1), echo(shown, host, hlen));
    }
    if (hlen > HOST_MAX)
        return ferry__err(err, FERRY_EINVAL, "redis URL: host longer than %d bytes", HOST_MAX);
    u->port = DEFAULT_PORT;
    if (has_port) {
        long v;
        int r = parse_uint(port, plen, 1, 65535, &v);
        if (plen == 0) return ferry__err(err, FERRY_EINVAL, "redis URL: empty port after ':'");
        if (r == -2 && !quote)
            return ferry__err(err, FERRY_EINVAL, "redis URL: port out of range (1..65535)");
        if (r == -2)
            return ferry__err(err, FERRY_EINVAL, "redis URL: port '%s' out of range (1..65535)",
                              echo(shown, port, plen));
        if (r != 0 && !quote)
            return ferry__err(err, FERRY_EINVAL,
                              "redis URL: port is not a number (credentials need a host: "
                              "redis://user:password@host)");
        if (r != 0)
            return ferry__err(err, FERRY_EINVAL, "redis URL: port '%s' is not a number",
                              echo(shown, port, plen));
        u->port = (int)v;
    }
    u->host = strndup(host, hlen);
    if (!u->host) return ferry__err(err, FERRY_ENOMEM, "redis URL: out of memory");
    return 0;
}

/* `quote` as for parse_hostport: a password with a raw '/' can reach the db path. */
static int parse_db(const char *s, size_t len, const char *how, int quote, int *db,
                    ferry_error *err) {
    char shown[ECHO_SHOWN];
    long v;
    int r = parse_uint(s, len, 0, INT_MAX, &v);
    if (r == -2 && !quote)
        return ferry__err(err, FERRY_EINVAL, "redis URL: db out of range (0..%d)", INT_MAX);
    if (r != 0 && !quote)
        return ferry__err(err, FERRY_EINVAL, "redis URL: db %sis not a number", how);
    if (r == -2)
        return ferry__err(err, FERRY_EINVAL, "redis URL: db '%s' out of range (0..%d)",
                          echo(shown, s, len), INT_MAX);
    if (r != 0)
        return ferry__err(err, FERRY_EINVAL, "redis URL: db %s'%s' is not a number", how,
                          echo(shown, s, len));
    *db = (int)v;
    return 0;
}

/* unix query: only db=N, at most once. */
static int parse_unix_query(const char *q, size_t len, ferry_redis_url *u, ferry_error *err) {
    int seen_db = 0;
    while (len > 0) {
        const char *amp = memchr(q, '&', len);
        size_t plen = amp ? (size_t)(amp - q) : len;
        if (plen >= 2 && memcmp(q, "db", 2) == 0 && (plen == 2 || q[2] == '=')) {
            if (plen <= 3)
                return ferry__err(err, FERRY_EINVAL, "redis URL: db= needs a number (db=N)");
            if (seen_db) return ferry__err(err, FERRY_EINVAL, "redis URL: db= given twice");
            seen_db = 1;
            int rc = parse_db(q + 3, plen - 3, "", 0, &u->db, err);
            if (rc) return rc;
        } else {
            /* Not quoted: the option may be "password=..." or a bare password. */
            return ferry__err(err, FERRY_EINVAL,
                              "redis URL: unknown option in the query (unix:// takes only db=N)");
        }
        if (!amp) break;
        len -= plen + 1;
        q = amp + 1;
    }
    return 0;
}

static int parse(const char *url, ferry_redis_url *u, ferry_error *err) {
    size_t len = strlen(url);
    if (len > URL_MAX)
        return ferry__err(err, FERRY_EINVAL, "redis URL: longer than %d bytes", URL_MAX);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)url[i];
        if (ch <= 0x20 || ch == 0x7f)
            return ferry__err(err, FERRY_EINVAL,
                              "redis URL: space or control character at offset %zu", i);
    }

    const char *sep = strstr(url, "://");
    if (!sep) return ferry__err(err, FERRY_EINVAL, "redis URL: missing scheme (%s)", want_schemes);
    size_t slen = (size_t)(sep - url);
    if (slen == 6 && strncasecmp(url, "rediss", 6) == 0)
        u->kind = FERRY_URL_TLS;
    else if (slen == 5 && strncasecmp(url, "redis", 5) == 0)
        u->kind = FERRY_URL_TCP;
    else if (slen == 4 && strncasecmp(url, "unix", 4) == 0)
        u->kind = FERRY_URL_UNIX;
    else {
        /* Quote the scheme only when it looks like one: "user:pw@host://" must not leak. */
        int plausible = slen > 0 && slen <= 16;
        for (size_t i = 0; plausible && i < slen; i++)
            plausible = host_char_ok((unsigned char)url[i]) || url[i] == '+';
        if (!plausible)
            return ferry__err(err, FERRY_EINVAL, "redis URL: unknown scheme (%s)", want_schemes);
        return ferry__err(err, FERRY_EINVAL, "redis URL: unknown scheme '%.*s' (%s)", (int)slen,
                          url, want_schemes);
    }

    /* authority = up to the first '/', '?' or '#'; userinfo = up to its last '@'. */
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *rest = auth + alen;
    if (u->kind != FERRY_URL_UNIX && strchr(rest, '@'))
        return ferry__err(err, FERRY_EINVAL,
                          "redis URL: '@' after the host; percent-encode '/', '?', '#' in "
                          "credentials (%%2F, %%3F, %%23)");
    const char *at = NULL;
    for (const char *p = auth; p < rest; p++)
        if (*p == '@') at = p;
    int rc;
    if (at && (rc = parse_userinfo(auth, (size_t)(at - auth), u, err)) != 0) return rc;
    const char *hp = at ? at + 1 : auth;
    size_t hplen = (size_t)(rest - hp);
    /* Without an '@', text after a ':' in the authority may be a password whose host was
     * forgotten ("redis://user:pw", "redis://user:pw/with/slash"): never quote it. */
    int quote = at || (hplen > 0 && hp[0] == '[') || !memchr(hp, ':', hplen);

    if (u->kind == FERRY_URL_UNIX) {
        /* Not quoted: a password with a raw '/' ends up here. */
        if (hplen > 0)
            return ferry__err(
                err, FERRY_EINVAL,
                "redis URL: unix:// takes no host; write unix:///path (percent-encode "
                "'/' in credentials as %%2F)");
        if (*rest != '/')
            return ferry__err(err, FERRY_EINVAL,
                              "redis URL: missing unix socket path (write unix:///path/to.sock)");
        size_t plen = strcspn(rest, "?#");
        if ((rc = pct_decode(rest, plen, "socket path", &u->path, err)) != 0) return rc;
        if (strlen(u->path) > UNIX_PATH_MAX)
            return ferry__err(err, FERRY_EINVAL,
                              "redis URL: unix socket path longer than %zu bytes",
                              (size_t)UNIX_PATH_MAX);
        const char *q = rest + plen;
        if (*q == '#') return ferry__err(err, FERRY_EINVAL, "redis URL: unexpected '#' fragment");
        if (*q == '?') {
            size_t qlen = strcspn(q + 1, "#");
            if (q[1 + qlen] == '#')
                return ferry__err(err, FERRY_EINVAL, "redis URL: unexpected '#' fragment");
            if ((rc = parse_unix_query(q + 1, qlen, u, err)) != 0) return rc;
        }
        return 0;
    }

    if ((rc = parse_hostport(hp, hplen, quote, u, err)) != 0) return rc;
    if (*rest == '/') {
        const char *dbs = rest + 1;
        size_t dlen = strcspn(dbs, "?#");
        if (dlen > 0 && (rc = parse_db(dbs, dlen, "path ", quote, &u->db, err)) != 0) return rc;
        rest = dbs + dlen;
    }
    /* Never quoted, with or without an '@': a query or fragment is where a password given
     * as an option ("?password=...") or mistyped after a '?' or '#' sits. */
    if (*rest != '\0')
        return ferry__err(err, FERRY_EINVAL,
                          "redis URL: unexpected %s after the db (redis:// URLs take no options)",
                          *rest == '?'   ? "query ('?...')"
                          : *rest == '#' ? "fragment ('#...')"
                                         : "text");
    return 0;
}

int ferry__redis_url_parse(const char *url, ferry_redis_url *out, ferry_error *err) {
    memset(out, 0, sizeof *out);
    if (!url) return ferry__err(err, FERRY_EINVAL, "redis URL: none given");
    ferry_redis_url u = {.kind = FERRY_URL_TCP, .port = DEFAULT_PORT};
    int rc = parse(url, &u, err);
    if (rc != 0) {
        ferry__redis_url_free(&u);
        return rc;
    }
    if (u.kind == FERRY_URL_UNIX) u.port = 0;
    *out = u;
    return 0;
}

void ferry__redis_url_free(ferry_redis_url *u) {
    if (!u) return;
    free(u->host);
    free(u->path);
    free(u->user);
    if (u->password) free_wiped(u->password, strlen(u->password));
    memset(u, 0, sizeof *u);
}
