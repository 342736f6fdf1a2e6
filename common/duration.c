/* duration.c - "1h30m" and friends */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "credkit/duration.h"

int duration_parse(const char *s, int64_t *ret_ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    if (!s || !*s)
        return -EINVAL;
    int64_t total = 0;
    size_t last_unit = 0; /* index + 1 of the previous unit, to enforce decreasing order */
    const char *p = s;
    while (*p) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n > (INT64_MAX - (*p - '0')) / 10)
                return -ERANGE;
            n = n * 10 + (*p - '0');
            p++;
        }
        size_t k;
        int64_t mult;
        if (!*p) {
            /* a bare number is seconds, and only when it stands alone */
            if (p != s + strspn(s, "0123456789"))
                return -EINVAL;
            mult = 1000;
            k = ELEMENTSOF(units);
        } else {
            size_t ulen = strspn(p, "dhms");
            for (k = 0; k < ELEMENTSOF(units); k++)
                if (strlen(units[k].unit) == ulen && strncmp(p, units[k].unit, ulen) == 0)
                    break;
            if (k == ELEMENTSOF(units))
                return -EINVAL;
            if (k + 1 <= last_unit)
                return -EINVAL;
            last_unit = k + 1;
            mult = units[k].ms;
            p += ulen;
        }
        if (n > INT64_MAX / mult || total > INT64_MAX - n * mult)
            return -ERANGE;
        total += n * mult;
    }
    *ret_ms = total;
    return 0;
}

char *duration_format(int64_t ms, char *buf, size_t size)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    if (size == 0)
        return buf;
    buf[0] = 0;
    if (ms <= 0) {
        (void)snprintf(buf, size, "0");
        return buf;
    }
    size_t off = 0;
    for (size_t k = 0; k < ELEMENTSOF(units) && ms > 0; k++) {
        int64_t n = ms / units[k].ms;
        if (n == 0)
            continue;
        ms -= n * units[k].ms;
        int w = snprintf(buf + off, size - off, "%lld%s", (long long)n, units[k].unit);
        if (w < 0 || (size_t)w >= size - off)
            break;
        off += (size_t)w;
    }
    return buf;
}
