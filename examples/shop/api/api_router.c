/* api_router.c - shop-api's routes: which handler answers a method and path.
 *   POST /orders                 place an order
 *   GET  /orders/{id}            the order view
 *   POST /orders/{id}/cancel     cancel it
 *   GET  /healthz                {"ok":true} when the database answers
 * Anything else is 404 {"error"}; a known path with another method is 405 with Allow. */
#include "api.h"

#include <string.h>

#define ID_SEGMENT_MAX 128 /* more than any UUID: the handler's 400 names the id */

/* s cut to cap - 1 bytes, with anything but printable ASCII as '?': a path is decoded, so it
 * may hold any byte, and the error text it goes into must stay valid UTF-8. */
static const char *printable(const char *s, char *buf, size_t cap) {
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        buf[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7F ? s[i] : '?';
    buf[i] = '\0';
    return buf;
}

static void not_allowed(ex_httpd_resp *resp, const ex_httpd_req *req, const char *allow) {
    char m[17], p[201];
    ex_httpd_add_header(resp, "Allow", allow);
    ex_httpd_error(resp, 405, NULL, "method %s is not allowed on %s (allowed: %s)",
                   printable(req->method, m, sizeof m), printable(req->path, p, sizeof p), allow);
}

void shop_api_handle(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata) {
    shop_api *api = userdata;
    const char *path = req->path;
    int get = !strcmp(req->method, "GET"), post = !strcmp(req->method, "POST");
    if (!strcmp(path, "/healthz")) {
        if (get)
            shop_api_healthz(api, resp);
        else
            not_allowed(resp, req, "GET");
        return;
    }
    if (!strcmp(path, "/orders")) {
        if (post)
            shop_api_place(api, req, resp);
        else
            not_allowed(resp, req, "POST");
        return;
    }
    if (!strncmp(path, "/orders/", 8)) {
        const char *id = path + 8;
        size_t n = strcspn(id, "/");
        const char *rest = id + n;
        if (n > 0 && (!*rest || !strcmp(rest, "/cancel"))) {
            char seg[ID_SEGMENT_MAX + 1] = ""; /* too long: "", which the handler refuses */
            if (n <= ID_SEGMENT_MAX) {
                memcpy(seg, id, n);
                seg[n] = '\0';
            }
            if (!*rest) {
                if (get)
                    shop_api_get(api, resp, seg);
                else
                    not_allowed(resp, req, "GET");
            } else if (post) {
                shop_api_cancel(api, req, resp, seg);
            } else {
                not_allowed(resp, req, "POST");
            }
            return;
        }
    }
    char m[17], p[201];
    ex_httpd_error(resp, 404, NULL, "no such route: %s %s", printable(req->method, m, sizeof m),
                   printable(path, p, sizeof p));
}
