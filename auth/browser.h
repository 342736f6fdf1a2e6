/* browser.h - opening the authorization URL in the user's browser.
 *
 * $BROWSER when set (a command, split on whitespace into its arguments, that receives the URL
 * as its last argument), else xdg-open. Never through a shell, only http(s) URLs. The browser
 * is started detached (its own session, reparented to init, stdin/stdout/stderr on /dev/null)
 * and never waited for: like xdg-open it may return at once or live on, and the flow waits on
 * the loopback listener, not on it. Failing to start it is not fatal for the caller, who
 * always prints the URL as well. */
#pragma once

#include "credkit/err.h"
#include "credkit/macro.h"

/* Starts the browser on url and returns once it has been exec'd (never waits for it).
 * -EINVAL for a non-http(s) URL (or one with spaces or control characters); -ENOENT or -EACCES
 * (with a message naming the command, never the URL) when the command cannot be run; -E2BIG for
 * an oversized $BROWSER. */
int browser_open(const char *url, struct err *e) _must_check_;
