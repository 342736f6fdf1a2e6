/* base64.c - base64 and base64url, on OpenSSL's block decoder */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "credkit/base64.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64(const void *data, size_t len, const char *alphabet, bool pad)
{
    const unsigned char *in = data;
    if (len > (SIZE_MAX / 4 - 1) * 3)
        return NULL;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        size_t left = len - i;
        uint32_t v = (uint32_t)in[i] << 16;
        if (left > 1)
            v |= (uint32_t)in[i + 1] << 8;
        if (left > 2)
            v |= in[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        if (left > 1)
            out[o++] = alphabet[(v >> 6) & 63];
        else if (pad)
            out[o++] = '=';
        if (left > 2)
            out[o++] = alphabet[v & 63];
        else if (pad)
            out[o++] = '=';
    }
    out[o] = 0;
    return out;
}

char *base64url_encode(const void *data, size_t len)
{
    return b64(data, len, b64_url, false);
}

char *base64_encode(const void *data, size_t len)
{
    return b64(data, len, b64_std, true);
}

char *base64url_decode(const char *s, size_t len, size_t *ret_len)
{
    if (len > 1024 * 1024)
        return NULL;
    /* to the standard alphabet, padded to a multiple of 4, as EVP_DecodeBlock wants */
    size_t padded = (len + 3) / 4 * 4;
    char *std = malloc(padded + 1);
    unsigned char *out = malloc(padded / 4 * 3 + 1);
    if (!std || !out)
        goto fail;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (c == '=' ||
                 !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            goto fail;
        std[i] = c;
    }
    if (len % 4 == 1)
        goto fail;
    memset(std + len, '=', padded - len);
    std[padded] = '\0';
    int n = padded ? EVP_DecodeBlock(out, (const unsigned char *)std, (int)padded) : 0;
    if (n < 0)
        goto fail;
    n -= (int)(padded - len); /* EVP_DecodeBlock counts the padding's zero bytes */
    out[n] = '\0';
    free(std);
    if (ret_len)
        *ret_len = (size_t)n;
    return (char *)out;
fail:
    free(std);
    free(out);
    return NULL;
}
