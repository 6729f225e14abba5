/* ui.c - the dashboard's files: every file of src/admin/assets, embedded in the binary at
 * build time (cmake/embed_assets.cmake), served at GET /ui/<file> and, for index.html, at
 * GET /. Open (the files hold no data: the page asks the API for everything, with the
 * user's token). A file is found by its exact name in the embedded table, so no path can
 * reach anything else ("..", "%2e%2e", "%2F" are just names that are not there: 404).
 *
 * Every answer carries the dashboard's security headers: a Content-Security-Policy that
 * allows only the server's own scripts, styles, images and fonts and no framing, no
 * referrer, nosniff, and Cache-Control: no-cache with an ETag (the SHA-256 of the bytes),
 * so a browser revalidates each load and gets 304 when the file did not change. */
#include <stdio.h>
#include <string.h>

#include "admin/framework.h"

#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src "        \
    "'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const ferry__admin_asset *asset_find(const char *name) {
    for (size_t i = 0; i < ferry__admin_assets_count; i++)
        if (strcmp(ferry__admin_assets[i].name, name) == 0) return &ferry__admin_assets[i];
    return NULL;
}

/* Does If-None-Match (a list of entity tags, or "*") name etag? */
static int etag_matches(const char *inm, const char *etag) {
    if (!inm) return 0;
    size_t n = strlen(etag);
    for (const char *p = inm; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p) break;
        if (*p == '*') return 1;
        if (p[0] == 'W' && p[1] == '/') p += 2; /* a weak comparison is what GET needs */
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')) return 1;
        while (*p && *p != ',')
            p++;
    }
    return 0;
}

static int serve_asset(ferry__admin_req *r, ferry__admin_resp *out, const char *name) {
    const ferry__admin_asset *a = asset_find(name);
    if (!a) {
        if (strcmp(name, "index.html") == 0)
            return ferry__admin_fail(out, 404,
                                     "the dashboard is not built into this binary (no "
                                     "src/admin/assets/index.html at build time)");
        return ferry__admin_fail(out, 404, "no such dashboard file");
    }
    const char *const headers[][2] = {
        {"Content-Security-Policy", UI_CSP},
        {"Cache-Control", "no-cache"},
        {"ETag", a->etag},
    };
    int fresh = etag_matches(ferry__admin_header(r, "If-None-Match"), a->etag);
    return ferry__admin_static_answer(r, out, fresh ? 304 : 200, a->data, a->len, a->content_type,
                                      headers, sizeof headers / sizeof headers[0]);
}

/* GET / */
static int ui_index(ferry__admin_req *r, ferry__admin_resp *out) {
    return serve_asset(r, out, "index.html");
}

/* GET /ui/{file} and /ui/{dir}/{file} */
static int ui_file(ferry__admin_req *r, ferry__admin_resp *out) {
    char name[2 * FERRY_JOB_ID_MAX + 2];
    if (r->nparams == 2)
        snprintf(name, sizeof name, "%s/%s", r->params[0], r->params[1]);
    else
        snprintf(name, sizeof name, "%s", r->params[0]);
    return serve_asset(r, out, name);
}

const ferry__admin_route ferry__admin_routes_ui[] = {
    {"GET", "/", FERRY__ADMIN_SCOPE_NONE, ui_index},
    {"GET", "/ui/{}", FERRY__ADMIN_SCOPE_NONE, ui_file},
    {"GET", "/ui/{}/{}", FERRY__ADMIN_SCOPE_NONE, ui_file},
    {NULL, NULL, 0, NULL},
};
