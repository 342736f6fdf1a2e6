/* macro.h - small compiler helpers shared by every module.
 *
 * _GNU_SOURCE is defined once, by the build (CMakeLists.txt), never in a source file. */
#pragma once

#include <stddef.h>

#define _must_check_   __attribute__((warn_unused_result))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_       __attribute__((unused))
#define _noreturn_     __attribute__((noreturn))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline int negerr_or(int e, int fallback)
{
    return e > 0 ? -e : fallback;
}
