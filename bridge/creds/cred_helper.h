/* cred_helper.h - the credentials provider that asks the suite's helpers (credentials.h):
 * `secrets` for ${NAME}s, `mcp-auth` for OAuth, and an entry's own headersHelper.
 *
 * What an entry needs decides what is asked (docs/helper-protocol.md, "How the bridge asks"):
 *   - every ${NAME} of its url and headers (HTTP), env and args (stdio), bearerToken, and the
 *     name of bearerTokenEnv: one `secrets resolve --json NAME...` (recipe first, then the
 *     bridge's environment); bearerTokenEnv/bearerToken become "Authorization: Bearer <value>";
 *   - "auth": "oauth" or an "oauth" object, or an HTTP server that answered 401 with a Bearer
 *     challenge (unless "auth" is "none" or false): `mcp-auth header --json [--refresh] NAME`;
 *     its exit status 4 is "login required" (-ENOKEY), a state of its own, not a failure;
 *   - "headersHelper": the command, run without a shell (or with one, after '!').
 * The three run side by side; each is a helper process on the loop (helper_proc.h), bounded in
 * time and output. One run at a time per kind: a request that needs what is being fetched waits
 * for that run. Answers are kept in memory only, until their expires_at minus
 * credentials_skew_ms() (an answer without one: until the next reconnect or refusal), and wiped
 * when replaced.
 *
 * When it asks again, by reason: CONNECT uses what is fresh; RECONNECT also asks again what does
 * not say when it expires; UNAUTHORIZED asks everything again (mcp-auth with --refresh);
 * FORBIDDEN (a 403 with error="insufficient_scope") is a step-up: with autoAuth, `mcp-auth
 * login NAME --scope "<granted and challenged scopes>"` and then the new header; without it,
 * -EPERM with a message naming that command. EXPIRING asks what is about to expire.
 *
 * autoAuth: when mcp-auth says a login is required, the provider runs `mcp-auth login NAME`
 * itself (the browser opens through $BROWSER or xdg-open), bounded by the login timeout, and
 * asks for the header again; at most one login at a time, and at most CRED_HELPER_LOGINS_MAX
 * per CRED_HELPER_LOGINS_WINDOW_MS (then "login required", with the reason). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "credkit/err.h"
#include "credkit/log.h"
#include "credkit/macro.h"

#include "creds/credentials.h"
#include "core/loop.h"

#define CRED_HELPER_LOGIN_TIMEOUT_DEFAULT_MS (120 * 1000)
#define CRED_HELPER_LOGINS_MAX               3
#define CRED_HELPER_LOGINS_WINDOW_MS         (10 * 60 * 1000)

struct cred_helper_opts {
    struct loop *loop; /* required */
    struct log *log;   /* required */
    /* What mcp-auth is told: --config PATH when the bridge was given one (NULL: none), and the
     * server (NULL: the entry's name; a URL for an entry given on the command line). Copied. */
    const char *config_path;
    const char *auth_target;
    bool auto_auth;                    /* the entry's "autoAuth", else settings.autoAuth */
    const char *auth_required_message; /* settings.authRequiredMessage (${server}); NULL:
                                        * "sign-in required: run 'mcp-auth NAME'" (messages
                                        * put "server 'NAME': " before it). Copied. */
    int64_t helper_timeout_ms;         /* 0: HELPER_PROC_TIMEOUT_DEFAULT_MS */
    int64_t login_timeout_ms;          /* 0: CRED_HELPER_LOGIN_TIMEOUT_DEFAULT_MS */
};

/* A new provider for one upstream. Caller frees with credentials_provider_free() (or hands it to
 * upstream_opts.credentials). -EINVAL, -ENOMEM. */
int cred_helper_new(const struct cred_helper_opts *opts,
                    struct credentials_provider **ret) _must_check_;

/* The message of "login required" for server name, as the provider words it (authRequiredMessage
 * with ${server} replaced, or the default). Caller frees. NULL on -ENOMEM. */
char *cred_helper_login_message(const struct cred_helper_opts *opts, const char *name);
