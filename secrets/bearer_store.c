/* bearer_store.c - the bearer tokens pi-mcp-adapter keeps in the OS keychain (bearer_store.h) */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "credkit/buf.h"
#include "credkit/json.h"
#include "credkit/secmem.h"

#include "bearer_store.h"
#include "keychain.h"

#define RECORD_MAX  (256 * 1024) /* a record put together from its chunks */
#define CHUNKS_MAX  256          /* the adapter's chunks hold 1000 characters each */
#define ACCOUNT_BUF (sizeof("sha256-") + 64)
#define FIX         "run 'pi-mcp-adapter token set %s' (the token on stdin)"

/* "sha256-" and the hex SHA-256 of the server's name: the adapter's account. */
static int account_of(const char *server, char buf[static ACCOUNT_BUF])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(server, strlen(server), md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return -EIO;
    memcpy(buf, "sha256-", 7);
    for (unsigned i = 0; i < n; i++)
        (void)snprintf(buf + 7 + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* json-c keeps its own copies of the strings it parsed: wipe those of an object's members
 * before it is freed (json-c does not). */
static void put_wiped(struct json_object *o)
{
    if (o && json_object_is_type(o, json_type_object)) {
        json_object_object_foreach(o, k, v)
        {
            (void)k;
            if (json_object_is_type(v, json_type_string))
                secure_wipe((char *)(uintptr_t)json_object_get_string(v),
                            (size_t)json_object_get_string_len(v));
        }
    }
    json_object_put(o);
}

static bool is_hex16(const char *s)
{
    if (!s || strlen(s) != 16)
        return false;
    for (size_t i = 0; i < 16; i++)
        if (!strchr("0123456789abcdef", s[i]))
            return false;
    return true;
}

/* A chunked record's manifest {"__piMcpAdapterBearerChunked": 1, "chunkCount": N,
 * "chunkDigest": "16 hex"}: its count and digest, or false when doc is not one. */
static bool manifest_of(struct json_object *doc, int64_t *count, const char **digest)
{
    int64_t mark = 0;
    *digest = json_get_string(doc, "chunkDigest");
    return json_get_int64(doc, "__piMcpAdapterBearerChunked", &mark) && mark == 1 &&
           json_get_int64(doc, "chunkCount", count) && *count > 0 && is_hex16(*digest);
}

/* The chunks the manifest names, put together in out. */
static int read_chunks(const char *server, const char *account, int64_t count, const char *digest,
                       struct buf *out, struct err *e)
{
    if (count > CHUNKS_MAX)
        return err_set(e, -EBADMSG,
                       "the bearer token record of '%s' in pi-mcp-adapter's store has more than %d "
                       "chunks: " FIX,
                       server, CHUNKS_MAX, server);
    for (int64_t i = 0; i < count; i++) {
        char name[ACCOUNT_BUF + 48], *chunk = NULL;
        struct err ke = ERR_INIT;
        (void)snprintf(name, sizeof(name), "%s.chunk.%s.%lld", account, digest, (long long)i);
        int r = keychain_lookup_account(BEARER_STORE_SERVICE, name, &chunk, &ke);
        if (r == -ENOENT)
            return err_set(e, -EBADMSG,
                           "the bearer token record of '%s' in pi-mcp-adapter's store misses a "
                           "chunk: " FIX,
                           server, server);
        if (r < 0)
            return err_set(e, r,
                           "cannot read the bearer token of '%s' from pi-mcp-adapter's store: %s",
                           server, err_msg(&ke));
        r = buf_append(out, chunk, strlen(chunk));
        secure_free(chunk);
        if (r < 0)
            return err_set(e, r, "the bearer token record of '%s' is larger than %d bytes: " FIX,
                           server, RECORD_MAX, server);
    }
    return 0;
}

static int parse_record(const char *text, size_t len, struct json_object **ret)
{
    struct err je = ERR_INIT;
    /* the parser's message may quote the text: it is not kept */
    return json_parse(text, len, RECORD_MAX, ret, &je) < 0 || !*ret ? -EBADMSG : 0;
}

int bearer_store_read(const char *server, const char *url, char **ret, struct err *e)
{
    char account[ACCOUNT_BUF], *payload = NULL, *token = NULL;
    struct json_object *doc = NULL, *rec = NULL;
    struct buf whole;
    struct err ke = ERR_INIT;
    int64_t count = 0;
    const char *digest = NULL;
    int r;

    buf_init_secret(&whole, RECORD_MAX);
    r = account_of(server, account);
    if (r < 0) {
        r = err_set(e, r, "cannot hash the server name '%s'", server);
        goto out;
    }
    r = keychain_lookup_account(BEARER_STORE_SERVICE, account, &payload, &ke);
    if (r == -ENOENT) {
        r = err_set(e, r, "no bearer token is stored for '%s' in pi-mcp-adapter's store: " FIX,
                    server, server);
        goto out;
    }
    if (r < 0) {
        r = err_set(e, r, "cannot read the bearer token of '%s' from pi-mcp-adapter's store: %s",
                    server, err_msg(&ke));
        goto out;
    }
    r = parse_record(payload, strlen(payload), &doc);
    if (r >= 0 && manifest_of(doc, &count, &digest)) {
        r = read_chunks(server, account, count, digest, &whole, e);
        if (r < 0)
            goto out;
        r = parse_record(buf_str(&whole), whole.len, &rec);
    } else if (r >= 0) {
        rec = doc;
        doc = NULL;
    }
    const char *tok = r >= 0 ? json_get_string(rec, "token") : NULL;
    const char *bound = r >= 0 ? json_get_string(rec, "serverUrl") : NULL;
    if (!tok || !bound || !*tok) {
        r = err_set(e, -EBADMSG,
                    "the bearer token record of '%s' in pi-mcp-adapter's store is malformed: " FIX,
                    server, server);
        goto out;
    }
    /* the adapter compares the strings as they are; the URLs are not quoted: one may hold
     * credentials of its own */
    if (strcmp(bound, url) != 0) {
        r = err_set(
            e, -EACCES,
            "the bearer token stored for '%s' in pi-mcp-adapter's store is bound to another "
            "URL than the entry's, and is not sent: " FIX " to bind it to this one",
            server, server);
        goto out;
    }
    token = strdup(tok);
    if (!token) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    *ret = token;
    token = NULL;
    r = 0;
out:
    put_wiped(rec);
    put_wiped(doc);
    buf_release(&whole);
    secure_free(payload);
    return r;
}
