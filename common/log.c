/* log.c - leveled, redacted messages on stderr */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "credkit/buf.h"
#include "credkit/log.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

struct log {
    char *prog;
    int fd;
    enum log_level level;
    struct redact *redact;
    struct buf errors; /* the error lines written, as written: a --json failure's message */
};

#define LOG_ERRORS_MAX (16u * 1024u)

struct log *log_new(const char *prog, int fd)
{
    struct log *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->prog = strdup(prog);
    l->redact = redact_new();
    if (!l->prog || !l->redact) {
        log_free(l);
        return NULL;
    }
    l->fd = fd;
    l->level = LOG_WARN;
    buf_init(&l->errors, LOG_ERRORS_MAX);
    return l;
}

void log_free(struct log *l)
{
    if (!l)
        return;
    free(l->prog);
    redact_free(l->redact);
    buf_release(&l->errors);
    free(l);
}

void log_set_level(struct log *l, enum log_level level)
{
    l->level = level;
}

enum log_level log_get_level(const struct log *l)
{
    return l->level;
}

/* s[0..len) escaped for the terminal (textsafe.h), but for its line breaks and tabs, which
 * multi-line messages (a server's last lines of stderr) are written with. */
static int escape_keeping_lines(struct buf *out, const char *s, size_t len)
{
    size_t start = 0;
    int r = 0;
    for (size_t i = 0; r >= 0 && i <= len; i++) {
        if (i < len && s[i] != '\n' && s[i] != '\t')
            continue;
        r = text_escape_append(out, s + start, i - start);
        if (r >= 0 && i < len)
            r = buf_append_char(out, s[i]);
        start = i + 1;
    }
    return r;
}

struct redact *log_redact(struct log *l)
{
    return l->redact;
}

const char *log_errors(const struct log *l)
{
    return buf_str(&l->errors);
}

/* Keeps line (redacted and escaped, without the prefix) in l->errors: what passes the cap is
 * cut off, as the first lines say what failed. */
static void keep_error(struct log *l, const char *line, size_t len)
{
    while (len > 0 && line[len - 1] == '\n')
        len--;
    if (l->errors.len > 0 && buf_append_char(&l->errors, '\n') < 0)
        return;
    size_t room = l->errors.max - l->errors.len;
    if (buf_append(&l->errors, line, len < room ? len : room) < 0)
        return; /* out of memory: the message is on stderr all the same */
}

void log_vmsg(struct log *l, enum log_level level, const char *fmt, va_list ap)
{
    if (!l || level > l->level)
        return;
    struct buf raw, out;
    buf_init_secret(&raw, 64 * 1024);
    buf_init(&out, 128 * 1024);
    /* a message too long for its cap still says something rather than nothing */
    if (buf_vprintf(&raw, fmt, ap) < 0 && raw.len == 0 &&
        buf_append_str(&raw, "(message too long)") < 0)
        goto out;
    int r = buf_printf(&out, "%s: %s", l->prog, level == LOG_WARN ? "warning: " : "");
    size_t prefix = out.len;
    if (r >= 0) {
        /* redacted first (a value with a control character must still be found), then
         * escaped: a message quoting a server or a file cannot act on the terminal */
        struct buf red;
        buf_init_secret(&red, 128 * 1024);
        r = redact_apply(l->redact, buf_str(&raw), raw.len, &red);
        if (r >= 0)
            r = escape_keeping_lines(&out, buf_str(&red), red.len);
        buf_release(&red);
    }
    if (r >= 0 && (out.len == 0 || out.data[out.len - 1] != '\n'))
        r = buf_append_char(&out, '\n');
    if (r < 0)
        goto out;
    if (level == LOG_ERROR)
        keep_error(l, out.data + prefix, out.len - prefix);
    /* a log that cannot be written has nowhere to report that either */
    (void)write_full(l->fd, buf_str(&out), out.len);
out:
    buf_release(&raw);
    buf_release(&out);
}

void log_msg(struct log *l, enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(l, level, fmt, ap);
    va_end(ap);
}

bool log_ratelimit_check(struct log_ratelimit *rl, int64_t now, unsigned *ret_suppressed)
{
    if (ret_suppressed)
        *ret_suppressed = 0;
    if (rl->n == 0 || now - rl->start >= rl->window_ms || now < rl->start) {
        rl->start = now;
        rl->n = 0;
    }
    if (rl->n >= rl->burst) {
        if (rl->suppressed < UINT32_MAX)
            rl->suppressed++;
        return false;
    }
    rl->n++;
    if (ret_suppressed)
        *ret_suppressed = rl->suppressed;
    rl->suppressed = 0;
    return true;
}

unsigned log_ratelimit_take(struct log_ratelimit *rl)
{
    unsigned n = rl->suppressed;
    rl->suppressed = 0;
    return n;
}
