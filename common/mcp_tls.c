/* mcp_tls.c - "caFile", "clientCert", "clientKey" and "clientKeyPassphrase" of an entry.
 *
 * The key is read once, decrypted, checked against the certificate and re-encoded without a
 * passphrase into a secret buffer, through an OpenSSL secure-memory BIO: every copy is wiped. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "credkit/buf.h"
#include "credkit/file.h"
#include "credkit/mcp_entry.h"
#include "credkit/mcp_field.h"
#include "credkit/mcp_tls.h"
#include "credkit/path.h"
#include "credkit/secmem.h"
#include "credkit/url.h"

/* A path value expanded: ${VAR}s through lookup, a leading "~/" the home directory. Caller
 * frees with secure_free (a reference may have named a secret). */
static int expand_path(const char *tmpl, const char *key, mcp_lookup_fn lookup, void *userdata,
                       char **ret, struct err *e)
{
    char *path = NULL, *home = NULL;
    int r = mcp_expand(tmpl, lookup, userdata, &path, e);
    if (r < 0)
        return err_prefix(e, "\"%s\"", key);
    if (path[0] == '~' && (path[1] == '/' || !path[1])) {
        r = path_home(&home);
        char *p = r >= 0 ? path_join(home, path + 1) : NULL;
        free(home);
        if (!p) {
            secure_free(path);
            return err_set(e, r < 0 ? r : -ENOMEM,
                           "\"%s\" starts with '~' but the home directory is unknown: write the "
                           "full path",
                           key);
        }
        secure_free(path);
        path = p;
    }
    *ret = path;
    return 0;
}

/* "caFile": a path that must be readable now, rather than each request failing later in
 * libcurl's words. */
static int read_ca(struct json_object *raw, struct http_tls *t, struct err *e)
{
    char *tmpl = NULL, *path = NULL;
    int r = mcp_field_string(raw, "caFile", "caFile", MCP_FIELD_NONBLANK, &tmpl, e);
    if (r < 0 || !tmpl)
        goto out;
    r = expand_path(tmpl, "caFile", NULL, NULL, &path, e);
    if (r < 0)
        goto out;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r = err_set(e, -errno, "\"caFile\" '%s': cannot read it: %s", path, strerror(errno));
        goto out;
    }
    (void)close(fd);
    t->ca_file = path;
    path = NULL;
    r = 0;
out:
    free(tmpl);
    free(path);
    return r;
}

static bool is_pem(const struct buf *b)
{
    const char *p = b->data;
    size_t i = 0;
    while (i < b->len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return b->len - i >= 11 && memcmp(p + i, "-----BEGIN ", 11) == 0;
}

/* "clientKey" as PEM text in key (a secret buffer): the value a reference resolved to, or the
 * content of the file it names, which only its owner may read. */
static int read_key_pem(const char *tmpl, mcp_lookup_fn lookup, void *userdata, struct buf *key,
                        struct err *e)
{
    char *v = NULL;
    int r = expand_path(tmpl, "clientKey", lookup, userdata, &v, e);
    if (r < 0)
        return r;
    r = buf_append_str(key, v);
    if (r >= 0 && is_pem(key))
        goto out; /* the key itself, from `secrets` or the environment */
    buf_reset(key);
    if (r >= 0 && strchr(tmpl, '$') && !strchr(v, '/')) {
        /* a reference that gave neither a key nor a path: never quote what it gave */
        r = err_set(e, -EINVAL,
                    "\"clientKey\": the value of its reference is not a PEM private key "
                    "(\"-----BEGIN ...\")");
        goto out;
    }
    if (r >= 0) {
        r = file_read(v, FILE_SECRET, key, e);
        if (r < 0)
            (void)err_prefix(e, "\"clientKey\"");
    }
    if (r >= 0 && !is_pem(key)) {
        buf_reset(key);
        r = err_set(e, -EINVAL, "\"clientKey\" '%s' is not a PEM private key (\"-----BEGIN ...\")",
                    v);
    }
out:
    secure_free(v);
    return r;
}

/* Opens the PEM key with pass (NULL: none), checks that it belongs to cert, and replaces key's
 * content with the key without a passphrase. */
static int open_key(struct buf *key, const char *pass, const struct buf *cert, struct err *e)
{
    BIO *in = BIO_new_mem_buf(key->data, (int)key->len), *out = BIO_new(BIO_s_secmem());
    BIO *cin = BIO_new_mem_buf(cert->data, (int)cert->len);
    EVP_PKEY *pk = NULL;
    X509 *x = NULL;
    char *data = NULL;
    int r;

    if (!in || !out || !cin) {
        r = -ENOMEM;
        goto out;
    }
    /* "" rather than NULL: OpenSSL would otherwise prompt on the terminal for one */
    pk = PEM_read_bio_PrivateKey(in, NULL, NULL, (void *)(pass ? pass : ""));
    if (!pk) {
        r = err_set(e, -EKEYREJECTED,
                    pass ? "\"clientKey\" cannot be opened: a wrong \"clientKeyPassphrase\", or "
                           "not a private key"
                         : "\"clientKey\" cannot be opened: it is not a private key, or it is "
                           "encrypted: set \"clientKeyPassphrase\"");
        goto out;
    }
    x = PEM_read_bio_X509(cin, NULL, NULL, NULL);
    if (!x) {
        r = err_set(e, -EINVAL, "\"clientCert\" holds no PEM certificate");
        goto out;
    }
    if (X509_check_private_key(x, pk) != 1) {
        r = err_set(e, -EKEYREJECTED, "\"clientKey\" is not the key of \"clientCert\"");
        goto out;
    }
    if (PEM_write_bio_PrivateKey(out, pk, NULL, NULL, 0, NULL, NULL) != 1) {
        r = -ENOMEM;
        goto out;
    }
    long n = BIO_get_mem_data(out, &data);
    buf_reset(key); /* wipes: a secret buffer */
    r = n > 0 ? buf_append(key, data, (size_t)n) : -EIO;
out:
    ERR_clear_error();
    EVP_PKEY_free(pk);
    X509_free(x);
    BIO_free(in);
    BIO_free(cin);
    BIO_free(out);
    return r;
}

static int read_cert(struct json_object *raw, const char *cert_tmpl, const char *key_tmpl,
                     const char *server_url, mcp_lookup_fn lookup, void *userdata,
                     struct http_tls *t, struct err *e)
{
    char *path = NULL, *pass_tmpl = NULL, *pass = NULL;
    int r = expand_path(cert_tmpl, "clientCert", NULL, NULL, &path, e);
    if (r < 0)
        goto out;
    r = file_read(path, 0, &t->cert, e);
    if (r < 0) {
        (void)err_prefix(e, "\"clientCert\"");
        goto out;
    }
    r = read_key_pem(key_tmpl, lookup, userdata, &t->key, e);
    if (r < 0)
        goto out;
    r = mcp_field_string(raw, "clientKeyPassphrase", "clientKeyPassphrase", MCP_FIELD_NONBLANK,
                         &pass_tmpl, e);
    if (r >= 0 && pass_tmpl) {
        r = mcp_expand(pass_tmpl, lookup, userdata, &pass, e);
        if (r < 0)
            (void)err_prefix(e, "\"clientKeyPassphrase\"");
    }
    if (r >= 0)
        r = open_key(&t->key, pass, &t->cert, e);
    if (r >= 0)
        r = url_origin(server_url, &t->cert_origin);
out:
    if (r < 0) {
        buf_reset(&t->cert);
        buf_reset(&t->key);
    }
    free(path);
    secure_free(pass_tmpl); /* a passphrase written as it is */
    secure_free(pass);
    return r;
}

int mcp_server_tls(const struct mcp_server *s, const char *server_url, mcp_lookup_fn lookup,
                   void *userdata, struct http_tls *ret, struct err *e)
{
    struct http_tls t;
    char *cert = NULL, *key = NULL;
    int r;

    http_tls_init(&t);
    r = read_ca(s->raw, &t, e);
    if (r >= 0)
        r = mcp_field_string(s->raw, "clientCert", "clientCert", MCP_FIELD_NONBLANK, &cert, e);
    if (r >= 0)
        r = mcp_field_string(s->raw, "clientKey", "clientKey", MCP_FIELD_NONBLANK, &key, e);
    if (r < 0)
        goto out;
    if (!cert != !key) {
        r = err_set(e, -EINVAL, "\"%s\" is set without \"%s\": a client certificate needs both",
                    cert ? "clientCert" : "clientKey", cert ? "clientKey" : "clientCert");
        goto out;
    }
    if (cert)
        r = read_cert(s->raw, cert, key, server_url, lookup, userdata, &t, e);
    if (r < 0)
        goto out;
    http_tls_release(ret);
    *ret = t;
    http_tls_init(&t);
    r = 0;
out:
    http_tls_release(&t);
    free(cert);
    secure_free(key);
    return r;
}
