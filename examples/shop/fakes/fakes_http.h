/* fakes_http.h - shop-fakes' HTTP surface: routing each request of examples/shop/PROTOCOL.md
 * to the fake provider that answers it, with the faults in force applied on the way. */
#ifndef FAKES_HTTP_H
#define FAKES_HTTP_H

#include "ex_httpd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ex_httpd_handler of shop-fakes; userdata is the fakes_state (fakes_state.h).
 * Fills resp: the provider's answer, an injected fault (503, 429 with Retry-After, a slow
 * answer, a dropped connection), 404 for unknown routes and ids, 405 (with Allow) for a
 * method a route does not take, 400 naming the field for a bad body or header.
 * Blocks: up to an injected slow_ms (less when the process is asked to stop).
 * Threads: any number at once (the state locks). */
void fakes_http_handle(const ex_httpd_req *req, ex_httpd_resp *resp, void *userdata);

#ifdef __cplusplus
}
#endif

#endif
