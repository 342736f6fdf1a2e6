/* err.c - the human side of an error */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "credkit/err.h"

int err_set(struct err *e, int code, const char *fmt, ...)
{
    if (code >= 0)
        code = -EIO;
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
    if (!e)
        return -EIO;
    char prefix[ERR_MSG_MAX], old[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    (void)snprintf(old, sizeof(old), "%s", err_msg(e));
    /* build "prefix: old" piecewise; truncation at ERR_MSG_MAX is intended */
    size_t n = strlen(prefix);
    if (n > sizeof(e->msg) - 1)
        n = sizeof(e->msg) - 1;
    memcpy(e->msg, prefix, n);
    size_t rest = sizeof(e->msg) - n;
    if (rest > 2) {
        memcpy(e->msg + n, ": ", 2);
        n += 2;
        size_t m = strlen(old);
        if (m > sizeof(e->msg) - 1 - n)
            m = sizeof(e->msg) - 1 - n;
        memcpy(e->msg + n, old, m);
        n += m;
    }
    e->msg[n] = 0;
    if (e->code >= 0)
        e->code = -EIO;
    return e->code;
}

const char *err_msg(const struct err *e)
{
    if (!e)
        return "unknown error";
    if (e->msg[0])
        return e->msg;
    return e->code < 0 ? strerror(-e->code) : "unknown error";
}

void err_clear(struct err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = 0;
}
