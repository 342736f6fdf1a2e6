/* secmem.c - wiping, constant-time comparison, randomness, no core dumps */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "credkit/secmem.h"

void secure_wipe(void *p, size_t n)
{
    if (p && n)
        OPENSSL_cleanse(p, n);
}

void secure_free(char *s)
{
    if (!s)
        return;
    secure_wipe(s, strlen(s));
    free(s);
}

void secure_free_len(void *p, size_t n)
{
    if (!p)
        return;
    secure_wipe(p, n);
    free(p);
}

bool secure_streq(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) {
        /* still spend time proportional to the input so length is all that leaks */
        (void)CRYPTO_memcmp(a, a, la);
        return false;
    }
    return CRYPTO_memcmp(a, b, la) == 0;
}

int secure_random(void *p, size_t n)
{
    if (n > INT32_MAX)
        return -EINVAL;
    return RAND_bytes(p, (int)n) == 1 ? 0 : -EIO;
}

int secure_random_token(size_t nbytes, char **ret)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if (nbytes == 0 || nbytes > 1024)
        return -EINVAL;
    unsigned char raw[1024];
    int r = secure_random(raw, nbytes);
    if (r < 0)
        return r;
    size_t outlen = (nbytes * 4 + 2) / 3;
    char *out = malloc(outlen + 1);
    if (!out) {
        secure_wipe(raw, nbytes);
        return -ENOMEM;
    }
    size_t o = 0;
    for (size_t i = 0; i < nbytes; i += 3) {
        unsigned v = (unsigned)raw[i] << 16;
        if (i + 1 < nbytes)
            v |= (unsigned)raw[i + 1] << 8;
        if (i + 2 < nbytes)
            v |= raw[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        if (i + 1 < nbytes)
            out[o++] = alphabet[(v >> 6) & 63];
        if (i + 2 < nbytes)
            out[o++] = alphabet[v & 63];
    }
    out[o] = 0;
    secure_wipe(raw, nbytes);
    *ret = out;
    return 0;
}

int secure_harden_process(unsigned long long *ret_core_soft)
{
    /* only the soft limit: programs we run (secrets exec) get theirs back */
    struct rlimit rl;
    if (getrlimit(RLIMIT_CORE, &rl) < 0)
        return -errno;
    if (ret_core_soft)
        *ret_core_soft = (unsigned long long)rl.rlim_cur;
    rl.rlim_cur = 0;
    if (setrlimit(RLIMIT_CORE, &rl) < 0)
        return -errno;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    return 0;
}
