/* auth.c - the tokens of `ferry serve`: the token file ("NAME SCOPES SECRET" per line) read
 * into names, scopes and SHA-256 digests (the secrets are wiped once digested), and the
 * check of a request's "Authorization: Bearer SECRET" against the scope its route needs,
 * comparing digests in constant time (CRYPTO_memcmp) over every token, so neither the
 * answer's time nor its text tells which part of a secret was right. No cookies. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "admin/framework.h"
#include "util/error.h"
#include "util/printable.h"

static int is_blank(char c) {
    return c == ' ' || c == '\t';
}

static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > FERRY_ADMIN_TOKEN_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '@' || c == '-'))
            return 0;
    }
    return 1;
}

/* "read,act" -> bits; -1 with the bad word in bad[]. */
static int parse_scopes(const char *s, size_t n, char *bad, size_t cap) {
    int bits = 0;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        size_t len = j - i;
        if (len == 4 && !memcmp(s + i, "read", 4))
            bits |= FERRY_ADMIN_SCOPE_READ;
        else if (len == 3 && !memcmp(s + i, "act", 3))
            bits |= FERRY_ADMIN_SCOPE_ACT;
        else if (len == 7 && !memcmp(s + i, "redrive", 7))
            bits |= FERRY_ADMIN_SCOPE_REDRIVE;
        else {
            char word[64];
            size_t wl = len < sizeof word - 1 ? len : sizeof word - 1;
            memcpy(word, s + i, wl);
            word[wl] = '\0';
            ferryx_printable(word, bad, cap);
            return -1;
        }
        i = j + 1;
    }
    return bits | FERRY_ADMIN_SCOPE_READ;
}

int ferry_admin_tokens_parse(const char *text, size_t len, const char *filename,
                             ferry_admin_tokens **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "tokens: out is NULL");
    *out = NULL;
    if (!text && len) return ferry__err(err, FERRY_EINVAL, "tokens: text is NULL");
    char file[300];
    ferryx_printable(filename ? filename : "token file", file, sizeof file);
    if (len > FERRY_ADMIN_TOKEN_FILE_MAX)
        return ferry__err(err, FERRY_ETOOBIG, "%s: more than %d bytes", file,
                          FERRY_ADMIN_TOKEN_FILE_MAX);
    if (len && memchr(text, '\0', len))
        return ferry__err(err, FERRY_EINVAL, "%s: holds a NUL byte", file);
    ferry_admin_tokens *t = calloc(1, sizeof *t);
    if (!t) return ferry__err(err, FERRY_ENOMEM, "tokens: out of memory");
    int rc = 0;
    size_t lineno = 0, pos = 0;
    while (pos < len && !rc) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl ? 1 : 0);
        lineno++;
        if (ll && line[ll - 1] == '\r') ll--;
        size_t i = 0;
        while (i < ll && is_blank(line[i]))
            i++;
        if (i == ll || line[i] == '#') continue;
        /* three fields */
        const char *f[3];
        size_t fl[3], nf = 0;
        while (i < ll) {
            size_t j = i;
            while (j < ll && !is_blank(line[j]))
                j++;
            if (nf < 3) {
                f[nf] = line + i;
                fl[nf] = j - i;
            }
            nf++;
            while (j < ll && is_blank(line[j]))
                j++;
            i = j;
        }
        if (nf != 3) {
            rc = ferry__err(err, FERRY_EINVAL,
                            "%s line %zu: expected NAME SCOPES SECRET (three fields separated "
                            "by blanks), found %s",
                            file, lineno, nf < 3 ? "fewer" : "more");
            break;
        }
        if (!name_ok(f[0], fl[0])) {
            rc = ferry__err(err, FERRY_EINVAL,
                            "%s line %zu: the name must be 1..%d characters of A-Z a-z 0-9 . _ "
                            "@ -",
                            file, lineno, FERRY_ADMIN_TOKEN_NAME_MAX);
            break;
        }
        char bad[80];
        int scopes = parse_scopes(f[1], fl[1], bad, sizeof bad);
        if (scopes < 0) {
            rc = ferry__err(err, FERRY_EINVAL,
                            "%s line %zu: unknown scope \"%s\" (scopes: read, act, redrive, "
                            "separated by commas)",
                            file, lineno, bad);
            break;
        }
        if (fl[2] < FERRY_ADMIN_SECRET_MIN || fl[2] > FERRY_ADMIN_SECRET_MAX) {
            rc = ferry__err(err, FERRY_EINVAL,
                            "%s line %zu: the secret of token \"%.*s\" has %zu characters; it "
                            "needs %d..%d",
                            file, lineno, (int)fl[0], f[0], fl[2], FERRY_ADMIN_SECRET_MIN,
                            FERRY_ADMIN_SECRET_MAX);
            break;
        }
        for (size_t k = 0; k < fl[2]; k++)
            if (f[2][k] < 0x21 || f[2][k] > 0x7e) {
                rc = ferry__err(err, FERRY_EINVAL,
                                "%s line %zu: the secret of token \"%.*s\" holds a character "
                                "that is not printable ASCII",
                                file, lineno, (int)fl[0], f[0]);
                break;
            }
        if (rc) break;
        if (t->n == FERRY_ADMIN_TOKENS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG, "%s line %zu: more than %d tokens", file, lineno,
                            FERRY_ADMIN_TOKENS_MAX);
            break;
        }
        admin_token tok = {0};
        memcpy(tok.name, f[0], fl[0]);
        tok.scopes = scopes;
        SHA256((const unsigned char *)f[2], fl[2], tok.digest);
        for (size_t k = 0; k < t->n; k++) {
            if (strcmp(t->items[k].name, tok.name) == 0) {
                rc = ferry__err(err, FERRY_EINVAL, "%s line %zu: token name \"%s\" is used twice",
                                file, lineno, tok.name);
                break;
            }
            if (CRYPTO_memcmp(t->items[k].digest, tok.digest, sizeof tok.digest) == 0) {
                rc = ferry__err(err, FERRY_EINVAL,
                                "%s line %zu: token \"%s\" has the same secret as token \"%s\"",
                                file, lineno, tok.name, t->items[k].name);
                break;
            }
        }
        if (rc) break;
        admin_token *grown = realloc(t->items, (t->n + 1) * sizeof *grown);
        if (!grown) {
            rc = ferry__err(err, FERRY_ENOMEM, "tokens: out of memory");
            break;
        }
        t->items = grown;
        t->items[t->n++] = tok;
        OPENSSL_cleanse(&tok, sizeof tok);
    }
    if (rc) {
        ferry_admin_tokens_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int ferry_admin_tokens_load(const char *path, ferry_admin_tokens **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "tokens: out is NULL");
    *out = NULL;
    if (!path) return ferry__err(err, FERRY_EINVAL, "tokens: path is NULL");
    char file[300];
    ferryx_printable(path, file, sizeof file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ferry__err(err, FERRY_EIO, "%s: %s", file, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ferry__err(err, FERRY_EIO, "%s: %s", file, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ferry__err(err, FERRY_EINVAL, "%s: not a regular file", file);
    }
    if (st.st_mode & 077) {
        close(fd);
        return ferry__err(err, FERRY_EINVAL,
                          "%s: the group or others may access it (mode %03o): it holds "
                          "secrets, chmod 600 it",
                          file, (unsigned)(st.st_mode & 0777));
    }
    if (st.st_size > FERRY_ADMIN_TOKEN_FILE_MAX) {
        close(fd);
        return ferry__err(err, FERRY_ETOOBIG, "%s: more than %d bytes", file,
                          FERRY_ADMIN_TOKEN_FILE_MAX);
    }
    char *buf = malloc(FERRY_ADMIN_TOKEN_FILE_MAX + 1);
    if (!buf) {
        close(fd);
        return ferry__err(err, FERRY_ENOMEM, "tokens: out of memory");
    }
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, FERRY_ADMIN_TOKEN_FILE_MAX + 1 - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            OPENSSL_cleanse(buf, len);
            free(buf);
            return ferry__err(err, FERRY_EIO, "%s: %s", file, strerror(e));
        }
        if (r == 0) break;
        len += (size_t)r;
        if (len > FERRY_ADMIN_TOKEN_FILE_MAX) break;
    }
    close(fd);
    int rc = ferry_admin_tokens_parse(buf, len, path, out, err);
    OPENSSL_cleanse(buf, len);
    free(buf);
    if (!rc && (*out)->n == 0) {
        ferry_admin_tokens_free(*out);
        *out = NULL;
        return ferry__err(err, FERRY_EINVAL,
                          "%s: holds no token (at least one line NAME SCOPES SECRET is "
                          "needed)",
                          file);
    }
    return rc;
}

size_t ferry_admin_tokens_count(const ferry_admin_tokens *t) {
    return t ? t->n : 0;
}

void ferry_admin_tokens_free(ferry_admin_tokens *t) {
    if (!t) return;
    if (t->items) OPENSSL_cleanse(t->items, t->n * sizeof *t->items);
    free(t->items);
    free(t);
}

ferry_admin_tokens *ferry__admin_tokens_copy(const ferry_admin_tokens *t) {
    ferry_admin_tokens *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (t->n) {
        c->items = malloc(t->n * sizeof *c->items);
        if (!c->items) {
            free(c);
            return NULL;
        }
        memcpy(c->items, t->items, t->n * sizeof *c->items);
    }
    c->n = t->n;
    return c;
}

/* The token whose secret digests to d, or NULL; looks at every token whatever matches. */
static const admin_token *find_token(const ferry_admin_tokens *t, const unsigned char d[32]) {
    const admin_token *found = NULL;
    for (size_t i = 0; i < t->n; i++) {
        int eq = CRYPTO_memcmp(t->items[i].digest, d, 32) == 0;
        if (eq) found = &t->items[i];
    }
    return found;
}

static const char *scope_name(int scope) {
    return scope == FERRY__ADMIN_SCOPE_REDRIVE ? "redrive"
           : scope == FERRY__ADMIN_SCOPE_ACT   ? "act"
                                               : "read";
}

int ferry__admin_authorize(admin_request *ar, struct MHD_Connection *c, char *msg, size_t cap,
                           int *challenge) {
    ferry_admin_server *s = ar->srv;
    int need = ar->route->scope;
    *challenge = 0;
    snprintf(ar->actor, sizeof ar->actor, "anonymous");
    if (need == FERRY__ADMIN_SCOPE_NONE) return 0;
    int action = need & (FERRY__ADMIN_SCOPE_ACT | FERRY__ADMIN_SCOPE_REDRIVE);
    int open_read = !action && !s->require_read_token;
    if (action && !s->tokens) {
        snprintf(ar->actor, sizeof ar->actor, "unknown");
        snprintf(msg, cap, "no token file: actions are disabled");
        return 403;
    }
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h) {
        if (open_read) return 0;
        snprintf(ar->actor, sizeof ar->actor, "unknown");
        snprintf(msg, cap, "this endpoint needs a token (Authorization: Bearer TOKEN)");
        *challenge = 1;
        return 401;
    }
    snprintf(ar->actor, sizeof ar->actor, "unknown");
    if (strncasecmp(h, "Bearer ", 7) != 0) {
        snprintf(msg, cap, "the Authorization header must be \"Bearer TOKEN\"");
        *challenge = 1;
        return 401;
    }
    const char *secret = h + 7;
    while (*secret == ' ')
        secret++;
    size_t n = strlen(secret);
    while (n && (secret[n - 1] == ' ' || secret[n - 1] == '\t'))
        n--;
    unsigned char d[32];
    SHA256((const unsigned char *)secret, n, d);
    const admin_token *tok = s->tokens ? find_token(s->tokens, d) : NULL;
    OPENSSL_cleanse(d, sizeof d);
    if (!tok) {
        snprintf(msg, cap, "the token is not valid");
        *challenge = 1;
        return 401;
    }
    snprintf(ar->actor, sizeof ar->actor, "%s", tok->name);
    if ((tok->scopes & need) != need) {
        snprintf(msg, cap, "token \"%s\" does not have the scope \"%s\"", tok->name,
                 scope_name(need));
        return 403;
    }
    return 0;
}
