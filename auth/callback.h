/* callback.h - the loopback redirect receiver (RFC 8252 section 7.3), on libmicrohttpd.
 *
 * Listens on 127.0.0.1 only, on an ephemeral port (or a fixed one when a pre-registered
 * redirect URI says so), before the browser is launched. Accepts exactly one valid callback: a
 * GET on the redirect path whose `state` equals the expected one (compared in constant time)
 * and that carries either `code` or `error`. Anything else - another path, another method, a
 * wrong or missing state, a second callback - gets a small failure page (or 404) and is
 * otherwise ignored. The same answer may instead be pasted (callback_paste_from()), and is then
 * checked by the same rules. The server runs in libmicrohttpd's external-poll mode on the caller's
 * thread: no threads are started. Pages are tiny static HTML with no external resources. */
#pragma once

#include <stdint.h>

#include "credkit/err.h"
#include "credkit/macro.h"

#define CALLBACK_PATH "/callback"

struct callback;

struct callback_result {
    char *code; /* secret (secure_free); NULL when the callback carried an error */
    char *state;
    char *iss;               /* RFC 9207; NULL when absent */
    char *error;             /* e.g. "access_denied"; NULL on success */
    char *error_description; /* NULL when absent */
    char *error_uri;         /* NULL when absent */
};

/* Starts listening on 127.0.0.1:port (0: ephemeral). -EADDRINUSE with a message when a fixed
 * port is taken. Caller stops with callback_stop(). */
int callback_start(uint16_t port, struct callback **ret, struct err *e) _must_check_;

/* "http://127.0.0.1:<port>/callback", or the URI callback_set_redirect_uri() set. Borrowed. */
const char *callback_redirect_uri(const struct callback *cb);

/* Makes uri the redirect URI, for a machine the browser reaches through an ingress or a port
 * forward: the listener still binds 127.0.0.1, and a callback (or a pasted address) is taken
 * on uri's path, with uri's authority (or ours) as its Host. uri is http:// or https://, with
 * a host and a path ("/" when none), no query, fragment or user name (-EINVAL otherwise). */
int callback_set_redirect_uri(struct callback *cb, const char *uri, struct err *e) _must_check_;

/* Serves requests until one valid callback arrives, then answers it with the success page (or
 * the failure page for an error callback) and returns 0 with *ret filled, once that page has
 * gone out (bounded: at most about a second more). -ETIMEDOUT after timeout_ms (> 0);
 * -ECANCELED when SIGINT or SIGTERM arrives while waiting: the signal is consumed (the caller's
 * handler does not see it; one the caller blocks or ignores is left alone) and the caller's
 * handlers and mask are restored. Each wait is one authorization request: it accepts one
 * callback for expected_state (use a fresh state for every wait), answers later ones with "410
 * already used" while it runs, and may be followed by another wait on the same server (a retry,
 * e.g. after re-registering a client), for which the earlier state is no longer valid. tick, when not NULL, is called at the start and about once a second
 * with the time left (for a countdown), with SIGINT and SIGTERM blocked. *ret is written only
 * on success; the caller releases it with callback_result_release(). */
int callback_wait(struct callback *cb, const char *expected_state, int64_t timeout_ms,
                  void (*tick)(int64_t remaining_ms, void *userdata), void *userdata,
                  struct callback_result *ret, struct err *e) _must_check_;

/* While callback_wait() runs, also reads fd (standard input: the browser may be on a machine
 * that cannot reach this one) line by line. A line holding the address the browser ended on
 * ("http://127.0.0.1:PORT/callback?code=...&state=...") or only its query is checked exactly
 * as a request to the listener is, by the same function; whichever valid answer comes first
 * wins. A refused line is reported through notify (the message never quotes it: it may hold a
 * code) and the wait goes on; at the end of the input the wait goes on with the listener alone.
 * When fd is a terminal its echo is off while waiting. fd stays the caller's; -1 reads nothing. */
void callback_paste_from(struct callback *cb, int fd,
                         void (*notify)(const char *msg, void *userdata), void *userdata);

void callback_result_release(struct callback_result *r);

/* Stops the server and frees. NULL-safe. */
void callback_stop(struct callback *cb);
