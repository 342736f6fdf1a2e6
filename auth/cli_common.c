/* cli_common.c - what the commands say and how: messages escaped for the terminal, the exit
 * status for an error of the flow, expiries and the sign-in command as users read them */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "credkit/buf.h"
#include "credkit/duration.h"
#include "credkit/log.h"
#include "credkit/textsafe.h"
#include "credkit/util.h"

#include "cli.h"
#include "oauth_config.h"

/* Every message reaches the terminal escaped: why in cli.h */
_printf_(2, 0) void vsay(enum log_level level, const char *fmt, va_list ap)
{
    struct buf raw, esc;
    buf_init_secret(&raw, 64 * 1024);
    buf_init_secret(&esc, 256 * 1024);
    if (buf_vprintf(&raw, fmt, ap) >= 0 && text_escape_append(&esc, raw.data, raw.len) >= 0)
        log_msg(arg_log, level, "%s", buf_str(&esc));
    else
        log_msg(arg_log, level, "%s", "(a message too long to show)");
    buf_release(&esc);
    buf_release(&raw);
}

_printf_(2, 3) void say(enum log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(level, fmt, ap);
    va_end(ap);
}

/* The exit status for an error of the flow (docs/exit-codes.md). */
int exit_for(int r)
{
    switch (r) {
    case AUTH_LOGIN_REQUIRED:
        return EXIT_LOGIN_REQUIRED;
    case AUTH_WANTS_TOKEN:
        return EXIT_WANTS_TOKEN;
    /* the authorization server or the network */
    case -ETIMEDOUT:
    case -ECONNREFUSED:
    case -EHOSTUNREACH:
    case -EPROTO:
    case -EXDEV:
    case -ELOOP:
    case -EPERM:
    case -EBADMSG:
    case -E2BIG:
    case -EACCES:
        return EXIT_SERVER;
    /* what the user configured */
    case -EINVAL:
    case -ENOENT:
        return EXIT_CONFIG;
    /* local: the store (-EUCLEAN), its lock (-ENOLCK), nobody signed in (-ETIME), the rate
     * limit (-EBUSY), an interruption (-ECANCELED) */
    default:
        return EXIT_FAILED;
    }
}

void describe_expiry(int64_t expires_at, char *out, size_t size)
{
    char d[DURATION_BUF_SIZE];
    int64_t left = expires_at - now_unix();
    if (expires_at <= 0)
        (void)snprintf(out, size, "unknown");
    else if (left <= 0)
        (void)snprintf(out, size, "expired");
    else
        (void)snprintf(out, size, "in %s", duration_format(left * 1000, d, sizeof(d)));
}

/* The sign-in command to suggest, as the user would type it: the account named when the
 * entry does not name it itself. */
void signin_command(const struct target_ctx *tc, char *out, size_t size)
{
    bool account = tc->t.label && !(tc->name && tc->oauth && tc->oauth->account &&
                                    strcmp(tc->oauth->account, tc->t.label) == 0);
    (void)snprintf(out, size, "mcp-auth%s%s%s %s%s%s", arg_config ? " --config '" : "",
                   arg_config ? arg_config : "", arg_config ? "'" : "",
                   tc->name ? tc->name : tc->url, account ? " --account " : "",
                   account ? tc->t.label : "");
}
