/* stderr_tail.c - the last lines a server wrote to its stderr, fit to quote in a message */
#include <stdio.h>
#include <string.h>

#include "core/stderr_tail.h"

void stderr_tail_escape_n(char *out, size_t size, const char *s, size_t len)
{
    size_t o = 0, i = 0, max = size - 8;
    for (; i < len && o < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f) {
            (void)snprintf(out + o, 5, "\\x%02x", c);
            o += 4;
        } else {
            out[o++] = (char)c;
        }
    }
    if (i < len) {
        /* cut: never in the middle of a UTF-8 sequence (continuation bytes are 10xxxxxx) */
        while (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0x80)
            o--;
        if (o > 0 && ((unsigned char)out[o - 1] & 0xc0) == 0xc0)
            o--;
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

void stderr_tail_escape(char out[STDERR_TAIL_LINE_BUF], const char *s, size_t len)
{
    stderr_tail_escape_n(out, STDERR_TAIL_LINE_BUF, s, len);
}

void stderr_tail_add(struct stderr_tail *t, const char *line, size_t len)
{
    stderr_tail_escape(t->lines[t->next], line, len);
    t->next = (t->next + 1) % STDERR_TAIL_LINES;
    if (t->n < STDERR_TAIL_LINES)
        t->n++;
}

void stderr_tail_clear(struct stderr_tail *t)
{
    t->n = 0;
    t->next = 0;
}

size_t stderr_tail_count(const struct stderr_tail *t)
{
    return t->n;
}

const char *stderr_tail_at(const struct stderr_tail *t, size_t i)
{
    if (i >= t->n)
        return NULL;
    size_t first = (t->next + STDERR_TAIL_LINES - t->n) % STDERR_TAIL_LINES;
    return t->lines[(first + i) % STDERR_TAIL_LINES];
}

void stderr_tail_log(const struct stderr_tail *t, struct log *log, enum log_level level,
                     const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        log_msg(log, level, "server '%s': stderr%s: %s", name,
                i == 0 ? (t->n > 1 ? " (its last lines)" : " (its last line)") : "",
                stderr_tail_at(t, i));
}
