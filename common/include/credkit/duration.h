/* duration.h - human durations: "300", "90s", "5m", "8h", "1d", "1h30m", "250ms", "0".
 *
 * A bare number is seconds. Units: ms, s, m, h, d; several may be combined in decreasing
 * order. Negative values, overflow and unknown units are -EINVAL. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "credkit/macro.h"

int duration_parse(const char *s, int64_t *ret_ms) _must_check_;

/* Formats ms as the shortest exact form ("5m", "1h30m", "250ms", "0"). Returns buf. */
char *duration_format(int64_t ms, char *buf, size_t size);

#define DURATION_BUF_SIZE 48
