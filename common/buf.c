/* buf.c - growable byte buffer with a hard cap */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/secmem.h"

void buf_init(struct buf *b, size_t max)
{
    *b = (struct buf){.max = max ? max : BUF_MAX_DEFAULT};
}

void buf_init_secret(struct buf *b, size_t max)
{
    buf_init(b, max);
    b->secret = true;
}

void buf_release(struct buf *b)
{
    if (b->data && b->secret)
        secure_wipe(b->data, b->cap);
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(struct buf *b)
{
    if (b->data) {
        if (b->secret)
            secure_wipe(b->data, b->len);
        b->data[0] = 0;
    }
    b->len = 0;
}

int buf_reserve(struct buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return -E2BIG;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > b->max + 1)
        cap = b->max + 1 > need ? b->max + 1 : need;
    char *n;
    if (b->secret) {
        /* never let realloc leave a copy of a secret behind in freed memory */
        n = malloc(cap);
        if (!n)
            return -ENOMEM;
        if (b->data) {
            memcpy(n, b->data, b->len + 1);
            secure_wipe(b->data, b->cap);
            free(b->data);
        } else {
            n[0] = 0;
        }
    } else {
        n = realloc(b->data, cap);
        if (!n)
            return -ENOMEM;
        if (!b->data)
            n[0] = 0;
    }
    b->data = n;
    b->cap = cap;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    int r = buf_reserve(b, len);
    if (r < 0)
        return r;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_char(struct buf *b, char c)
{
    return buf_append(b, &c, 1);
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return -EINVAL;
    int r = buf_reserve(b, (size_t)n);
    if (r < 0)
        return r;
    (void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

char *buf_detach(struct buf *b)
{
    char *p = b->data;
    if (!p) {
        p = malloc(1);
        if (p)
            p[0] = 0;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

const char *buf_str(const struct buf *b)
{
    return b->data ? b->data : "";
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

void buf_trim(struct buf *b)
{
    if (!b->data)
        return;
    size_t end = b->len;
    while (end > 0 && is_space(b->data[end - 1]))
        end--;
    size_t start = 0;
    while (start < end && is_space(b->data[start]))
        start++;
    size_t n = end - start;
    if (start)
        memmove(b->data, b->data + start, n);
    if (b->secret && b->len > n)
        secure_wipe(b->data + n, b->len - n);
    b->len = n;
    b->data[n] = 0;
}

/* Whether the space-separated list held in b has the word p[0..n). */
static bool has_word(const struct buf *b, const char *p, size_t n)
{
    const char *q = b->data ? b->data : "";
    while (*q) {
        q += strspn(q, " ");
        size_t m = strcspn(q, " ");
        if (m == n && strncmp(q, p, n) == 0)
            return true;
        q += m;
    }
    return false;
}

int buf_append_new_words(struct buf *b, const char *words)
{
    const char *p = words;
    while (p && *p) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        if (!n)
            break;
        if (!has_word(b, p, n)) {
            size_t before = b->len;
            int r = b->len ? buf_append_char(b, ' ') : 0;
            if (r >= 0)
                r = buf_append(b, p, n);
            if (r < 0) {
                b->len = before; /* not a separator without its word */
                if (b->data)
                    b->data[before] = '\0';
                return r;
            }
        }
        p += n;
    }
    return 0;
}
