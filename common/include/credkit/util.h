/* util.h - checked number parsing and clocks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "credkit/macro.h"

/* Whole-string decimal parse; -EINVAL on junk or empty, -ERANGE on overflow. Never atoi. */
int parse_int64(const char *s, int64_t *ret) _must_check_;

/* The value of the hexadecimal digit c (either case), or -1 when c is not one. */
int hex_digit(char c);

/* Writes v in decimal and a NUL into buf[0..size): the length written, or 0 when it does not fit.
 * The same text as printf's PRIu64/PRId64, without printf's cost (ids on the bridge's hot
 * path). */
size_t fmt_u64(char *buf, size_t size, uint64_t v);
size_t fmt_i64(char *buf, size_t size, int64_t v);

/* Wall clock, seconds since the epoch (for expires_at values shown to users and programs). */
int64_t now_unix(void);

/* Monotonic clock in milliseconds (for timeouts). */
int64_t now_mono_ms(void);

/* Whether s is a valid environment-style name: [A-Za-z_][A-Za-z0-9_]*. */
bool name_is_valid(const char *s);

/* Writes all n bytes to fd, retrying on EINTR and short writes. -errno on failure. */
int write_full(int fd, const void *p, size_t n);
