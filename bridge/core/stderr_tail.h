/* stderr_tail.h - the last lines a server wrote to its stderr, fit to quote in a message.
 *
 * A server that fails usually says why on its stderr ("Error: Cannot find module ...",
 * "API_KEY is not set"). The bridge keeps the last STDERR_TAIL_LINES lines of each server in
 * a small ring, each cut at STDERR_TAIL_LINE_MAX bytes (at a character boundary, "..." after)
 * with its control characters written \xHH, so that a report can quote them safely on a
 * terminal: the failure reports of the upstreams (upstream_connect.c) and `mcp-bridge test`
 * (cmd_client.c). An embeddable value: zero it (STDERR_TAIL_INIT); it owns no memory. */
#pragma once

#include <stddef.h>

#include "credkit/log.h"

#define STDERR_TAIL_LINES    5
#define STDERR_TAIL_LINE_MAX 240
#define STDERR_TAIL_LINE_BUF (STDERR_TAIL_LINE_MAX + 8) /* an escape past it, and "..." */

struct stderr_tail {
    char lines[STDERR_TAIL_LINES][STDERR_TAIL_LINE_BUF];
    size_t n;    /* lines held, at most STDERR_TAIL_LINES */
    size_t next; /* where the next one goes */
};

#define STDERR_TAIL_INIT                                                                           \
    {                                                                                              \
        {{0}}, 0, 0                                                                                \
    }

/* Copies the first len bytes of s into out, NUL-terminated: control characters (and DEL) as
 * \xHH, cut after STDERR_TAIL_LINE_MAX bytes of output at a UTF-8 character boundary, with
 * "..." after a cut. */
void stderr_tail_escape(char out[STDERR_TAIL_LINE_BUF], const char *s, size_t len);
/* The same into out of size bytes (at least 16): cut after size - 8 bytes of output. */
void stderr_tail_escape_n(char *out, size_t size, const char *s, size_t len);

/* Keeps one line (not NUL-terminated, without its line end), escaped as above; the oldest one
 * goes when the ring is full. */
void stderr_tail_add(struct stderr_tail *t, const char *line, size_t len);

/* Forgets every line. */
void stderr_tail_clear(struct stderr_tail *t);

/* How many lines are held, and the i-th, oldest first (borrowed; NULL past the end). */
size_t stderr_tail_count(const struct stderr_tail *t);
const char *stderr_tail_at(const struct stderr_tail *t, size_t i);

/* Logs the lines at level, oldest first, one message each: "server 'NAME': stderr (its last
 * lines): LINE" for the first ("(its last line)" when it is the only one), "server 'NAME':
 * stderr: LINE" for the others. Nothing when there are none. */
void stderr_tail_log(const struct stderr_tail *t, struct log *log, enum log_level level,
                     const char *name);
