/* util.h - checked number parsing and clocks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/macro.h"

/* Whole-string decimal parse; -EINVAL on junk or empty, -ERANGE on overflow. Never atoi. */
int parse_int64(const char *s, int64_t *ret) _must_check_;

/* Wall clock, seconds since the epoch (for expires_at values shown to users and programs). */
int64_t now_unix(void);

/* Monotonic clock in milliseconds (for timeouts). */
int64_t now_mono_ms(void);

/* Whether s is a valid environment-style name: [A-Za-z_][A-Za-z0-9_]*. */
bool name_is_valid(const char *s);

/* Writes all n bytes to fd, retrying on EINTR and short writes. -errno on failure. */
int write_full(int fd, const void *p, size_t n);
