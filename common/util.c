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

size_t fmt_u64(char *buf, size_t size, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (n + 1 > size)
        return 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

size_t fmt_i64(char *buf, size_t size, int64_t v)
{
    if (v >= 0)
        return fmt_u64(buf, size, (uint64_t)v);
    if (size < 2)
        return 0;
    /* the magnitude of INT64_MIN does not fit in an int64_t: negate in unsigned */
    size_t n = fmt_u64(buf + 1, size - 1, 0 - (uint64_t)v);
    if (n == 0)
        return 0;
    buf[0] = '-';
    return n + 1;
}

int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
