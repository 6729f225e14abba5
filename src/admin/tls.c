/* tls.c - reading and checking the TLS certificate and key of `ferry serve` with OpenSSL
 * (the same checks GnuTLS will make inside libmicrohttpd, but with a message that names the
 * file and the problem). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "admin/tls.h"
#include "util/error.h"
#include "util/printable.h"

static int slurp(const char *what, const char *path, char **out, ferry_error *err) {
    char shown[300];
    ferryx_printable(path, shown, sizeof shown);
    FILE *f = fopen(path, "rb");
    if (!f) return ferry__err(err, FERRY_EINVAL, "%s %s: %s", what, shown, strerror(errno));
    char *buf = malloc(ADMIN_TLS_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return ferry__err(err, FERRY_ENOMEM, "serve: out of memory");
    }
    size_t n = fread(buf, 1, ADMIN_TLS_FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > ADMIN_TLS_FILE_MAX || n == 0) {
        OPENSSL_cleanse(buf, n);
        free(buf);
        return ferry__err(err, FERRY_EINVAL, "%s %s: %s", what, shown,
                          bad ? "cannot be read"
                          : n ? "larger than 1 MiB"
                              : "empty");
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

int ferry__admin_tls_load(const char *cert_file, const char *key_file, admin_tls *out,
                          ferry_error *err) {
    memset(out, 0, sizeof *out);
    if (!cert_file && !key_file) return 0;
    if (!cert_file || !key_file)
        return ferry__err(err, FERRY_EINVAL,
                          "serve: TLS needs both a certificate and a key file (%s is missing)",
                          cert_file ? "the key" : "the certificate");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return ferry__err(err, FERRY_ETLS, "serve: this libmicrohttpd was built without TLS");
    int rc = slurp("TLS certificate", cert_file, &out->cert, err);
    if (!rc) rc = slurp("TLS key", key_file, &out->key, err);
    if (rc) {
        ferry__admin_tls_free(out);
        return rc;
    }
    char cshown[300], kshown[300];
    ferryx_printable(cert_file, cshown, sizeof cshown);
    ferryx_printable(key_file, kshown, sizeof kshown);
    BIO *cb = BIO_new_mem_buf(out->cert, -1), *kb = BIO_new_mem_buf(out->key, -1);
    X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
    EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
    if (!x)
        rc = ferry__err(err, FERRY_EINVAL, "TLS certificate %s: not a PEM certificate", cshown);
    else if (!k)
        rc = ferry__err(err, FERRY_EINVAL,
                        "TLS key %s: not a PEM private key (or one with a passphrase)", kshown);
    else if (X509_check_private_key(x, k) != 1)
        rc = ferry__err(err, FERRY_EINVAL, "TLS key %s does not match the certificate %s", kshown,
                        cshown);
    ERR_clear_error();
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cb);
    BIO_free(kb);
    if (rc) ferry__admin_tls_free(out);
    return rc;
}

void ferry__admin_tls_free(admin_tls *t) {
    if (t->key) OPENSSL_cleanse(t->key, strlen(t->key));
    free(t->key);
    free(t->cert);
    t->key = t->cert = NULL;
}
