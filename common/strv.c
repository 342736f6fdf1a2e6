/* strv.c - growable vectors of strings. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "credkit/secmem.h"
#include "credkit/strv.h"

static void release_str(char *s, bool secret)
{
    if (secret)
        secure_free(s);
    else
        free(s);
}

int strv_push_take(struct strv *sv, char *s)
{
    if (!s)
        return -ENOMEM;
    if (sv->n + 2 > sv->alloc) {
        size_t alloc = sv->alloc ? sv->alloc * 2 : 8;
        char **v =
            alloc > SIZE_MAX / sizeof(char *) ? NULL : realloc(sv->v, alloc * sizeof(char *));
        if (!v) {
            secure_free(s); /* it may be a secret: the caller cannot know it was not stored */
            return -ENOMEM;
        }
        sv->v = v;
        sv->alloc = alloc;
    }
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
    return 0;
}

int strv_push(struct strv *sv, const char *s)
{
    return strv_push_take(sv, strdup(s));
}

int strv_pushf(struct strv *sv, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -ENOMEM;
    return strv_push_take(sv, s);
}

bool strv_contains(const struct strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0)
            return true;
    return false;
}

char **strv_detach(struct strv *sv)
{
    char **v = sv->v;
    if (!v) {
        v = calloc(1, sizeof(char *));
        if (!v)
            return NULL;
    }
    *sv = (struct strv)STRV_INIT;
    return v;
}

static void release(struct strv *sv, bool secret)
{
    for (size_t i = 0; i < sv->n; i++)
        release_str(sv->v[i], secret);
    free(sv->v);
    *sv = (struct strv)STRV_INIT;
}

void strv_release(struct strv *sv)
{
    release(sv, false);
}

void strv_release_secure(struct strv *sv)
{
    release(sv, true);
}

size_t strv_length(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static void free_vec(char **v, bool secret)
{
    for (size_t i = 0; v && v[i]; i++)
        release_str(v[i], secret);
    free(v);
}

void strv_free(char **v)
{
    free_vec(v, false);
}

void strv_free_secure(char **v)
{
    free_vec(v, true);
}
