/* util.c - checked parsing, clocks, names */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "credkit/util.h"

int parse_int64(const char *s, int64_t *ret)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (errno || *end || end == s || *s == ' ' || *s == '\t' || *s == '+')
        return -EINVAL;
    *ret = (int64_t)v;
    return 0;
}

int64_t now_unix(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t now_mono_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool name_is_valid(const char *s)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_';
        bool digit = *p >= '0' && *p <= '9';
        if (!alpha && !(digit && p != s))
            return false;
    }
    return true;
}

int write_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}
