/* registry.c - contracts by job name and schemaVersion: loading a schema file or a directory
 * of them, the lookup rules of docs/contracts.md, the one-line reasons a refused job fails
 * with, and the adapter for ferry_worker_options.check. Immutable once filled, so checks
 * take no lock. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "contract/contract_internal.h"
#include "ferry/queue.h"
#include "util/error.h"
#include "util/printable.h"

typedef struct centry {
    char *name;
    char *version; /* NULL: the job name's own contract */
    ferry_contract *c;
} centry;

struct ferry_contracts {
    centry *e; /* sorted by name, then version (NULL first) */
    size_t n, cap;
};

/* ---- one file ------------------------------------------------------------------------ */

int ferry_contract_load(const char *path, ferry_contract **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return ferry__err(err, FERRY_EINVAL, "contract: NULL argument");
    char shown[512];
    ferryx_printable(path, shown, sizeof shown);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ferry__err(err, FERRY_EIO, "contract %s: cannot open: %s", shown, strerror(errno));
    size_t cap = FERRY_CONTRACT_SCHEMA_MAX_BYTES + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    n = fread(buf, 1, cap, f);
    int bad = ferror(f);
    fclose(f);
    int rc;
    if (bad)
        rc = ferry__err(err, FERRY_EIO, "contract %s: read error", shown);
    else
        rc = ferry_contract_parse(buf, n, base, out, err); /* n == cap: ETOOBIG there */
    free(buf);
    return rc;
}

/* ---- the registry -------------------------------------------------------------------- */

int ferry_contracts_new(ferry_contracts **out, ferry_error *err) {
    if (!out) return ferry__err(err, FERRY_EINVAL, "contracts: NULL argument");
    *out = calloc(1, sizeof **out);
    if (!*out) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    return 0;
}

void ferry_contracts_free(ferry_contracts *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->e[i].name);
        free(r->e[i].version);
        ferry_contract_free(r->e[i].c);
    }
    free(r->e);
    free(r);
}

static int entry_cmp(const char *name, const char *version, const centry *e) {
    int c = strcmp(name, e->name);
    if (c) return c;
    if (!version || !e->version) return (version != NULL) - (e->version != NULL);
    return strcmp(version, e->version);
}

/* Index of the first entry not below (name, version). */
static size_t lower_bound(const ferry_contracts *r, const char *name, const char *version) {
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_cmp(name, version, &r->e[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ferry_contracts_add(ferry_contracts *r, const char *job_name, const char *version,
                        ferry_contract *c, ferry_error *err) {
    if (!r || !job_name || !c) return ferry__err(err, FERRY_EINVAL, "contracts: NULL argument");
    char shown[160];
    ferryx_printable(job_name, shown, sizeof shown);
    size_t nl = strlen(job_name);
    if (nl == 0 || nl > FERRY_JOB_NAME_MAX)
        return ferry__err(err, FERRY_EINVAL, "contracts: job name \"%s\" must be 1..%d bytes",
                          shown, FERRY_JOB_NAME_MAX);
    if (version && (!*version || strlen(version) > FERRY_CONTRACT_VERSION_MAX))
        return ferry__err(err, FERRY_EINVAL,
                          "contracts: job name \"%s\": schemaVersion must be 1..%d "
                          "bytes (FERRY_CONTRACT_VERSION_MAX)",
                          shown, FERRY_CONTRACT_VERSION_MAX);
    size_t at = lower_bound(r, job_name, version);
    if (at < r->n && entry_cmp(job_name, version, &r->e[at]) == 0) {
        char v[160];
        ferryx_printable(version ? version : "", v, sizeof v);
        return ferry__err(err, FERRY_EINVAL,
                          "contracts: job name \"%s\"%s%s%s has a contract already", shown,
                          version ? " schemaVersion \"" : "", v, version ? "\"" : "");
    }
    if (r->n >= FERRY_CONTRACTS_MAX)
        return ferry__err(err, FERRY_ETOOBIG,
                          "contracts: more than %d contracts (FERRY_CONTRACTS_MAX)",
                          FERRY_CONTRACTS_MAX);
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        centry *e = realloc(r->e, cap * sizeof *e);
        if (!e) return ferry__err(err, FERRY_ENOMEM, "out of memory");
        r->e = e;
        r->cap = cap;
    }
    char *n = strdup(job_name), *v = version ? strdup(version) : NULL;
    if (!n || (version && !v)) {
        free(n);
        free(v);
        return ferry__err(err, FERRY_ENOMEM, "out of memory");
    }
    memmove(&r->e[at + 1], &r->e[at], (r->n - at) * sizeof *r->e);
    r->e[at] = (centry){n, v, c};
    r->n++;
    return 0;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Load one directory entry into r. */
static int load_entry(ferry_contracts *r, const char *dir, const char *shown_dir, const char *file,
                      ferry_error *err) {
    char shown[300];
    ferryx_printable(file, shown, sizeof shown);
    if (!ends_with(file, ".json"))
        return ferry__err(err, FERRY_EINVAL,
                          "contracts %s: %s is not a .json file (a contracts "
                          "directory holds only NAME.json and NAME@VERSION.json)",
                          shown_dir, shown);
    size_t pl = strlen(dir) + strlen(file) + 2;
    char *path = malloc(pl);
    if (!path) return ferry__err(err, FERRY_ENOMEM, "out of memory");
    snprintf(path, pl, "%s/%s", dir, file);
    struct stat st;
    int rc = 0;
    if (stat(path, &st)) {
        rc = ferry__err(err, FERRY_EIO, "contracts %s: %s: %s", shown_dir, shown, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = ferry__err(err, FERRY_EINVAL, "contracts %s: %s is not a regular file", shown_dir,
                        shown);
    }
    char *base = rc ? NULL : strndup(file, strlen(file) - 5);
    if (!rc && !base) rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
    char *version = NULL;
    if (!rc) {
        char *at = strrchr(base, '@');
        if (at) {
            *at = 0;
            version = at + 1;
        }
        if (!*base)
            rc = ferry__err(err, FERRY_EINVAL,
                            "contracts %s: %s: the file name has no job name "
                            "(NAME.json or NAME@VERSION.json)",
                            shown_dir, shown);
        else if (version && !*version)
            rc = ferry__err(err, FERRY_EINVAL,
                            "contracts %s: %s: the file name has an empty "
                            "schemaVersion after '@'",
                            shown_dir, shown);
    }
    ferry_contract *c = NULL;
    if (!rc) rc = ferry_contract_load(path, &c, err);
    if (!rc && (rc = ferry_contracts_add(r, base, version, c, err))) ferry_contract_free(c);
    free(base);
    free(path);
    return rc;
}

int ferry_contracts_load_dir(const char *dir, ferry_contracts **out, ferry_error *err) {
    if (out) *out = NULL;
    if (!dir || !out) return ferry__err(err, FERRY_EINVAL, "contracts: NULL argument");
    char shown[300];
    ferryx_printable(dir, shown, sizeof shown);
    DIR *d = opendir(dir);
    if (!d)
        return ferry__err(err, FERRY_EIO, "contracts %s: cannot open directory: %s", shown,
                          strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue; /* ., .. and hidden files (editors' swap files) */
        if (n >= FERRY_CONTRACTS_MAX) {
            rc = ferry__err(err, FERRY_ETOOBIG,
                            "contracts %s: more than %d entries "
                            "(FERRY_CONTRACTS_MAX)",
                            shown, FERRY_CONTRACTS_MAX);
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **t = realloc(names, cap * sizeof *t);
            if (!t) {
                rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
                break;
            }
            names = t;
        }
        if (!(names[n] = strdup(de->d_name)))
            rc = ferry__err(err, FERRY_ENOMEM, "out of memory");
        else
            n++;
    }
    closedir(d);
    ferry_contracts *r = NULL;
    if (!rc && n == 0) rc = ferry__err(err, FERRY_EINVAL, "no contracts in %s", shown);
    if (!rc) rc = ferry_contracts_new(&r, err);
    if (!rc) {
        qsort(names, n, sizeof *names, name_cmp); /* the same first error on every host */
        for (size_t i = 0; i < n && !rc; i++)
            rc = load_entry(r, dir, shown, names[i], err);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (rc) {
        ferry_contracts_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---- checks -------------------------------------------------------------------------- */

static int reason_set(char *reason, size_t cap, int rc, const char *fmt, ...) FERRY_PRINTF(4, 5);

/* Write the reason, cut with "..." (never inside a UTF-8 sequence) when cap is short. */
static int reason_set(char *reason, size_t cap, int rc, const char *fmt, ...) {
    if (!reason || cap == 0) return rc;
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n;
    if (len >= sizeof buf) len = sizeof buf - 1;
    if (len < cap) {
        memcpy(reason, buf, len + 1);
        return rc;
    }
    if (cap < 4) {
        reason[0] = 0;
        return rc;
    }
    size_t keep = cap - 4;
    while (keep > 0 && ((unsigned char)buf[keep] & 0xC0) == 0x80)
        keep--;
    memcpy(reason, buf, keep);
    memcpy(reason + keep, "...", 4);
    return rc;
}

/* The payload's schemaVersion as text: 1 found (text in out), 0 absent, -1 not usable. */
static int schema_version(const json_t *doc, char *out, size_t cap, size_t *len) {
    json_t *sv = json_is_object(doc) ? json_object_get(doc, "schemaVersion") : NULL;
    if (!sv) return 0;
    if (json_is_string(sv)) {
        *len = json_string_length(sv);
        if (*len >= cap) return 2; /* too long to match any registered version */
        memcpy(out, json_string_value(sv), *len + 1);
        return 1; /* 2: too long to match any registered version */
    }
    if (json_is_integer(sv)) {
        *len = (size_t)snprintf(out, cap, "%lld", (long long)json_integer_value(sv));
        return 1;
    }
    return -1;
}

int ferry_contracts_check(const ferry_contracts *r, const char *job_name, const char *payload,
                          size_t len, char *reason, size_t cap) {
    if (reason && cap) reason[0] = 0;
    if (!r || !job_name)
        return reason_set(reason, cap, FERRY_EINVAL, "contract: no registry or no job name");
    char name[4 * FERRY_JOB_NAME_MAX + 8];
    ferryx_printable(job_name, name, sizeof name);
    size_t lo = lower_bound(r, job_name, NULL), hi = lo;
    while (hi < r->n && !strcmp(r->e[hi].name, job_name))
        hi++;
    if (lo == hi)
        return reason_set(reason, cap, 1, "contract: no contract for job name \"%s\"", name);
    const centry *plain = r->e[lo].version ? NULL : &r->e[lo];
    int versioned = r->e[hi - 1].version != NULL;

    ferry_contract_violation v;
    json_t *doc = NULL;
    int rc = ferry__contract_parse_payload(payload, payload ? len : 0, &doc, &v);
    if (rc == FERRY_ENOMEM) return reason_set(reason, cap, rc, "contract %s: out of memory", name);
    if (rc)
        return !strcmp(v.keyword, "depth")
                   ? reason_set(reason, cap, 1, "contract %s: payload nests deeper than %d levels",
                                name, FERRY_CONTRACT_PAYLOAD_DEPTH_MAX)
                   : reason_set(reason, cap, 1, "contract %s: payload is not JSON", name);

    const centry *use = plain;
    if (versioned) {
        char sv[FERRY_CONTRACT_VERSION_MAX + 1];
        size_t svlen = 0;
        int found = schema_version(doc, sv, sizeof sv, &svlen);
        use = NULL;
        if (found == 0) {
            use = plain;
            if (!use)
                rc = reason_set(reason, cap, 1, "contract %s: payload has no schemaVersion", name);
        } else if (found < 0) {
            rc = reason_set(reason, cap, 1,
                            "contract %s: schemaVersion is neither a string nor an integer", name);
        } else {
            for (size_t i = lo; i < hi && found == 1; i++)
                if (r->e[i].version && strlen(r->e[i].version) == svlen &&
                    !memcmp(r->e[i].version, sv, svlen))
                    use = &r->e[i];
            if (!use) {
                char shown[4 * FERRY_CONTRACT_VERSION_MAX + 8];
                if (found == 1 && memchr(sv, 0, svlen) == NULL && ferryx_printable_clean(sv))
                    rc = reason_set(reason, cap, 1, "contract %s: unknown schemaVersion \"%s\"",
                                    name, ferryx_printable(sv, shown, sizeof shown));
                else
                    rc = reason_set(reason, cap, 1,
                                    "contract %s: unknown schemaVersion (%zu bytes, "
                                    "not shown)",
                                    name, svlen);
            }
        }
    }
    if (use) {
        rc = ferry__contract_validate_value(use->c, doc, &v);
        if (rc == FERRY_ENOMEM) {
            reason_set(reason, cap, rc, "contract %s: out of memory", name);
        } else if (rc) {
            char ver[4 * FERRY_CONTRACT_VERSION_MAX + 8] = "", path[4 * FERRY_CONTRACT_PATH_MAX];
            if (use->version) ferryx_printable(use->version, ver, sizeof ver);
            ferryx_printable(v.path[0] ? v.path : "(root)", path, sizeof path);
            reason_set(reason, cap, 1, "contract %s%s%s: %s: %s", name, use->version ? "@" : "",
                       ver, path, v.keyword);
        }
    }
    json_decref(doc);
    return rc;
}

int ferry_contracts_job_check(const ferry_job *job, char *reason, size_t cap, void *userdata) {
    const char *payload = ferry_job_payload(job);
    return ferry_contracts_check((const ferry_contracts *)userdata, ferry_job_name(job), payload,
                                 payload ? strlen(payload) : 0, reason, cap);
}
