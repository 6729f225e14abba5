/* tls.h - the certificate and key of `ferry serve --tls-cert/--tls-key`: read from their
 * files and checked (PEM, key matching the certificate) before libmicrohttpd gets them, so
 * a bad file is refused with a message naming it. */
#ifndef FERRY_ADMIN_TLS_H
#define FERRY_ADMIN_TLS_H

#include "ferry/common.h"

#define ADMIN_TLS_FILE_MAX (1024 * 1024) /* bytes of a certificate or key file */

typedef struct admin_tls {
    char *cert; /* PEM text, NUL-terminated; NULL: no TLS */
    char *key;
} admin_tls;

/* Both paths NULL: no TLS (0, out stays empty). One without the other, an unreadable file,
 * text that is not PEM, a key that does not match: FERRY_EINVAL naming the file; this
 * libmicrohttpd without TLS: FERRY_ETLS. Blocks: reads the files. */
int ferry__admin_tls_load(const char *cert_file, const char *key_file, admin_tls *out,
                          ferry_error *err);
/* Wipe and free (the key is a secret). */
void ferry__admin_tls_free(admin_tls *t);

#endif
